// Tiled single-precision matrix multiply C = A * B (square BLOCK_SIZE tiles in shared memory).
#include <cuda_runtime.h>

#define BLOCK_SIZE 32

template <int TILE>
__global__ void MatrixMulCUDA(float *C, const float *A, const float *B, int wA, int wB)
{
    int bx = blockIdx.x;
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;

    int aBegin = wA * TILE * by;
    int aEnd = aBegin + wA - 1;
    int aStep = TILE;
    int bBegin = TILE * bx;
    int bStep = TILE * wB;

    float Csub = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[TILE][TILE];
        __shared__ float Bs[TILE][TILE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            Csub += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    int c = wB * TILE * by + TILE * bx;
    C[c + wB * ty + tx] = Csub;
}

// A naive multiply for comparison: B is walked down a column by each thread's inner loop.
__global__ void matmulNaive(const float *A, const float *B, float *C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) {
            sum += A[row * n + k] * B[k * n + col];
        }
        C[row * n + col] = sum;
    }
}

int main()
{
    const int n = 1024;
    float *A, *B, *C;
    cudaMalloc(&A, n * n * sizeof(float));
    cudaMalloc(&B, n * n * sizeof(float));
    cudaMalloc(&C, n * n * sizeof(float));
    dim3 threads(BLOCK_SIZE, BLOCK_SIZE);
    dim3 grid(n / threads.x, n / threads.y);
    MatrixMulCUDA<BLOCK_SIZE><<<grid, threads>>>(C, A, B, n, n);
    matmulNaive<<<grid, threads>>>(A, B, C, n);
    cudaDeviceSynchronize();
    return 0;
}
