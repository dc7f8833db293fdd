// Per-thread arrays: indexed at run time they live in local memory; indexed with constants (an unrolled
// loop) they live in registers; a printf's argument buffer is local memory written only.
#include <cstdio>
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void histogramPerThread(const int *keys, float *out, int n)
{
    float hist[16];
    for (int b = 0; b < 16; ++b) hist[b] = 0.0f;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = i; k < n; k += gridDim.x * blockDim.x) {
        hist[keys[k] & 15] += 1.0f;  // expect: local-memory
    }
    for (int b = 0; b < 16; ++b) out[b * n + i] = hist[b];
}

// kerncast: block=256
__global__ void lookupByKey(const float *in, const int *keys, float *out)
{
    float table[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int b = 0; b < 32; ++b) table[b] = in[b * 4096 + i];
    out[i] = table[keys[i] & 31];  // expect: local-memory
}

// kerncast: block=256
__global__ void sortWindow(const float *in, float *out, int n)
{
    float w[12];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 12; ++k) w[k] = in[(i + k) % n];
    for (int a = 1; a < 12; ++a) {
        float v = w[a];
        int b = a - 1;
        while (b >= 0 && w[b] > v) { w[b + 1] = w[b]; --b; }  // expect: local-memory
        w[b + 1] = v;
    }
    out[i] = w[6];
}

// kerncast: block=256
__global__ void unrolledArray(const float *in, float *out)
{
    float acc[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int b = 0; b < 8; ++b) acc[b] = in[b * 4096 + i];
    float s = 0.0f;
#pragma unroll
    for (int b = 0; b < 8; ++b) s += acc[b] * acc[7 - b];
    out[i] = s;
}

// kerncast: block=256
__global__ void printOnce(const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) printf("first %f of %d\n", in[0], n);
}

// kerncast: block=256
__global__ void scalarsOnly(const float *in, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[i], b = in[i + 4096];
    out[i] = a > b ? a : b;
}

// kerncast: block=256
__global__ void trigOnly(const float *x, float *y, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = sinf(x[i] * k) * cosf(x[i] + k);
}

int main()
{
    int *k;
    float *a, *b;
    int n = 1 << 20;
    cudaMalloc(&k, n * sizeof(int));
    cudaMalloc(&a, 16 * n * sizeof(float));
    cudaMalloc(&b, 16 * n * sizeof(float));
    histogramPerThread<<<n / 256, 256>>>(k, b, n);
    lookupByKey<<<n / 256, 256>>>(a, k, b);
    sortWindow<<<n / 256, 256>>>(a, b, n);
    unrolledArray<<<n / 256, 256>>>(a, b);
    printOnce<<<n / 256, 256>>>(a, n);
    scalarsOnly<<<n / 256, 256>>>(a, b);
    trigOnly<<<n / 256, 256>>>(a, b, 3.0f);
    cudaDeviceSynchronize();
    return 0;
}
