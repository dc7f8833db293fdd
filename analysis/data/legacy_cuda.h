// Kerncast's stand-ins for CUDA runtime APIs that the current toolkit no longer declares.
//
// Code written for CUDA 11 or older often fails to compile with a CUDA 12 or 13 nvcc only because its host code
// calls a removed function, reads a removed cudaDeviceProp field, or declares a texture reference. When nvcc's
// errors are all of that kind, Kerncast compiles the file again with this header force-included (nvcc -include),
// so that its kernels can still be analysed; the report says so, and each removed use stays a warning that names
// its replacement (data/compile_hints.toml). Each section is switched on only for the kind of API the errors name.
//
// What the stand-ins change in the kernels' code: nothing for the first two sections (host code only). A texture
// reference becomes a __constant__ record that holds a texture object, and each legacy fetch reads through that
// object: the kernel then issues the same tex instruction that migrated code issues, after one constant-cache
// load of the object handle. Surface references and the texture reference's C API beyond binding are not stood in
// for; a file that needs them keeps its compile errors.
#pragma once
#include <cuda_runtime.h>

#ifdef KERNCAST_LEGACY_THREAD_FUNCTIONS
// Removed in CUDA 13; each cudaThread* function took the arguments of the cudaDevice* one that replaced it.
#define cudaThreadSynchronize cudaDeviceSynchronize
#define cudaThreadExit cudaDeviceReset
#define cudaThreadSetLimit cudaDeviceSetLimit
#define cudaThreadGetLimit cudaDeviceGetLimit
#define cudaThreadSetCacheConfig cudaDeviceSetCacheConfig
#define cudaThreadGetCacheConfig cudaDeviceGetCacheConfig
#endif

#ifdef KERNCAST_LEGACY_DEVICE_PROPERTIES
// Fields removed from cudaDeviceProp in CUDA 13, added back on a derived record; cudaGetDeviceProperties fills
// the base part. Host code reads them, so their values cannot reach a kernel's code.
struct kerncast_legacy_device_prop : cudaDeviceProp {
    int clockRate;
    int memoryClockRate;
    int computeMode;
    int kernelExecTimeoutEnabled;
    int singleToDoublePrecisionPerfRatio;
    int maxTexture1DLinear;
    int deviceOverlap;
};
#define cudaDeviceProp kerncast_legacy_device_prop
#endif

#ifdef KERNCAST_LEGACY_TEXTURES
// File-scope texture references, removed in CUDA 12.
template <class T>
struct kerncast_normalized_texel {  // what a cudaReadModeNormalizedFloat fetch of an integer texel returns
    typedef float type;
};
#define KERNCAST_NORMALIZED_VECTOR(base, n)                                                                       \
    template <>                                                                                                   \
    struct kerncast_normalized_texel<base##n> {                                                                   \
        typedef float##n type;                                                                                    \
    };
KERNCAST_NORMALIZED_VECTOR(char, 2)
KERNCAST_NORMALIZED_VECTOR(char, 4)
KERNCAST_NORMALIZED_VECTOR(uchar, 2)
KERNCAST_NORMALIZED_VECTOR(uchar, 4)
KERNCAST_NORMALIZED_VECTOR(short, 2)
KERNCAST_NORMALIZED_VECTOR(short, 4)
KERNCAST_NORMALIZED_VECTOR(ushort, 2)
KERNCAST_NORMALIZED_VECTOR(ushort, 4)
#undef KERNCAST_NORMALIZED_VECTOR

template <class T, enum cudaTextureReadMode mode>
struct kerncast_texel {  // the type a fetch returns: the element type, or its normalised float form
    typedef T type;
};
template <class T>
struct kerncast_texel<T, cudaReadModeNormalizedFloat> {
    typedef typename kerncast_normalized_texel<T>::type type;
};

template <class T, int dim = cudaTextureType1D, enum cudaTextureReadMode mode = cudaReadModeElementType>
struct kerncast_texture_reference {  // the fields host code set on a textureReference, and the object it reads
    int normalized;
    enum cudaTextureFilterMode filterMode;
    enum cudaTextureAddressMode addressMode[3];
    struct cudaChannelFormatDesc channelDesc;
    int sRGB;
    cudaTextureObject_t object;
};
#define texture __constant__ kerncast_texture_reference

#define KERNCAST_TEXEL typename kerncast_texel<T, mode>::type
template <class T, int dim, enum cudaTextureReadMode mode>
__device__ KERNCAST_TEXEL tex1Dfetch(const kerncast_texture_reference<T, dim, mode> &ref, int x)
{
    return tex1Dfetch<KERNCAST_TEXEL>(ref.object, x);
}
template <class T, int dim, enum cudaTextureReadMode mode>
__device__ KERNCAST_TEXEL tex1D(const kerncast_texture_reference<T, dim, mode> &ref, float x)
{
    return tex1D<KERNCAST_TEXEL>(ref.object, x);
}
template <class T, int dim, enum cudaTextureReadMode mode>
__device__ KERNCAST_TEXEL tex2D(const kerncast_texture_reference<T, dim, mode> &ref, float x, float y)
{
    return tex2D<KERNCAST_TEXEL>(ref.object, x, y);
}
template <class T, int dim, enum cudaTextureReadMode mode>
__device__ KERNCAST_TEXEL tex3D(const kerncast_texture_reference<T, dim, mode> &ref, float x, float y, float z)
{
    return tex3D<KERNCAST_TEXEL>(ref.object, x, y, z);
}
#undef KERNCAST_TEXEL

// Binding happened on the host, by reference (C++ API) or by pointer (C API); the analysis needs it to compile.
#define KERNCAST_REF const kerncast_texture_reference<T, dim, mode>
#define KERNCAST_HOST_STUB(signature)                                                                             \
    template <class T, int dim, enum cudaTextureReadMode mode>                                                    \
    __host__ cudaError_t signature { return cudaSuccess; }
KERNCAST_HOST_STUB(cudaBindTexture(size_t *, KERNCAST_REF &, const void *, size_t = ~size_t(0)))
KERNCAST_HOST_STUB(cudaBindTexture(size_t *, KERNCAST_REF &, const void *, const cudaChannelFormatDesc &,
                                   size_t = ~size_t(0)))
KERNCAST_HOST_STUB(cudaBindTexture(size_t *, KERNCAST_REF *, const void *, const cudaChannelFormatDesc *,
                                   size_t = ~size_t(0)))
KERNCAST_HOST_STUB(cudaBindTexture2D(size_t *, KERNCAST_REF &, const void *, size_t, size_t, size_t))
KERNCAST_HOST_STUB(cudaBindTexture2D(size_t *, KERNCAST_REF &, const void *, const cudaChannelFormatDesc &,
                                     size_t, size_t, size_t))
KERNCAST_HOST_STUB(cudaBindTexture2D(size_t *, KERNCAST_REF *, const void *, const cudaChannelFormatDesc *,
                                     size_t, size_t, size_t))
KERNCAST_HOST_STUB(cudaBindTextureToArray(KERNCAST_REF &, cudaArray_const_t))
KERNCAST_HOST_STUB(cudaBindTextureToArray(KERNCAST_REF &, cudaArray_const_t, const cudaChannelFormatDesc &))
KERNCAST_HOST_STUB(cudaBindTextureToArray(KERNCAST_REF *, cudaArray_const_t, const cudaChannelFormatDesc *))
KERNCAST_HOST_STUB(cudaUnbindTexture(KERNCAST_REF &))
KERNCAST_HOST_STUB(cudaUnbindTexture(KERNCAST_REF *))
#undef KERNCAST_HOST_STUB
#undef KERNCAST_REF
#endif
