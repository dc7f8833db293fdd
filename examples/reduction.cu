// Block-level sum reduction three ways: interleaved addressing (divergent), strided index (bank conflicts),
// sequential addressing (clean). Dynamic shared memory sized at launch.
#include <cuda_runtime.h>

// The block's partial sums: one float per thread, sized by the launch's dynamic shared memory argument.
extern __shared__ float sdata[];

// Every variant starts alike: each thread copies one element of its block's slice of `in` (zero past the end)
// into shared memory, and the block waits until the slice is complete. Returns the thread's index in the block.
__device__ __forceinline__ unsigned int loadSlice(const float *in, unsigned int n)
{
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    return tid;
}

// Every variant ends alike: thread 0 writes the block's sum, which the tree has left in sdata[0].
__device__ __forceinline__ void storeSum(float *out, unsigned int tid)
{
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Interleaved addressing: the working threads are every (2s)-th, so idle lanes sit beside them in their warps.
__global__ void reduceInterleaved(const float *in, float *out, unsigned int n)
{
    unsigned int tid = loadSlice(in, n);
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    storeSum(out, tid);
}

// Strided index: the working threads are the first ones, but thread t adds at element 2st, so the threads of a
// warp fall on few shared-memory banks.
__global__ void reduceStrided(const float *in, float *out, unsigned int n)
{
    unsigned int tid = loadSlice(in, n);
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x) {
            sdata[index] += sdata[index + s];
        }
        __syncthreads();
    }
    storeSum(out, tid);
}

// Sequential addressing: the first s threads add the upper half onto the lower half, so whole warps work or
// rest while s >= 32, and consecutive threads touch consecutive banks.
__global__ void reduceSequential(const float *in, float *out, unsigned int n)
{
    unsigned int tid = loadSlice(in, n);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    storeSum(out, tid);
}

int main()
{
    const unsigned int n = 1 << 22;
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, blocks * sizeof(float));
    reduceInterleaved<<<blocks, threads, threads * sizeof(float)>>>(in, out, n);
    reduceStrided<<<blocks, threads, threads * sizeof(float)>>>(in, out, n);
    reduceSequential<<<blocks, threads, threads * sizeof(float)>>>(in, out, n);
    cudaDeviceSynchronize();
    return 0;
}
