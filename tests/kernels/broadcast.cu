// Broadcast reads: every lane of a warp reads the same word (global and shared); no waste.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void scaleByFirst(const float *in, const float *coef, float *out, int n)
{
    __shared__ float s[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 32) s[threadIdx.x] = coef[threadIdx.x];
    __syncthreads();
    float c = coef[0] + coef[blockIdx.x % 8];
    if (i < n) out[i] = in[i] * c * s[3];
}

int main()
{
    const int n = 1 << 20;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, 64 * sizeof(float));
    scaleByFirst<<<n / 256, 256>>>(a, c, b, n);
    cudaDeviceSynchronize();
    return 0;
}
