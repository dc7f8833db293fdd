// Block sum reductions: interleaved addressing (divergent), strided index (bank conflicts), sequential
// addressing (clean).
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void reduceInterleaved(const float *in, float *out, unsigned int n)
{
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {  // expect: divergent-branch
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// kerncast: block=256
__global__ void reduceStrided(const float *in, float *out, unsigned int n)
{
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x) {
            sdata[index] += sdata[index + s];  // expect: shared-bank-conflict
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// kerncast: block=256
__global__ void reduceSequential(const float *in, float *out, unsigned int n)
{
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

int main()
{
    const unsigned int n = 1 << 20;
    float *a, *b;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, (n / 256) * sizeof(float));
    reduceInterleaved<<<n / 256, 256>>>(a, b, n);
    reduceStrided<<<n / 256, 256>>>(a, b, n);
    reduceSequential<<<n / 256, 256>>>(a, b, n);
    cudaDeviceSynchronize();
    return 0;
}
