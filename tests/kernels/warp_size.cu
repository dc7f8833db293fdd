// warpSize compiles to PTX's constant WARP_SZ (32): addresses and loop bounds built from it are as well known as
// those built from 32.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void warpSums(const float *in, float *out)
{
    __shared__ float partial[8];
    unsigned int tid = threadIdx.x;
    float v = in[blockIdx.x * blockDim.x + tid];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (tid % warpSize == 0)
        partial[tid / warpSize] = v;
    __syncthreads();
    if (tid < blockDim.x / warpSize)  // expect: divergent-branch
        out[blockIdx.x * blockDim.x / warpSize + tid] = partial[tid];
}

// kerncast: block=256
__global__ void everyWarpSizeth(const float *in, float *out)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i * warpSize];  // expect: uncoalesced-global
}

// A warp's tree sum in shared memory: the step halves from warpSize / 2, so every step but the last (one lane
// working) splits the warp.
// kerncast: block=32
__global__ void warpTree(const float *in, float *out)
{
    __shared__ float partial[32];
    partial[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncwarp();
    for (int i = warpSize / 2; i > 0; i /= 2) {
        if (threadIdx.x < i)  // expect: divergent-branch
            partial[threadIdx.x] += partial[threadIdx.x + i];
        __syncwarp();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = partial[0];
}
