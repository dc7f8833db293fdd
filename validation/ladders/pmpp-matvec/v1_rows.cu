// Integer matrix-vector product, version 1: one thread per row walks its row of the matrix (lanes of a warp
// read addresses a row apart) and the vector. Problem of the measurement: 8192 x 8192 unsigned 32-bit
// matrix, 512 threads per block (see ladder.toml).
// kerncast: grid=16 block=512 smem=0 m=8192 n=8192
__global__ void matvec_rows(unsigned *out, const unsigned *mat, const unsigned *vec, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    unsigned acc = 0;
    for (int k = 0; k < n; ++k) acc += mat[i * n + k] * vec[k];
    out[i] = acc;
}
