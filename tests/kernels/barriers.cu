// Barriers: __syncthreads() under conditions that differ between the threads of a block (undefined
// behaviour), beside barriers after the reconvergence point, under block-uniform conditions, and after an
// early return.
#include <cuda_runtime.h>

// kerncast: block=128
__global__ void syncInHalf(float *data)
{
    __shared__ float buf[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = data[i];
    if (threadIdx.x < 64) {
        buf[threadIdx.x] += 1.0f;
        __syncthreads();  // expect: barrier-divergence
        data[i] = buf[threadIdx.x + 64];
    }
    data[i] += 2.0f;
}

// kerncast: block=128
__global__ void syncInStridedLoop(const float *in, float *out, int n)
{
    __shared__ float buf[128];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        buf[threadIdx.x] = in[i];
        __syncthreads();  // expect: barrier-divergence
        out[i] = buf[127 - threadIdx.x];
    }
    out[threadIdx.x] = 0.0f;
}

// kerncast: block=128
__global__ void syncUnderLaneTest(float *data, int steps)
{
    __shared__ float buf[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = data[i];
    for (int k = 0; k < steps; ++k) {
        buf[threadIdx.x] = v;
        if ((threadIdx.x & 1) == 0) {  // expect: divergent-branch
            __syncthreads();  // expect: barrier-divergence
            v += buf[threadIdx.x + 1];
        }
        v *= 0.5f;
    }
    data[i] = v;
}

// kerncast: block=128
__global__ void reduceShared(const float *in, float *out)
{
    __shared__ float sdata[128];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// kerncast: block=128
__global__ void syncUnderBlockUniform(float *data, int n)
{
    __shared__ float buf[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = data[i];
    if (blockIdx.x % 2 == 0) {
        __syncthreads();
        data[i] = buf[127 - threadIdx.x];
    }
    if (n > 64) {
        __syncthreads();
        data[i] += buf[threadIdx.x];
    }
}

// kerncast: block=128
__global__ void syncAfterEarlyReturn(const float *in, float *out, int n)
{
    __shared__ float buf[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    buf[threadIdx.x] = in[i];
    __syncthreads();
    out[i] = buf[127 - threadIdx.x];
}

// kerncast: block=16x16
__global__ void tiledLoop(const float *a, float *c, int n)
{
    __shared__ float tile[16][16];
    int row = blockIdx.y * 16 + threadIdx.y;
    int col = blockIdx.x * 16 + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < n; t += 16) {
        tile[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) sum += tile[threadIdx.y][k];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = sum;
}

// kerncast: block=128
__global__ void earlyReturnThenTiles(const float4 *pos, float4 *out, int n, int tiles)
{
    extern __shared__ float4 sh[];
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= n) {
        return;
    }
    float4 p = pos[index];  // expect: uncoalesced-global
    float acc = 0.0f;
    for (int t = 0; t < tiles; t++) {
        sh[threadIdx.x] = pos[t * blockDim.x + threadIdx.x];
        __syncthreads();
        for (unsigned c = 0; c < blockDim.x; c++) acc += sh[c].x * p.x;
        __syncthreads();
    }
    out[index] = make_float4(acc, 0.0f, 0.0f, 0.0f);
}

int main()
{
    float *a, *b;
    int n = 1 << 20;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    syncInHalf<<<n / 128, 128>>>(a);
    syncInStridedLoop<<<n / 128, 128>>>(a, b, 4096);
    syncUnderLaneTest<<<n / 128, 128>>>(a, 8);
    reduceShared<<<n / 128, 128>>>(a, b);
    syncUnderBlockUniform<<<n / 128, 128>>>(a, n);
    syncAfterEarlyReturn<<<n / 128, 128>>>(a, b, n);
    tiledLoop<<<dim3(64, 64), dim3(16, 16)>>>(a, b, 1024);
    earlyReturnThenTiles<<<n / 512, 128, 2048>>>((float4 *)a, (float4 *)b, n / 4, 64);
    cudaDeviceSynchronize();
    return 0;
}
