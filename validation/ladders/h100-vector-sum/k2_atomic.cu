// Vector sum on an H100, version 2: one element per thread, the block's tree as in version 1, and one
// atomicAdd per block into the result instead of a second launch (the result is zeroed by a cudaMemset
// before it). 2^30 ints, 512 threads per block, 2^21 blocks (ladder.toml).
#include "common.cuh"

// kerncast: grid=2097152 block=512 smem=0 n=1073741824
__global__ void vsum_atomic(const int *in, int *out, size_t n)
{
    __shared__ int sums[THREADS];
    int tid = threadIdx.x;
    int i = blockIdx.x * THREADS + tid;
    sums[tid] = i < n ? in[i] : 0;
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
