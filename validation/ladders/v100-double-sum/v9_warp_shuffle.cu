// Sum of 2^25 doubles on a V100, version 9: each warp sums its two loads per lane with shuffles, the eight
// warp sums meet in shared memory and the first warp adds them with shuffles; 256 threads, three passes
// (ladder.toml).
#include "common.cuh"

// kerncast: grid=65536 block=256 smem=0 size=33554432
__global__ void dsum_warp_shuffle(const double *in, int size, double *out)
{
    __shared__ double per_warp[8];
    int t = threadIdx.x;
    int lane = t % 32, warp = t / 32;
    int g = blockIdx.x * (blockDim.x * 2) + t;
    double v = g < size ? in[g] : 0.0;
    v += g + blockDim.x < size ? in[g + blockDim.x] : 0.0;
    __syncthreads();
    v = warp_sum(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = t < blockDim.x / 32 ? per_warp[lane] : 0.0;
        v = warp_sum(v);
    }
    if (t == 0) out[blockIdx.x] = v;
}
