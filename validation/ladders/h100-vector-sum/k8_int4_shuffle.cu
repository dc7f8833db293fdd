// Vector sum on an H100, version 8: version 4 (int4 loads) with the shuffle finish of version 6
// (ladder.toml).
#include "common.cuh"

// kerncast: grid=174763 block=512 smem=0 n=1073741824
__global__ void vsum_int4_shuffle(const int4 *in, int *out, size_t n)
{
    __shared__ int sums[THREADS];
    int tid = threadIdx.x;
    int g = blockIdx.x * THREADS + tid;
    int acc = 0;
    if (g < n) {
#pragma unroll
        for (int k = 0; k < BATCH / 4; ++k) {
            int4 q = in[g * (BATCH / 4) + k];
            if (g * BATCH + k * 4 < n) acc += q.x + q.y + q.z + q.w;
        }
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
