// Tensor-core GEMMs: one warp computes one tile of C = A x B, stepping along K. The sizes are fixed so that the
// launch and the work are known: every kernel does 2 * M * N * K FLOPs. Compiled for sm_80 or later.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define M 2048
#define N 2048
#define K 2048
#define WARPS_PER_BLOCK 8

// One warp per TM x TN tile of C: A (M x K, row-major) times B (K x N, column-major), TK at a time. `Elem` is
// the type in memory, `In` the fragments' input type (wmma::precision::tf32 reads floats as TF32).
template <typename Elem, typename In, typename Acc, int TM, int TN, int TK>
__global__ void wmmaGemm(const Elem *a, const Elem *b, Acc *c)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int row = (warp / (N / TN)) * TM;
    int col = (warp % (N / TN)) * TN;
    wmma::fragment<wmma::matrix_a, TM, TN, TK, In, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, TM, TN, TK, In, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, TM, TN, TK, Acc> acc;
    wmma::fill_fragment(acc, Acc(0));
    for (int k = 0; k < K; k += TK) {
        wmma::load_matrix_sync(fa, a + row * K + k, K);
        wmma::load_matrix_sync(fb, b + col * K + k, K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + row * N + col, acc, N, wmma::mem_row_major);
}

// The warp-level mma instruction itself (m16n8k16, f16 inputs, f32 accumulator), on fragments each thread
// loads from its own registers' share of A and B: 16x8 tiles of C, no memory in the loop
__global__ void mmaSync(const unsigned *a, const unsigned *b, float *c)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int lane = threadIdx.x % warpSize;
    unsigned a0 = a[lane], a1 = a[lane + 32], a2 = a[lane + 64], a3 = a[lane + 96];
    unsigned b0 = b[lane], b1 = b[lane + 32];
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    for (int k = 0; k < K; k += 16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    c[warp * 128 + lane * 4] = d0 + d1 + d2 + d3;
}

int main()
{
    half *a, *b;
    float *c, *fa, *fb;
    double *da, *db, *dc;
    cudaMalloc(&a, M * K * sizeof(half));
    cudaMalloc(&b, K * N * sizeof(half));
    cudaMalloc(&c, M * N * sizeof(float));
    cudaMalloc(&fa, M * K * sizeof(float));
    cudaMalloc(&fb, K * N * sizeof(float));
    cudaMalloc(&da, M * K * sizeof(double));
    cudaMalloc(&db, K * N * sizeof(double));
    cudaMalloc(&dc, M * N * sizeof(double));
    // f16 inputs with an f32 accumulator in 16x16x16 products; TF32 in 16x16x8; FP64 in 8x8x4
    wmmaGemm<half, half, float, 16, 16, 16><<<(M / 16) * (N / 16) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(a, b, c);
    wmmaGemm<float, wmma::precision::tf32, float, 16, 16, 8>
        <<<(M / 16) * (N / 16) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(fa, fb, c);
    wmmaGemm<double, double, double, 8, 8, 4><<<(M / 8) * (N / 8) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(da, db, dc);
    mmaSync<<<(M / 16) * (N / 8) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>((unsigned *)a, (unsigned *)b, c);
    cudaDeviceSynchronize();
    return 0;
}
