// Sum reduction, version 1: one element per thread into shared memory, then a tree whose active threads
// are those with tid % (2 * stride) == 0 (divergent warps). The measurement runs passes until one value
// is left: 2^26 unsigned 32-bit values, 512 threads per block, 512 words of dynamic shared memory
// (ladder.toml lists every pass).
// kerncast: grid=131072 block=512 smem=2048 n=67108864
__global__ void reduce_interleaved(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] : 0u;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s <<= 1) {
        if (t % (2 * s) == 0) part[t] += t + s < n ? part[t + s] : 0u;
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = part[0];
}
