// Summing a row-major matrix: one thread per column walks down the rows (coalesced), one thread per row
// walks along it (each lane a whole row apart: uncoalesced).
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void columnSums(const float *a, float *sums, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) {
        s += a[r * cols + c];
    }
    sums[c] = s;
}

// kerncast: block=256
__global__ void rowSums(const float *a, float *sums, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) {
        s += a[r * cols + c];  // expect: uncoalesced-global
    }
    sums[r] = s;
}

int main()
{
    const int rows = 4096, cols = 4096;
    float *a, *s;
    cudaMalloc(&a, rows * cols * sizeof(float));
    cudaMalloc(&s, rows * sizeof(float));
    columnSums<<<cols / 256, 256>>>(a, s, rows, cols);
    rowSums<<<rows / 256, 256>>>(a, s, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
