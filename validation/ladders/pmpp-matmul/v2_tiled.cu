// Integer matrix product, version 2: square tiles of A and B (tile width = blockDim.x) are staged in shared
// memory, one phase per tile along k. Problem of the measurement: 2048 x 2048 unsigned 32-bit matrices,
// 16 x 16 threads per block, 2 x 16 x 16 words of dynamic shared memory (see ladder.toml).
// kerncast: grid=128,128 block=16,16 smem=2048 rows_a=2048 cols_a=2048 rows_b=2048 cols_b=2048
__global__ void matmul_tiled(const unsigned *a, const unsigned *b, unsigned *c, int rows_a, int cols_a,
                             int rows_b, int cols_b)
{
    extern __shared__ unsigned smem[];
    int w = blockDim.x;
    unsigned *ta = smem;
    unsigned *tb = smem + w * w;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * w + ty;
    int col = blockIdx.x * w + tx;
    unsigned acc = 0;
    int phases = (cols_a + w - 1) / w;
    for (int p = 0; p < phases; ++p) {
        int ka = p * w + tx;
        int kb = p * w + ty;
        ta[ty * w + tx] = (row < rows_a && ka < cols_a) ? a[row * cols_a + ka] : 0u;
        tb[ty * w + tx] = (kb < rows_b && col < cols_b) ? b[kb * cols_b + col] : 0u;
        __syncthreads();
        for (int k = 0; k < w; ++k) acc += ta[ty * w + k] * tb[k * w + tx];
        __syncthreads();
    }
    if (row < rows_a && col < cols_b) c[row * cols_b + col] = acc;
}
