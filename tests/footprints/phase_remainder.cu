// A matrix-vector product that stages the vector in shared memory one block-wide segment at a time: each phase's
// inner loop runs min(blockDim.x, n - base) steps, which nvcc unrolls by 4 and follows with a remainder of up to
// three steps, tested once per phase. A block of a multiple of 4 threads over a multiple of it never runs that
// remainder; another block size, or an n whose last segment is short, does.
// kerncast: grid=32 block=128 smem=512 m=4096 n=4096
__global__ void phased_rows(unsigned *out, const unsigned *mat, const unsigned *vec, int m, int n)
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
