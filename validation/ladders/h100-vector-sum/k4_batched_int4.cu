// Vector sum on an H100, version 4: as version 3, with the 12 ints of a thread read as three 16-byte int4
// loads (ladder.toml).
#include "common.cuh"

// kerncast: grid=174763 block=512 smem=0 n=1073741824
__global__ void vsum_batched_int4(const int4 *in, int *out, size_t n)
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
    volatile int *v = sums;
#pragma unroll
    for (int active = 32; active > 0; active /= 2) {
        if (tid < active) v[tid] += v[tid + active];
        __syncwarp();
    }
    if (tid == 0) atomicAdd(out, v[0]);
}
