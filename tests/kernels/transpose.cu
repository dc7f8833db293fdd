// Matrix transpose: naive (strided stores), tiled through shared memory (column reads of a 32x32 tile hit
// one bank), padded tile (clean).
#include <cuda_runtime.h>

#define TILE 32
#define ROWS 8

// kerncast: block=32,8
__global__ void transposeNaive(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[x * height + (y + j)] = in[(y + j) * width + x];  // expect: uncoalesced-global
}

// kerncast: block=32,8
__global__ void transposeTiled(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];  // expect: shared-bank-conflict
}

// kerncast: block=32,8
__global__ void transposePadded(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main()
{
    const int w = 2048, h = 2048;
    float *a, *b;
    cudaMalloc(&a, sizeof(float) * w * h);
    cudaMalloc(&b, sizeof(float) * w * h);
    dim3 grid(w / TILE, h / TILE), block(TILE, ROWS);
    transposeNaive<<<grid, block>>>(b, a, w, h);
    transposeTiled<<<grid, block>>>(b, a, w, h);
    transposePadded<<<grid, block>>>(b, a, w, h);
    cudaDeviceSynchronize();
    return 0;
}
