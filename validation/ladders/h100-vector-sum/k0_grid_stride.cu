// Vector sum on an H100, version 0: a grid-stride loop per thread, then a shared-memory tree with a barrier
// at every step; a second launch of one block sums the partial results. 2^30 ints, 512 threads per block,
// 2^21 blocks (ladder.toml).
#include "common.cuh"

// kerncast: grid=2097152 block=512 smem=0 n=1073741824
__global__ void vsum_grid_stride(const int *in, int *out, size_t n)
{
    __shared__ int sums[THREADS];
    int tid = threadIdx.x;
    int stride = THREADS * gridDim.x;
    int acc = 0;
    for (int i = blockIdx.x * THREADS + tid; i < n; i += stride) acc += in[i];
    sums[tid] = acc;
    __syncthreads();
    for (int active = THREADS / 2; active > 0; active /= 2) {
        if (tid < active) sums[tid] += sums[tid + active];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sums[0];
}
