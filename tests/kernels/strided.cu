// Strided global accesses: a constant stride of two elements and a stride given by a parameter.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void strideTwo(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[2 * i];  // expect: uncoalesced-global
}

// kerncast: block=256
__global__ void strideParam(const float *in, float *out, int n, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i * cols];  // expect: uncoalesced-global
}

// kerncast: block=256
__global__ void strideTwoDouble(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[2 * i] = in[i];  // expect: uncoalesced-global
}

int main()
{
    const int n = 1 << 20;
    float *a, *b;
    cudaMalloc(&a, 2 * n * sizeof(double));
    cudaMalloc(&b, 2 * n * sizeof(double));
    strideTwo<<<n / 256, 256>>>(a, b, n);
    strideParam<<<n / 256, 256>>>(a, b, n, 8);
    strideTwoDouble<<<n / 256, 256>>>((double *)a, (double *)b, n);
    cudaDeviceSynchronize();
    return 0;
}
