// Shared pieces of the vector-sum ladder: 512 threads per block, a block-wide tree in shared memory.
#pragma once
#define THREADS 512
#define BATCH 12

// The block's tree down to 64 partial sums (one barrier per step); the caller finishes the last warp.
__device__ __forceinline__ void tree_to_64(int *sums, int tid)
{
#pragma unroll
    for (int active = THREADS / 2; active > 32; active /= 2) {
        if (tid < active) sums[tid] += sums[tid + active];
        __syncthreads();
    }
}
