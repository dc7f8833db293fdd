// Sum of 2^25 doubles on a V100, version 8: version 7's unrolled tree with blocks of 256 threads that each
// add two elements, so 65536 blocks and three passes (ladder.toml).
#include "common.cuh"

// kerncast: grid=65536 block=256 smem=2048 size=33554432
__global__ void dsum_tuned(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * (blockDim.x * 2) + t;
    s[t] = 0.0;
    if (g < size) s[t] = in[g];
    if (g + blockDim.x < size) s[t] += in[g + blockDim.x];
    __syncthreads();
    if (t < 128) s[t] += s[t + 128];
    __syncthreads();
    if (t < 64) s[t] += s[t + 64];
    __syncthreads();
    if (t < 32) tail_volatile(s, t);
    if (t == 0) out[blockIdx.x] = s[0];
}
