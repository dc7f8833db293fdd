// Loops whose trip counts come from different places: a constant bound, a kernel parameter known from the
// launch, the block size, and a bound loaded from memory that only an annotation can state.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void fixedSum(const float *in, float *out)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < 32; ++k) {
        s += in[k * blockDim.x + threadIdx.x];
    }
    out[threadIdx.x] = s;
}

__global__ void rowSum(const float *in, float *out, int n)
{
    float s = 0.0f;
    int row = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {
        s += in[row * n + k];
    }
    out[row] = s;
}

__global__ void treeSum(float *data)
{
    float v = data[threadIdx.x];
#pragma unroll 1
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        v += data[threadIdx.x + s];
    }
    data[threadIdx.x] = v;
}

__global__ void ragged(const float *in, const int *lengths, float *out)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < lengths[blockIdx.x]; ++k) {
        s += in[k];
    }
    out[blockIdx.x] = s;
}

int main()
{
    const int n = 1000;
    float *in, *out;
    int *lengths;
    cudaMalloc(&in, n * n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMalloc(&lengths, n * sizeof(int));
    fixedSum<<<n / THREADS, THREADS>>>(in, out);
    rowSum<<<(n + THREADS - 1) / THREADS, THREADS>>>(in, out, n);
    treeSum<<<1, THREADS>>>(out);
    // kerncast: loops=64
    ragged<<<n, 1>>>(in, lengths, out);
    cudaDeviceSynchronize();
    return 0;
}
