// Vector sum on an H100, version 6: version 3 with the last warp's steps done by __shfl_down_sync instead of
// shared memory (ladder.toml).
#include "common.cuh"

// kerncast: grid=174763 block=512 smem=0 n=1073741824
__global__ void vsum_batched_shuffle(const int *in, int *out, size_t n)
{
    __shared__ int sums[THREADS];
    int tid = threadIdx.x;
    int g = blockIdx.x * THREADS + tid;
    int acc = 0;
    if (g < n) {
#pragma unroll
        for (int j = 0; j < BATCH; ++j)
            if (g * BATCH + j < n) acc += in[g * BATCH + j];
    }
    sums[tid] = acc;
    __syncthreads();
    tree_to_64(sums, tid);
    int w = 0;
    if (tid < 32) {
        w = sums[tid] + sums[tid + 32];
#pragma unroll
        for (int off = 16; off > 0; off /= 2) w += __shfl_down_sync(0xffffffffu, w, off);
    }
    if (tid == 0) atomicAdd(out, w);
}
