// Integer matrix-vector product, version 2: as version 1, with the vector staged in shared memory one
// block-wide segment at a time. Problem of the measurement: 8192 x 8192 unsigned 32-bit matrix, 512
// threads per block, 512 words of dynamic shared memory (see ladder.toml).
// kerncast: grid=16 block=512 smem=2048 m=8192 n=8192
__global__ void matvec_shared_vector(unsigned *out, const unsigned *mat, const unsigned *vec, int m, int n)
{
    extern __shared__ unsigned seg[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    int phases = (n + blockDim.x - 1) / blockDim.x;
    for (int p = 0; p < phases; ++p) {
        int base = p * blockDim.x;
        int e = base + threadIdx.x;
        seg[threadIdx.x] = e < n ? vec[e] : 0u;
        __syncthreads();
        if (i < m)
            for (int k = 0; k < blockDim.x && base + k < n; ++k) acc += mat[i * n + base + k] * seg[k];
        __syncthreads();
    }
    out[i] = acc;
}
