// The naive transpose as NVIDIA's transpose sample writes it: the input and output indices named first, the
// tile's rows walked with a stride of BLOCK_ROWS. Its strided store gets the tiled-transpose rewrite.
#include <cuda_runtime.h>

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transposeNaive(float *odata, float *idata, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;

    int index_in = xIndex + width * yIndex;
    int index_out = yIndex + height * xIndex;

    for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) {
        odata[index_out + i] = idata[index_in + i * width];  // expect: uncoalesced-global
    }
}

int main()
{
    const int width = 2048, height = 2048;
    float *in, *out;
    cudaMalloc(&in, width * height * sizeof(float));
    cudaMalloc(&out, width * height * sizeof(float));
    dim3 grid(width / TILE_DIM, height / TILE_DIM), threads(TILE_DIM, BLOCK_ROWS);
    transposeNaive<<<grid, threads>>>(out, in, width, height);
    cudaDeviceSynchronize();
    return 0;
}
