// A compute-bound kernel and a copy kernel side by side: the first spends its energy in FP32 arithmetic (a long
// chain of fused multiply-adds on values held in registers), the second in global memory traffic.
#include <cuda_runtime.h>

#define ITERATIONS 4096

__global__ void fmaLoop(const float *in, float *out, float a, float b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    float y = x;
    for (int k = 0; k < ITERATIONS; ++k) {
        x = fmaf(a, x, b);
        y = fmaf(b, y, a);
    }
    out[i] = x + y;
}

__global__ void copy(const float *in, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

int main()
{
    const int n = 1 << 22;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    fmaLoop<<<n / 256, 256>>>(in, out, 0.999f, 0.001f);
    copy<<<n / 256, 256>>>(in, out);
    cudaDeviceSynchronize();
    return 0;
}
