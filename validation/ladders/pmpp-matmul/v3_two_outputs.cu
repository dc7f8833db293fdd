// Integer matrix product, version 3: as version 2, but each thread computes two outputs of the same row,
// tile-width columns apart, so that every A tile is reused for two B tiles. The measured launch keeps the
// grid of the one-output kernel along x halved only by blockDim.x / 2, i.e. 256 x 128 blocks of which the
// blocks past column 2048 run every phase on zero-filled tiles; it is reproduced as measured. Problem:
// 2048 x 2048 unsigned 32-bit matrices, 16 x 16 threads, 3 x 16 x 16 words of dynamic shared memory.
// kerncast: grid=256,128 block=16,16 smem=3072 rows_a=2048 cols_a=2048 rows_b=2048 cols_b=2048
__global__ void matmul_two_outputs(const unsigned *a, const unsigned *b, unsigned *c, int rows_a, int cols_a,
                                   int rows_b, int cols_b)
{
    extern __shared__ unsigned smem[];
    int w = blockDim.x;
    unsigned *ta = smem;
    unsigned *tb = smem + w * w;  // rows of 2w words written with a row stride of w, as measured
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * w + ty;
    int col = blockIdx.x * w * 2 + tx;
    unsigned acc0 = 0, acc1 = 0;
    int phases = (cols_a + w - 1) / w;
    for (int p = 0; p < phases; ++p) {
        int ka = p * w + tx;
        int kb = p * w + ty;
        ta[ty * w + tx] = (row < rows_a && ka < cols_a) ? a[row * cols_a + ka] : 0u;
        tb[ty * w + tx] = (kb < rows_b && col < cols_b) ? b[kb * cols_b + col] : 0u;
        tb[ty * w + w + tx] = (kb < rows_b && col + w < cols_b) ? b[kb * cols_b + col + w] : 0u;
        __syncthreads();
        for (int k = 0; k < w; ++k) {
            unsigned x = ta[ty * w + k];
            acc0 += x * tb[k * w + tx];
            acc1 += x * tb[k * w + w + tx];
        }
        __syncthreads();
    }
    if (row < rows_a && col < cols_b) c[row * cols_b + col] = acc0;
    if (row < rows_a && col + w < cols_b) c[row * cols_b + col + w] = acc1;
}
