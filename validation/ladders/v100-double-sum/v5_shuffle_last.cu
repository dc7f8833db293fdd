// Sum of 2^25 doubles on a V100, version 5: as version 4, the tree stops at 32 partial sums and the first warp
// adds them with shuffles (ladder.toml).
#include "common.cuh"

// kerncast: grid=131072 block=128 smem=1024 size=33554432
__global__ void dsum_shuffle_last(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * (blockDim.x * 2) + t;
    s[t] = g < size ? in[g] : 0.0;
    s[t] += g + blockDim.x < size ? in[g + blockDim.x] : 0.0;
    __syncthreads();
    for (int step = blockDim.x / 2; step >= 32; step >>= 1) {
        if (t < step) s[t] += s[t + step];
        __syncthreads();
    }
    double v = 0.0;
    if (t < 32) v = warp_sum(s[t]);
    if (t == 0) out[blockIdx.x] = v;
}
