// shared-tiling: global data that many threads of a block read again. True cases: a naive matrix multiply (A
// read by a block row, B by a block column), a matrix-vector product (x read by the whole block), 1D and 2D
// stencils (overlapping windows, unrolled or in a loop). False cases: the tiled multiply, a grid-stride sum,
// each thread walking its own column, a two-point difference (reuse of 2, left to the L1 cache), a
// copy into shared memory by a quarter of the lanes. The pointers
// are __restrict__, so that the only fixes offered here are the rule's own.
#include <cuda_runtime.h>

#define TILE 16

__global__ void matmulNaive(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k)
            sum += A[row * n + k] * B[k * n + col];  // expect: shared-tiling
        C[row * n + col] = sum;
    }
}

__global__ void matvec(const float *__restrict__ A, const float *__restrict__ x, float *__restrict__ y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k)
            sum += A[row * n + k] * x[k];  // expect: shared-tiling, uncoalesced-global
        y[row] = sum;
    }
}

__global__ void blur3(const float *__restrict__ in, float *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1)
        out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;  // expect: shared-tiling
}

__global__ void laplace2d(const float *__restrict__ in, float *__restrict__ out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < w - 1 && y < h - 1)
        out[y * w + x] = in[(y - 1) * w + x] + in[y * w + x - 1] + in[y * w + x + 1] + in[(y + 1) * w + x]  // expect: shared-tiling
                         - 4.0f * in[y * w + x];
}

__global__ void boxFilter(const float *__restrict__ in, float *__restrict__ out, int n, int radius)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= radius && i < n - radius) {
        float sum = 0.0f;
        for (int r = -radius; r <= radius; ++r)
            sum += in[i + r];  // expect: shared-tiling
        out[i] = sum;
    }
}

__global__ void matmulTiled(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = sum;
}

__global__ void gridSum(const float *__restrict__ a, float *__restrict__ out, int n)
{
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += a[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void columnSums(const float *__restrict__ A, float *__restrict__ sums, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[k * n + col];
    sums[col] = sum;
}

__global__ void difference(const float *__restrict__ in, float *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1)
        out[i] = in[i + 1] - in[i];
}

// Four lanes of each row copy the row's 16 floats into shared memory as float4s, stepping a tile at a time: no
// other thread reads what they load (the other lanes are inactive at the load), so there is nothing to share.
__global__ void quarterCopy(const float *__restrict__ A, float *__restrict__ C, int n)
{
    __shared__ float As[TILE][TILE];
    float sum = 0.0f;
    for (int a = blockIdx.y * TILE * n; a < (blockIdx.y + 1) * TILE * n; a += TILE) {
        if (threadIdx.x < TILE / 4)  // expect: divergent-branch
            *reinterpret_cast<float4 *>(&As[threadIdx.y][threadIdx.x * 4]) =
                *reinterpret_cast<const float4 *>(&A[a + threadIdx.y * n + threadIdx.x * 4]);
        __syncthreads();
        sum += As[threadIdx.y][threadIdx.x];
        __syncthreads();
    }
    C[(blockIdx.y * TILE + threadIdx.y) * n + blockIdx.x * TILE + threadIdx.x] = sum;
}

int main()
{
    const int n = 8192, len = 1 << 24;
    float *a, *b, *c;
    cudaMalloc(&a, sizeof(float) * len);
    cudaMalloc(&b, sizeof(float) * len);
    cudaMalloc(&c, sizeof(float) * len);
    dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
    matmulNaive<<<grid, block>>>(a, b, c, n);
    matvec<<<n / 32, 32>>>(a, b, c, n);
    blur3<<<len / 256, 256>>>(a, c, len);
    laplace2d<<<dim3(n / 32, n / 8), dim3(32, 8)>>>(a, c, n, n);
    boxFilter<<<len / 256, 256>>>(a, c, len, 4);
    matmulTiled<<<grid, block>>>(a, b, c, n);
    gridSum<<<1024, 256>>>(a, c, len);
    columnSums<<<n / 32, 32>>>(a, c, n);
    difference<<<len / 256, 256>>>(a, c, len);
    quarterCopy<<<grid, block>>>(a, c, n);
    cudaDeviceSynchronize();
    return 0;
}
