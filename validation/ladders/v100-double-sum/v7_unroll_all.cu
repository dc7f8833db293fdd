// Sum of 2^25 doubles on a V100, version 7: the block steps written out for a 256-element tree (128 and 64),
// then the unrolled warp of version 6. The measured code launches 128 threads with 128 doubles of shared
// memory, so its first step reads past them; here the launch gives 256 doubles (2 KB instead of 1 KB per
// block, which does not change the occupancy of 128-thread blocks) (ladder.toml).
#include "common.cuh"

// kerncast: grid=131072 block=128 smem=2048 size=33554432
__global__ void dsum_unroll_all(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * (blockDim.x * 2) + t;
    s[t] = g < size ? in[g] : 0.0;
    s[t] += g + blockDim.x < size ? in[g + blockDim.x] : 0.0;
    __syncthreads();
    if (t < 128) s[t] += s[t + 128];
    __syncthreads();
    if (t < 64) s[t] += s[t + 64];
    __syncthreads();
    if (t < 32) tail_volatile(s, t);
    if (t == 0) out[blockIdx.x] = s[0];
}
