// Gathers and scatters through loaded indices: the lanes' addresses are unknown, so no warning.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void gather(const float *in, const int *idx, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[idx[i]];
}

// kerncast: block=256
__global__ void scatterAdd(const float *in, const int *idx, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&out[idx[i]], in[i]);
}

int main()
{
    const int n = 1 << 20;
    float *a, *b;
    int *idx;
    cudaMalloc(&idx, n * sizeof(*idx));
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    gather<<<n / 256, 256>>>(a, idx, b, n);
    scatterAdd<<<n / 256, 256>>>(a, idx, b, n);
    cudaDeviceSynchronize();
    return 0;
}
