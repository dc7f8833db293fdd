// Unit-stride loads and stores of 4-, 8- and 16-byte elements: every warp request is fully coalesced.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void copyFloat(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// kerncast: block=256
__global__ void copyDouble(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0 * in[i];
}

// kerncast: block=256
__global__ void copyFloat4(const float4 *in, float4 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 v = in[i];
        out[i] = make_float4(v.x + 1.0f, v.y, v.z, v.w);
    }
}

// kerncast: block=256
__global__ void gridStride(const float *in, float *out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        out[i] = in[i] * 3.0f;
    }
}

int main()
{
    const int n = 1 << 20;
    float *a, *b;
    cudaMalloc(&a, n * sizeof(float4));
    cudaMalloc(&b, n * sizeof(float4));
    copyFloat<<<n / 256, 256>>>(a, b, n);
    copyDouble<<<n / 256, 256>>>((double *)a, (double *)b, n);
    copyFloat4<<<n / 256, 256>>>((float4 *)a, (float4 *)b, n);
    gridStride<<<128, 256>>>(a, b, n);
    cudaDeviceSynchronize();
    return 0;
}
