// Sum reduction, version 4: each thread adds two elements a block apart while loading, so half the blocks
// are launched. Passes over 2^26 unsigned 32-bit values, 512 threads per block, grid ceil(n / 1024)
// (ladder.toml lists every pass).
// kerncast: grid=65536 block=512 smem=2048 n=67108864
__global__ void reduce_two_loads(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + t;
    unsigned v = i < n ? x[i] : 0u;
    v += i + blockDim.x < n ? x[i + blockDim.x] : 0u;
    part[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = part[0];
}
