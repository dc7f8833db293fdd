// Integer matrix product, version 1: one thread per output element walks a row of A and a column of B in
// global memory. Problem of the measurement: 2048 x 2048 unsigned 32-bit matrices, 16 x 16 threads per
// block (see ladder.toml).
// kerncast: grid=128,128 block=16,16 smem=0 rows_a=2048 cols_a=2048 rows_b=2048 cols_b=2048
__global__ void matmul_naive(const unsigned *a, const unsigned *b, unsigned *c, int rows_a, int cols_a,
                             int rows_b, int cols_b)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows_a || col >= cols_b) return;
    unsigned acc = 0;
    for (int k = 0; k < cols_a; ++k) acc += a[row * cols_a + k] * b[k * cols_b + col];
    c[row * cols_b + col] = acc;
}
