// A translation unit in the style of Rodinia: the types and sizes come first, then the kernel files are
// #included, then main launches them. scale_kernel.cu does not compile on its own.
#include <cuda_runtime.h>

typedef float fp;
#define NUMBER_THREADS 128

#include "scale_kernel.cu"

__global__ void fill(fp *d, long n, fp value)
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        d[i] = value;
    }
}

int main()
{
    const long n = 1 << 13;
    fp *d;
    cudaMalloc(&d, n * sizeof(fp));
    fill<<<(n + 255) / 256, 256>>>(d, n, 1.0f);
    scale<<<n / NUMBER_THREADS, NUMBER_THREADS>>>(d, n, 2.0f);
    cudaDeviceSynchronize();
    return 0;
}
