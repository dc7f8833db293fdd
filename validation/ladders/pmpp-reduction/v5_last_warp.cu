// Sum reduction, version 5: as version 4, with the last six steps (stride <= 32) done by one warp through
// volatile shared memory without barriers. (The measured code omits the barrier between the loads and the
// first step; it is kept here, one barrier per block beside two 2^26-element loads.) Passes over 2^26
// unsigned 32-bit values, 512 threads per block (ladder.toml lists every pass).
__device__ void warp_tail(volatile unsigned *p, unsigned t, unsigned block)
{
    if (block >= 64) p[t] += p[t + 32];
    if (block >= 32) p[t] += p[t + 16];
    if (block >= 16) p[t] += p[t + 8];
    if (block >= 8) p[t] += p[t + 4];
    if (block >= 4) p[t] += p[t + 2];
    if (block >= 2) p[t] += p[t + 1];
}

// kerncast: grid=65536 block=512 smem=2048 n=67108864
__global__ void reduce_last_warp(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + t;
    unsigned v = i < n ? x[i] : 0u;
    v += i + blockDim.x < n ? x[i + blockDim.x] : 0u;
    part[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t < 32) warp_tail(part, t, blockDim.x);
    if (t == 0) y[blockIdx.x] = part[0];
}
