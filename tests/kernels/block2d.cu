// A 16x16 block: one warp covers two rows of threadIdx.y, so row-major accesses stay coalesced (two
// 64-byte segments), a column-major one does not, and a branch on threadIdx.y < 8 is warp-uniform.
#include <cuda_runtime.h>

// kerncast: block=16,16
__global__ void rowMajor(const float *in, float *out, int width)
{
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    out[y * width + x] = in[y * width + x] + 1.0f;
}

// kerncast: block=16,16
__global__ void columnMajor(const float *in, float *out, int height)
{
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    out[x * height + y] = in[x * height + y] * 2.0f;  // expect: uncoalesced-global
}

// kerncast: block=16,16
__global__ void halfRows(float *data, int width)
{
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    if (threadIdx.y < 8) {
        data[y * width + x] *= 0.5f;
    }
    if (threadIdx.x < 8) {  // expect: divergent-branch
        data[y * width + x] += 1.0f;
    }
}

// kerncast: block=16,16
__global__ void tileColumns(const float *in, float *out, int width)
{
    __shared__ float tile[16][16];
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    out[y * width + x] = tile[threadIdx.x][threadIdx.y];  // expect: shared-bank-conflict
}

int main()
{
    const int w = 1024;
    float *a, *b;
    cudaMalloc(&a, w * w * sizeof(float));
    cudaMalloc(&b, w * w * sizeof(float));
    dim3 grid(w / 16, w / 16), block(16, 16);
    rowMajor<<<grid, block>>>(a, b, w);
    columnMajor<<<grid, block>>>(a, b, w);
    halfRows<<<grid, block>>>(a, w);
    tileColumns<<<grid, block>>>(a, b, w);
    cudaDeviceSynchronize();
    return 0;
}
