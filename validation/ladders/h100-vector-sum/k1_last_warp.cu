// Vector sum on an H100, version 1: as version 0, with the last six steps of the tree done by one warp through
// volatile shared memory and __syncwarp. Two launches as in version 0 (ladder.toml).
#include "common.cuh"

// kerncast: grid=2097152 block=512 smem=0 n=1073741824
__global__ void vsum_last_warp(const int *in, int *out, size_t n)
{
    __shared__ int sums[THREADS];
    int tid = threadIdx.x;
    int stride = THREADS * gridDim.x;
    int acc = 0;
    for (int i = blockIdx.x * THREADS + tid; i < n; i += stride) acc += in[i];
    sums[tid] = acc;
    __syncthreads();
    tree_to_64(sums, tid);
    volatile int *v = sums;
#pragma unroll
    for (int active = 32; active > 0; active /= 2) {
        if (tid < active) v[tid] += v[tid + active];
        __syncwarp();
    }
    if (tid == 0) out[blockIdx.x] = v[0];
}
