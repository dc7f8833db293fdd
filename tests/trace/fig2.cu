// The trace-based estimation's Fig. 2 on real kernels: two blocks of two warps per SM (160 blocks of 64 threads on an 80-SM
// V100), a short dependent compute chain, one barrier, a long one, and four coalesced global loads whose
// values are used at the end. Issued after the barrier, they overlap the long chain and the barrier costs
// nothing (the warps reach it together); moved before it, the barrier holds each warp until its loads are
// performed, longer than the short chain takes, so the long chain waits for them: the paper's gap (t_gap).
// Each kernel has a twin without the barrier.
#define SHORT 16
#define LONG 256
#define LOADS 4
#define MASK ((1 << 22) - 1)

template <int N>
__device__ float chain(float v, float a, float b)
{
#pragma unroll
    for (int k = 0; k < N; ++k) {
        v = v * a + b;
    }
    return v;
}

__device__ float gather(const float* x, int i)
{
    float m = 0.0f;
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
        m += x[(i + k * 8192) & MASK];
    }
    return m;
}

__global__ void loadAfterBarrier(const float* x, float* y, float a, float b)
{
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = chain<SHORT>(threadIdx.x, a, b);
    __syncthreads();
    float v = chain<LONG>(s[(threadIdx.x + 1) & 63], a, b);
    y[i] = v + gather(x, i);
}

__global__ void loadAfterNoBarrier(const float* x, float* y, float a, float b)
{
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = chain<SHORT>(threadIdx.x, a, b);
    float v = chain<LONG>(s[(threadIdx.x + 1) & 63], a, b);
    y[i] = v + gather(x, i);
}

__global__ void loadBeforeBarrier(const float* x, float* y, float a, float b)
{
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float m = gather(x, i);
    s[threadIdx.x] = chain<SHORT>(threadIdx.x, a, b);
    __syncthreads();
    y[i] = chain<LONG>(s[(threadIdx.x + 1) & 63], a, b) + m;
}

__global__ void loadBeforeNoBarrier(const float* x, float* y, float a, float b)
{
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float m = gather(x, i);
    s[threadIdx.x] = chain<SHORT>(threadIdx.x, a, b);
    y[i] = chain<LONG>(s[(threadIdx.x + 1) & 63], a, b) + m;
}

int main()
{
    float *x, *y;
    cudaMalloc(&x, (MASK + 1) * sizeof(float));
    cudaMalloc(&y, 1 << 16);
    loadAfterBarrier<<<160, 64>>>(x, y, 1.0001f, 0.5f);
    loadAfterNoBarrier<<<160, 64>>>(x, y, 1.0001f, 0.5f);
    loadBeforeBarrier<<<160, 64>>>(x, y, 1.0001f, 0.5f);
    loadBeforeNoBarrier<<<160, 64>>>(x, y, 1.0001f, 0.5f);
    cudaDeviceSynchronize();
    return 0;
}
