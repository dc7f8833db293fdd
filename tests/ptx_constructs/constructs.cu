#include <cuda_runtime.h>
#include <cuda/barrier>

__global__ void tex_fetch(cudaTextureObject_t tex, float4 *out, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    out[y * w + x] = tex2D<float4>(tex, x + 0.5f, y + 0.5f);
}

__global__ void tex_fetch_1d(cudaTextureObject_t tex, float4 *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    out[x] = tex1Dfetch<float4>(tex, x);
}

__global__ void surf_store(cudaSurfaceObject_t surf, const float *in, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    surf2Dwrite(in[y * w + x], surf, x * 4, y);
}

__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__device__ __noinline__ float thrice(float v) { return 3.0f * v; }
typedef float (*unary_fn)(float);

__global__ void indirect_call(float *a, int which) {
    unary_fn f = which ? twice : thrice;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] = f(a[i]);
}

__global__ void scan_pred_pair(int *data) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = data[i];
    for (int d = 1; d < 32; d <<= 1) {
        asm volatile("{\n\t.reg .s32 r0;\n\t.reg .pred p;\n\t"
                     "shfl.sync.up.b32 r0|p, %1, %2, 0, -1;\n\t"
                     "@p add.s32 r0, r0, %1;\n\t"
                     "mov.s32 %0, r0;\n\t}" : "=r"(v) : "r"(v), "r"(d));
    }
    data[i] = v;
}

#if __CUDA_ARCH__ >= 900 || !defined(__CUDA_ARCH__)
__global__ void bulk_copy(const int *src, int *dst) {
    __shared__ alignas(128) int buf[256];
    __shared__ unsigned long long bar;
    if (threadIdx.x == 0) {
        unsigned addr = (unsigned)__cvta_generic_to_shared(&bar);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(1));
        asm volatile("fence.proxy.async.shared::cta;");
        unsigned dst_s = (unsigned)__cvta_generic_to_shared(buf);
        asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst_s), "l"(src + blockIdx.x * 256), "r"(1024), "r"(addr) : "memory");
        unsigned long long state;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(addr), "r"(1024));
    }
    __syncthreads();
    dst[blockIdx.x * 256 + threadIdx.x] = buf[threadIdx.x];
}
#endif
