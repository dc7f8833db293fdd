// Twenty small kernels of the shapes real CUDA files hold (element-wise maps, strided and 2-D accesses,
// reductions in shared memory and by warp shuffles, stencils, a histogram), each launched from main so every
// kernel has a known launch.
// The latency benchmarks save this file and time save -> diagnostics against a bare `nvcc -ptx`.
#include <cuda_runtime.h>

#define TILE 32

__global__ void scale(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

__global__ void addVectors(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void fma3(float *d, const float *a, const float *b, const float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = a[i] * b[i] + c[i];
}

__global__ void clampValues(float *x, float lo, float hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fminf(fmaxf(x[i], lo), hi);
}

__global__ void strideCopy(float *out, const float *in, int stride, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i * stride];
}

__global__ void everyOther(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[2 * i];
}

__global__ void rowCopy(float *out, const float *in, int width)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * width + x] = in[y * width + x];
}

__global__ void columnCopy(float *out, const float *in, int width)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    out[x * width + y] = in[x * width + y];
}

__global__ void transposeShared(float *out, const float *in, int width)
{
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * width + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void reduceSum(const float *in, float *out, unsigned n)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

__global__ void reduceWarpShuffle(const float *in, float *out, unsigned n)
{
    __shared__ float warpSums[8];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) warpSums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int w = 0; w < blockDim.x / 32; ++w) sum += warpSums[w];
        atomicAdd(out, sum);
    }
}

__global__ void stencil3(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}

__global__ void histogram(const int *in, unsigned *bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[in[i] & 255], 1u);
}

__global__ void gatherIdx(float *out, const float *in, const int *idx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[idx[i]];
}

__global__ void evenOdd(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (threadIdx.x % 2 == 0) x[i] *= 2.0f;
    else x[i] += 1.0f;
}

__global__ void polyEval(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = ((3.0f * v + 2.0f) * v + 1.0f) * v + 0.5f;
    }
}

__global__ void gridStrideAdd(float *y, const float *x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] += x[i];
}

__global__ void doubleScale(double *y, const double *x, double a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

__global__ void matVecRow(float *y, const float *A, const float *x, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += A[r * cols + c] * x[c];
    y[r] = acc;
}

__global__ void prefixStep(float *out, const float *in, int offset, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i >= offset ? in[i] + in[i - offset] : in[i];
}

int main()
{
    const int n = 1 << 22, width = 2048;
    float *a, *b, *c, *d;
    double *da, *db;
    int *idx;
    unsigned *bins;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(float));
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&da, n * sizeof(double));
    cudaMalloc(&db, n * sizeof(double));
    cudaMalloc(&idx, n * sizeof(int));
    cudaMalloc(&bins, 256 * sizeof(unsigned));
    dim3 block2d(TILE, 8), grid2d(width / TILE, width / 8), tileBlock(TILE, TILE), tileGrid(width / TILE, width / TILE);
    scale<<<n / 256, 256>>>(b, a, 2.0f, n);
    addVectors<<<n / 256, 256>>>(c, a, b, n);
    fma3<<<n / 256, 256>>>(d, a, b, c, n);
    clampValues<<<n / 256, 256>>>(d, 0.0f, 1.0f, n);
    strideCopy<<<n / 1024, 256>>>(b, a, 4, n / 4);
    everyOther<<<n / 512, 256>>>(b, a, n / 2);
    rowCopy<<<grid2d, block2d>>>(b, a, width);
    columnCopy<<<grid2d, block2d>>>(b, a, width);
    transposeShared<<<tileGrid, tileBlock>>>(b, a, width);
    reduceSum<<<n / 256, 256>>>(a, b, n);
    reduceWarpShuffle<<<n / 256, 256>>>(a, b, n);
    stencil3<<<n / 256, 256>>>(b, a, n);
    histogram<<<n / 256, 256>>>(idx, bins, n);
    gatherIdx<<<n / 256, 256>>>(b, a, idx, n);
    evenOdd<<<n / 256, 256>>>(a, n);
    polyEval<<<n / 256, 256>>>(b, a, n);
    // kerncast: loops=16
    gridStrideAdd<<<1024, 256>>>(b, a, n);
    doubleScale<<<n / 256, 256>>>(db, da, 3.0, n);
    // kerncast: loops=2048
    matVecRow<<<width / 128, 128>>>(b, a, c, width, width);
    prefixStep<<<n / 256, 256>>>(b, a, 1, n);
    cudaDeviceSynchronize();
    return 0;
}
