// Matrix transpose three ways: naive (uncoalesced stores), tiled (shared-memory bank conflicts), padded (clean).
#include <cuda_runtime.h>

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transposeNaive(float *odata, const float *idata, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        odata[x * height + (y + j)] = idata[(y + j) * width + x];
    }
}

// The first half of both tiled transposes: the block copies its TILE_DIM x TILE_DIM tile of idata into shared
// memory a row at a time (coalesced reads, conflict-free stores), then waits until the whole tile is there.
// PITCH is the length of a tile row in shared memory: TILE_DIM, or more to shift each row onto other banks.
template <int PITCH>
__device__ __forceinline__ void readTile(float (&tile)[TILE_DIM][PITCH], const float *idata, int width)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    }
    __syncthreads();
}

// Writes the tile's columns as rows of odata (coalesced), but a column of a 32-float-wide tile lies in one bank.
__global__ void transposeTiled(float *odata, const float *idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    readTile(tile, idata, width);
    int x = blockIdx.y * TILE_DIM + threadIdx.x;
    int y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

// The same, with one float of padding per tile row: a column now spans all 32 banks.
__global__ void transposePadded(float *odata, const float *idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    readTile(tile, idata, width);
    int x = blockIdx.y * TILE_DIM + threadIdx.x;
    int y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

int main()
{
    const int width = 2048, height = 2048;
    float *in, *out;
    cudaMalloc(&in, width * height * sizeof(float));
    cudaMalloc(&out, width * height * sizeof(float));
    dim3 grid(width / TILE_DIM, height / TILE_DIM);
    dim3 block(TILE_DIM, BLOCK_ROWS);
    transposeNaive<<<grid, block>>>(out, in, width, height);
    transposeTiled<<<grid, block>>>(out, in, width, height);
    transposePadded<<<grid, block>>>(out, in, width, height);
    cudaDeviceSynchronize();
    return 0;
}
