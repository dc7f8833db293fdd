// Additions nvcc writes as a bitwise or: an aligned row start plus a small offset has no carry.
#include <cuda_runtime.h>

#define COLS 4096

// Each thread walks its own row of two matrices: neighbouring lanes are a row (16 KiB) apart. nvcc unrolls the loop by 4 and
// forms the row start plus the first offsets with `or`, since the row start has its low bits clear.
// kerncast: block=256
__global__ void rowDots(const float *a, const float *b, const float *x, float *ya, float *yb, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        for (int j = 0; j < n; j++) {
            ya[row] += a[row * COLS + j] * x[j];  // expect: uncoalesced-global, shared-tiling
            yb[row] += b[row * COLS + j] * x[j];  // expect: uncoalesced-global, shared-tiling
        }
    }
}

// The warp's first element plus the lane: `(warp << 5) | lane` is the thread's own element, coalesced.
// kerncast: block=256
__global__ void warpLanes(const float *in, float *out)
{
    unsigned lane = threadIdx.x & 31;
    unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned i = (warp << 5) | lane;
    out[i] = 2.0f * in[i];
}

// A block stages a vector in chunks of blockDim.x, the last chunk shortened: the step of `j` depends on `j`
// itself (`len = n - j`), so its value per iteration is unknown but the same in every lane, and the load is
// the chunk's start plus the thread index.
// kerncast: block=256
__global__ void chunkedStage(const float *in, float *out, int n)
{
    extern __shared__ float chunk[];
    int len = blockDim.x;
    float s = 0.0f;
    for (int j = 0; j < n; j += len) {
        if (j + len > n) len = n - j;
        if (threadIdx.x < len) chunk[threadIdx.x] = in[j + threadIdx.x];
        __syncthreads();
        s += chunk[(threadIdx.x + 1) % len];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A transpose by a 64-bit row and column of a 64-bit thread index: nvcc divides in 32 bits when both operands
// fit, in 64 bits otherwise, and joins the two; the quotient is the same on both paths. Neighbouring lanes
// write a column apart.
// kerncast: block=256
__global__ void wideDivide(const signed char *in, signed char *out, long long rows, long long cols)
{
    long long t = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    long long r = t / cols, c = t % cols;
    out[c * rows + r] = in[t];  // expect: uncoalesced-global
}

int main()
{
    const int rows = 1 << 14;
    float *a, *x, *y;
    cudaMalloc(&a, (size_t)rows * COLS * sizeof(float));
    cudaMalloc(&x, COLS * sizeof(float));
    cudaMalloc(&y, rows * sizeof(float));
    rowDots<<<COLS / 256, 256>>>(a, a, x, y, y, COLS);
    warpLanes<<<rows / 256, 256>>>(x, y);
    chunkedStage<<<1, 256, 256 * sizeof(float)>>>(x, y, 1000);
    wideDivide<<<rows / 256, 256>>>((signed char *)x, (signed char *)y, 64, rows / 64);
    cudaFree(a);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
