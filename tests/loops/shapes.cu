// Loop shapes of current CUDA code whose trip counts Kerncast reads from nvcc's PTX, each launched with
// known sizes so that every count is determined by the launch.
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

// One warp per row; its lanes stride over the row (a softmax or layernorm over a vocabulary of C entries).
__global__ void laneStrided(const float *in, float *out, int C)
{
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    float m = -1e30f;
    for (int i = lane; i < C; i += 32) {
        m = fmaxf(m, in[(size_t)row * C + i]);
    }
    out[row * 32 + lane] = m;
}

// The threads of a block stride over one row.
__global__ void blockStrided(const float *in, float *out, int n)
{
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += in[(size_t)blockIdx.x * n + i];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The whole grid strides over the array.
__global__ void gridStride(const float *in, float *out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        out[i] = 2.0f * in[i];
    }
}

// A plain loop nvcc unrolls by 4, with a remainder loop for K % 4.
__global__ void dotRows(const float *a, const float *b, float *c, int K)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) {
        s += a[row * K + k] * b[k];
    }
    c[row] = s;
}

// A 64-bit induction variable and bound.
__global__ void wideCount(const float *in, float *out, size_t n)
{
    float s = 0.0f;
#pragma unroll 1
    for (size_t i = threadIdx.x; i < n; i += 64) {
        s += in[i];
    }
    out[threadIdx.x] = s;
}

// A vectorised tile loader: each K step, the block's threads copy a 64x16 tile with float4 loads, the load
// index computed from threadIdx.x inside the tile loop.
#define TILE_M 64
#define TILE_K 16
__global__ void tiledRows(const float *A, float *C, int K)
{
    __shared__ float4 tile[TILE_M * TILE_K / 4];
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        for (int v = threadIdx.x; v < TILE_M * TILE_K / 4; v += blockDim.x) {
            int r = v / (TILE_K / 4);
            int c = v % (TILE_K / 4);
            tile[v] = reinterpret_cast<const float4 *>(&A[(size_t)(blockIdx.x * TILE_M + r) * K + k0])[c];
        }
        __syncthreads();
        float4 t = tile[threadIdx.x % (TILE_M * TILE_K / 4)];
        s += t.x + t.y + t.z + t.w;
        __syncthreads();
    }
    C[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The tensor-core main loop of a WMMA GEMM: one 16x16 output tile per warp, K / 16 steps.
__global__ void wmmaGemm(const half *A, const half *B, float *C, int M, int N, int K)
{
    int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int warpN = blockIdx.y * blockDim.y + threadIdx.y;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)warpM * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)warpN * 16 * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)warpM * 16 * N + warpN * 16, acc, N, wmma::mem_row_major);
}

// A 1D convolution: nvcc unrolls the mask loop by 4 and tests `j + (w & 3) - w != 0`, not the counter itself.
__global__ void maskedSum(const float *in, const float *mask, float *out, int w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < w; ++j) {
        int at = i - w / 2 + j;
        if (at >= 0 && at < n) s += in[at] * mask[j];
    }
    out[i] = s;
}

// An int counter against a size_t bound: the comparison is on the counter widened to 64 bits.
__global__ void intOverSizeT(const int *in, int *out, size_t n)
{
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) acc += in[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// A block walks a vector in chunks of blockDim.x; the inner bound moves with the chunk, the last one shorter.
__global__ void chunkedDot(const float *a, const float *v, float *out, int n)
{
    float s = 0.0f;
    for (int base = 0; base < n; base += blockDim.x) {
#pragma unroll 1
        for (int k = 0; k < blockDim.x && base + k < n; ++k) s += a[base + k] * v[base + k];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A loop unrolled by hand, four columns a step, then the columns left one at a time: the unrolled loop's test
// reads a counter recomputed from the moved one (col + 3 * blockDim.x), and the remainder starts where it stopped.
__global__ void handUnrolled(const float *in, float *out, int n)
{
    float s = 0.0f;
    int col = threadIdx.x;
    for (; col + 3 * blockDim.x < n; col += 4 * blockDim.x)
        s += in[col] + in[col + blockDim.x] + in[col + 2 * blockDim.x] + in[col + 3 * blockDim.x];
    for (; col < n; col += blockDim.x) s += in[col];
    out[threadIdx.x] = s;
}

// A 16x16 block loads 16 rows of a tile, each thread one pass (`j` from threadIdx.y, below 16, in steps of 16),
// inside a loop over the row: nvcc unrolls the row loop by 4 and peels its remainder into straight code, so the
// main loop starts on one of four paths and its guard (`15 - ty < 48`) jumps past it in every thread.
#define ROWS 16
#define ROW_STEP 16
#define ROW_DIM 128
__global__ void rowPass(const float *pts, float *out)
{
    __shared__ float rows[ROWS * ROW_DIM];
    int tx = threadIdx.x, ty = threadIdx.y, base = ROWS * blockIdx.x;
    if (ty < ROWS)
        for (int d = tx; d < ROW_DIM; d += ROWS)
            for (int j = ty; j < ROWS; j += ROW_STEP) rows[j * ROW_DIM + d] = pts[(base + j) * ROW_DIM + d];
    __syncthreads();
    out[base * ROW_DIM + ty * ROWS + tx] = rows[tx * ROW_DIM + ty];
}

// The same row loop inside a loop over tiles: nvcc unrolls it by 4 and peels its remainder into straight code,
// so the main loop's counter enters on one of four paths, which the branches on the remainder decide per thread.
// In a 16x16 block every thread makes 8 passes (2 of the main loop); in a block of 256 threads in x, threads
// 128 and above make none and threads 80 to 127 only the peeled ones.
__global__ void tileRows(const float *pts, float *out)
{
    __shared__ float tile[ROWS * ROW_DIM];
    int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < 1024; t += ROWS) {
        for (int d = tx; d < ROW_DIM; d += ROWS) tile[ty * ROW_DIM + d] = pts[(t + ty) * ROW_DIM + d];
        __syncthreads();
        acc += tile[(tx % ROWS) * ROW_DIM + ty];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x * blockDim.y + ty * blockDim.x + tx] = acc;
}

__global__ void wideTileRows(const float *pts, float *out)
{
    __shared__ float tile[ROWS * ROW_DIM];
    int tx = threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < 1024; t += ROWS) {
        for (int d = tx; d < ROW_DIM; d += ROWS) tile[d] = pts[t * ROW_DIM + d];
        __syncthreads();
        acc += tile[tx % ROW_DIM];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + tx] = acc;
}

// One pass per thread of a 32-wide block (d from threadIdx.x below 32 in steps of 32) around a loop over rows:
// nvcc tests `d + 32 < 32` as `d < 0`, on a copy of the counter taken at the top of the loop's body.
__global__ void onePassColumns(const float4 *pts, float4 *out)
{
    __shared__ float4 buf[32 * 32];
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int d = tx; d < 32; d += 32)
        for (int j = ty; j < 32; j += 8) buf[j * 32 + (d + j) % 32] = pts[(32 * blockIdx.x + j) * 32 + d];
    __syncthreads();
    out[blockIdx.x * 256 + ty * 32 + tx] = buf[tx * 32 + ty];
}

// A triangular loop nest whose inner bound is a parameter: nvcc emits the nest twice, for n > 0 and for
// n <= 0; with n = 64 from the launch no thread reaches the second copy, whose loops run 0 times.
__global__ void triangle(const float *data, float *sym, int m, int n)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m)
        for (int j2 = j1; j2 < m; j2++) {
            sym[j1 * m + j2] = 0.0f;
            for (int i = 0; i < n; i++) sym[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
        }
}

// A triangular solve in a 16-thread block: the inner loops run i and i + 1 times in pass i of the outer loop,
// which nvcc unrolls by 4; the outer counter reaches the inner bound through a copy taken at the top of the
// outer loop's body (`i = s; s = i + 1`), so the inner count is read at sampled passes from that copy.
__global__ void triangularSolve(float *m)
{
    __shared__ float s[16 * 16];
    int tx = threadIdx.x;
    for (int r = 0; r < 16; r++) s[r * 16 + tx] = m[r * 16 + tx];
    __syncthreads();
    for (int i = 0; i < 15; i++) {
        if (tx > i) {
            for (int j = 0; j < i; j++) s[tx * 16 + i] -= s[tx * 16 + j] * s[j * 16 + i];
            s[tx * 16 + i] /= s[i * 16 + i];
        }
        __syncthreads();
        if (tx > i)
            for (int j = 0; j < i + 1; j++) s[(i + 1) * 16 + tx] -= s[(i + 1) * 16 + j] * s[j * 16 + tx];
        __syncthreads();
    }
    for (int r = 0; r < 16; r++) m[r * 16 + tx] = s[r * 16 + tx];
}

// Each thread of the grid steps a generator as many times as its global index: nvcc unrolls the loop by 4, so
// the main loop runs idx / 4 times (idx - idx % 4 in steps of 4), neither affine in the indices nor the same in
// every block; in 32 blocks of 32 threads warp b runs as long as its lane 31, 8 b + 7 times: 131 on average.
__global__ void perThreadWork(unsigned *state)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = idx;
    for (int i = 0; i < idx; i++) v = (v * 26757677u + 1u) & 0x7fffffffu;
    state[idx] = v;
}

// A kernel with two modes, chosen by a parameter: with mode 0 from the launch no thread reaches the other mode's
// loop, whose bound is loaded from memory; it runs 0 times rather than an assumed count.
__global__ void twoModes(const float *in, const int *len, float *out, int mode)
{
    float acc = 0.0f;
    if (mode == 0) {
        for (int i = threadIdx.x; i < 1024; i += blockDim.x) acc += in[i];
    } else {
        for (int i = 0; i < len[blockIdx.x]; i++) acc += in[blockIdx.x * 1024 + i];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// One digit of a radix sort per launch: the bits of digit `iter` run from 4 iter to 4 (iter + 1), 4 of them
// whatever `iter` is (the host passes its own loop counter, a value the launch does not fold).
__global__ void digitPass(const unsigned *keys, unsigned *flags, int iter)
{
    unsigned key = keys[blockIdx.x * blockDim.x + threadIdx.x], ones = 0;
#pragma unroll 1
    for (int i = 4 * iter; i < 4 * (iter + 1); i++) ones += (key >> i) & 1u;
    flags[blockIdx.x * blockDim.x + threadIdx.x] = ones;
}

int main()
{
    const int C = 50257, rows = 1024, n = 1 << 20, K = 1027;
    float *x, *y;
    half *h;
    cudaMalloc(&x, (size_t)rows * C * sizeof(float));
    cudaMalloc(&y, (size_t)rows * C * sizeof(float));
    cudaMalloc(&h, (size_t)4096 * 4096 * sizeof(half));
    laneStrided<<<rows / 8, 256>>>(x, y, C);
    blockStrided<<<rows, 256>>>(x, y, C);
    gridStride<<<132 * 4, 256>>>(x, y, n);
    dotRows<<<rows / 128, 128>>>(x, y, y, K);
    wideCount<<<1, 64>>>(x, y, (size_t)n);
    tiledRows<<<rows / TILE_M, 128>>>(x, y, 4096);
    maskedSum<<<n / 256, 256>>>(x, y, y, 7, n);
    intOverSizeT<<<1024, 256>>>((int *)x, (int *)y, (size_t)n);
    chunkedDot<<<1, 256>>>(x, x, y, 1000);
    handUnrolled<<<1, 64>>>(x, y, 1000);
    rowPass<<<64, dim3(ROWS, ROWS)>>>(x, y);
    tileRows<<<64, dim3(ROWS, ROWS)>>>(x, y);
    wideTileRows<<<64, 256>>>(x, y);
    onePassColumns<<<64, dim3(32, 8)>>>((const float4 *)x, (float4 *)y);
    triangle<<<4, 256>>>(x, y, 1024, 64);
    triangularSolve<<<1, 16>>>(x);
    perThreadWork<<<32, 32>>>((unsigned *)x);
    twoModes<<<64, 256>>>(x, (const int *)y, y, 0);
    for (int digit = 0; digit < 8; digit++) digitPass<<<64, 256>>>((const unsigned *)x, (unsigned *)y, digit);
    wmmaGemm<<<dim3(4096 / 64, 4096 / 16), dim3(128, 1)>>>(h, h, y, 4096, 4096, 4096);
    cudaFree(x);
    cudaFree(y);
    cudaFree(h);
    return 0;
}
