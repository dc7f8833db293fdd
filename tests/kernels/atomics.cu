// Atomics: every lane of a warp (or every block of the grid) updating one address serialises; an atomic per
// thread on its own element, one made by a single lane per warp, and data-dependent bins are not reported.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

// kerncast: block=256
__global__ void countAll(const float *in, unsigned *counter, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] > 0.0f) {
        atomicAdd(&counter[0], 1u);  // expect: atomic-contention
    }
}

// kerncast: block=256
__global__ void perBlockSum(const float *in, float *blockSums)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&blockSums[blockIdx.x], in[i]);  // expect: atomic-contention
}

// kerncast: block=256
__global__ void globalMax(const int *in, int *result)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicMax(result, in[i]);  // expect: atomic-contention
}

// kerncast: block=256
__global__ void sharedCount(const int *in, int *out)
{
    __shared__ int hits;
    if (threadIdx.x == 0) hits = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (in[i] != 0) atomicAdd(&hits, 1);  // expect: atomic-contention
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = hits;
}

// kerncast: block=256
__global__ void ownElement(const float *in, float *out)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    atomicAdd(&out[i], in[i]);
}

// kerncast: block=256
__global__ void laneZeroOnly(const float *in, float *total)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) atomicAdd(total, v);
}

// perBlockSum aggregated by hand: the warp's lanes sum by shuffles, then one lane adds the sum
// kerncast: block=256
__global__ void perBlockSumByWarp(const float *in, float *blockSums)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) atomicAdd(&blockSums[blockIdx.x], v);
}

// kerncast: block=256
__global__ void histogram(const int *data, unsigned *hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i]], 1u);
}

// block shape unknown (never launched here): threadIdx.x == 0 cannot be decided per lane, so nothing is claimed
__global__ void blockLeader(int *out, int *counter)
{
    __shared__ int ticket;
    if (threadIdx.x == 0) {
        ticket = atomicAdd(counter, 1);
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = ticket;
}

// the leader of the lanes that passed a data test makes one atomic for them (cooperative groups' warp aggregation)
// kerncast: block=256
__global__ void groupLeader(const int *in, int *counter, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (in[i] > 0) {
        cg::coalesced_group active = cg::coalesced_threads();
        int res = 0;
        if (active.thread_rank() == 0) res = atomicAdd(counter, (int)active.size());
        out[i] = active.shfl(res, 0) + (int)active.thread_rank();
    }
}

int main()
{
    float *a, *b;
    unsigned *c;
    int *d, *e;
    int n = 1 << 20;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(unsigned));
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&e, n * sizeof(int));
    countAll<<<n / 256, 256>>>(a, c, n);
    perBlockSum<<<n / 256, 256>>>(a, b);
    globalMax<<<n / 256, 256>>>(d, e);
    sharedCount<<<n / 256, 256>>>(d, e);
    ownElement<<<n / 256, 256>>>(a, b);
    laneZeroOnly<<<n / 256, 256>>>(a, b);
    perBlockSumByWarp<<<n / 256, 256>>>(a, b);
    histogram<<<n / 256, 256>>>(d, c, n);
    groupLeader<<<n / 256, 256>>>(d, e, d);
    cudaDeviceSynchronize();
    return 0;
}
