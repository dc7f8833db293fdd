// Branch conditions: lane parity diverges inside every warp; block index, warp index and thresholds that
// are multiples of 32 are warp-uniform.
#include <cuda_runtime.h>

// kerncast: block=128
__global__ void evenOdd(float *data, int steps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = data[i];
    if (threadIdx.x % 2 == 0) {  // expect: divergent-branch
        for (int k = 0; k < steps; ++k) v = v * v + 1.0f;
    } else {
        v = sqrtf(v);
    }
    data[i] = v;
}

// kerncast: block=128
__global__ void uniformBranches(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x % 2 == 0) {
        data[i] *= 2.0f;
    }
    if (threadIdx.x / 32 == 1) {
        data[i] += 1.0f;
    }
    if (threadIdx.x < 64) {
        data[i] -= 3.0f;
    }
    if (i < n && threadIdx.x == 0) {
        data[blockIdx.x] = 0.0f;
    }
}

int main()
{
    float *a;
    cudaMalloc(&a, 1 << 20);
    evenOdd<<<1024, 128>>>(a, 16);
    uniformBranches<<<1024, 128>>>(a, 1 << 18);
    cudaDeviceSynchronize();
    return 0;
}
