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
            ya[row] += a[row * COLS + j] * x[j];  // expect: uncoalesced-global
            yb[row] += b[row * COLS + j] * x[j];  // expect: uncoalesced-global
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

int main()
{
    const int rows = 1 << 14;
    float *a, *x, *y;
    cudaMalloc(&a, (size_t)rows * COLS * sizeof(float));
    cudaMalloc(&x, COLS * sizeof(float));
    cudaMalloc(&y, rows * sizeof(float));
    rowDots<<<COLS / 256, 256>>>(a, a, x, y, y, COLS);
    warpLanes<<<rows / 256, 256>>>(x, y);
    cudaFree(a);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
