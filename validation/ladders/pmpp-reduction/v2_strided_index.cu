// Sum reduction, version 2: as version 1, but thread t works on index 2 * s * t, so the active threads are
// contiguous (no divergence until fewer than 32 remain) and shared-memory accesses become strided.
// Passes over 2^26 unsigned 32-bit values, 512 threads per block (ladder.toml lists every pass).
// kerncast: grid=131072 block=512 smem=2048 n=67108864
__global__ void reduce_strided_index(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] : 0u;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s <<= 1) {
        int k = 2 * s * t;
        if (k < blockDim.x) part[k] += k + s < n ? part[k + s] : 0u;
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = part[0];
}
