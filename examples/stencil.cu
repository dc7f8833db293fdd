// A 1D stencil of 2 * RADIUS + 1 points: each thread sums the RADIUS neighbours on either side of its element, so the
// neighbouring threads of a block read overlapping windows of `in` from global memory.
#include <cuda_runtime.h>

#define RADIUS 8
#define BLOCK 256

__global__ void stencil1d(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= RADIUS && i < n - RADIUS) {
        float sum = 0.0f;
        for (int r = -RADIUS; r <= RADIUS; ++r) {
            sum += in[i + r];
        }
        out[i] = sum;
    }
}

int main()
{
    const int n = 1 << 22;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    stencil1d<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n);
    cudaDeviceSynchronize();
    return 0;
}
