// Launches a kernel of its own and one defined in gather.cuh; halve.cuh launches its own kernel.
#include <cuda_runtime.h>

#include "gather.cuh"
#include "halve.cuh"

__global__ void fill(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 1.0f;
    }
}

int main()
{
    const int n = 1 << 20;
    const int stride = 32;
    float *in, *out;
    cudaMalloc(&in, stride * sizeof(float) * n);
    cudaMalloc(&out, sizeof(float) * n);
    fill<<<n / 256, 256>>>(in, n);
    strided_gather<<<n / 128, 128>>>(in, out, n, stride);
    launch_halve(out);
    cudaDeviceSynchronize();
    cudaFree(in);
    cudaFree(out);
    return 0;
}
