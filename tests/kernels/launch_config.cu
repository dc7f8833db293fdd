// Launch configurations: blocks that are not a multiple of 32, grids smaller than the GPU, a last wave
// under half full, and launches the driver refuses; beside launches that use the GPU fully.
#include <cuda_runtime.h>

__global__ void scale(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 2.0f;
}

__global__ void scaleWide(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += 1.0f;
}

__global__ void scaleTail(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] -= 1.0f;
}

__global__ void scaleFull(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 0.5f;
}

__global__ void tooMany(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 3.0f;
}

__global__ void tooTall(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 4.0f;
}

__global__ void bigDynamic(float *data, int n)
{
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? data[i] : 0.0f;
    __syncthreads();
    if (i < n) data[i] = buf[blockDim.x - 1 - threadIdx.x];
}

__global__ void optedIn(float *data, int n)
{
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? data[i] : 0.0f;
    __syncthreads();
    if (i < n) data[i] = buf[blockDim.x - 1 - threadIdx.x];
}

__global__ void scale2d(float *data, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    data[y * w + x] *= 2.0f;
}

__global__ void unlaunched(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= 5.0f;
}

int main()
{
    float *a;
    int n = 1 << 22;
    cudaMalloc(&a, n * sizeof(float));
    scale<<<4096, 48>>>(a, n);  // expect: launch-configuration
    scaleWide<<<4, 256>>>(a, n);  // expect: launch-configuration
    scaleTail<<<132 * 2 + 8, 1024>>>(a, n);  // expect: launch-configuration
    scaleFull<<<4096, 256>>>(a, n);
    tooMany<<<1024, 2048>>>(a, n);  // expect: launch-configuration
    tooTall<<<1024, dim3(2, 2, 128)>>>(a, n);  // expect: launch-configuration
    bigDynamic<<<1024, 256, 64 * 1024>>>(a, n);  // expect: launch-configuration
    cudaFuncSetAttribute(optedIn, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
    optedIn<<<1024, 256, 64 * 1024>>>(a, n);
    scale2d<<<dim3(64, 64), dim3(32, 8)>>>(a, 2048);
    cudaDeviceSynchronize();
    return 0;
}
