// Sum reduction, version 7: each thread accumulates pairs of elements over a grid-stride loop in shared
// memory before the unrolled tree of version 6. The measured launch keeps the grid of version 4
// (ceil(n / 1024) blocks), so every thread runs the loop once. Passes over 2^26 unsigned 32-bit values,
// 512 threads per block (ladder.toml lists every pass).
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
__global__ void reduce_grid_stride(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + t;
    unsigned stride = gridDim.x * (blockDim.x * 2);
    part[t] = 0u;
    while (i < n) {
        part[t] += x[i];
        part[t] += i + blockDim.x < n ? x[i + blockDim.x] : 0u;
        i += stride;
    }
    __syncthreads();
    if (blockDim.x >= 512 && t < 256) part[t] += part[t + 256];
    __syncthreads();
    if (blockDim.x >= 256 && t < 128) part[t] += part[t + 128];
    __syncthreads();
    if (blockDim.x >= 128 && t < 64) part[t] += part[t + 64];
    __syncthreads();
    if (t < 32) warp_tail(part, t, blockDim.x);
    if (t == 0) y[blockIdx.x] = part[0];
}
