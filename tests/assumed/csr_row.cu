// CSR sparse matrix times vector: each thread walks one row, whose length is read from the row pointers, so
// the loop's trip count is data-dependent and stays assumed.
#include <cuda_runtime.h>

__global__ void csrRowSpmv(const int *rowPtr, const int *cols, const float *vals, const float *x, float *y,
                           int rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float s = 0.0f;
    for (int j = rowPtr[row]; j < rowPtr[row + 1]; ++j) {
        s += vals[j] * x[cols[j]];
    }
    y[row] = s;
}

int main()
{
    const int rows = 1 << 16;
    int *rowPtr, *cols;
    float *vals, *x, *y;
    cudaMalloc(&rowPtr, (rows + 1) * sizeof(int));
    cudaMalloc(&cols, 16 * rows * sizeof(int));
    cudaMalloc(&vals, 16 * rows * sizeof(float));
    cudaMalloc(&x, rows * sizeof(float));
    cudaMalloc(&y, rows * sizeof(float));
    csrRowSpmv<<<rows / 256, 256>>>(rowPtr, cols, vals, x, y, rows);
    cudaDeviceSynchronize();
    return 0;
}
