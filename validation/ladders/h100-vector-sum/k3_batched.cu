// Vector sum on an H100, version 3: each thread first adds 12 consecutive ints (unrolled), so a block covers
// 6144 elements and 174763 blocks cover 2^30; the tree and the atomicAdd are those of version 2 (ladder.toml).
#include "common.cuh"

// kerncast: grid=174763 block=512 smem=0 n=1073741824
__global__ void vsum_batched(const int *in, int *out, size_t n)
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
    volatile int *v = sums;
#pragma unroll
    for (int active = 32; active > 0; active /= 2) {
        if (tid < active) v[tid] += v[tid + active];
        __syncwarp();
    }
    if (tid == 0) atomicAdd(out, v[0]);
}
