// Broadcast reads: every lane of a warp reads the same word (global and shared); no waste.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void scaleByFirst(const float *in, const float *coef, float *out, int n)
{
    __shared__ float s[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 32) s[threadIdx.x] = coef[threadIdx.x];
    __syncthreads();
    float c = coef[0] + coef[blockIdx.x % 8];
    if (i < n) out[i] = in[i] * c * s[3];
}

// A 16x16 block: a warp covers two rows, so a[y * n + k] reads two addresses per request (a near-broadcast:
// 2 sectors where a unit-stride load would need 4), and b[k * n + x] reads 16 floats shared by both rows.
// kerncast: block=16,16
__global__ void rowDot(const float *a, const float *b, float *c, int n)
{
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    float s = 0.0f;
    for (int k = 0; k < n; ++k)
        s += a[y * n + k] * b[k * n + x];  // expect: shared-tiling
    c[y * n + x] = s;
}

int main()
{
    const int n = 1 << 20;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, 64 * sizeof(float));
    scaleByFirst<<<n / 256, 256>>>(a, c, b, n);
    rowDot<<<dim3(64, 64), dim3(16, 16)>>>(a, b, c, 1024);
    cudaDeviceSynchronize();
    return 0;
}
