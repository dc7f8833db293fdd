// A tiled 1D convolution whose halo is read from global memory inside the tap loop: the tap count is a
// parameter, so nvcc keeps the loop (unrolled by four with a remainder), and which lanes take the global path
// depends on the tap as well as on the lane: only the first warp's first lanes (left halo) and the last warp's
// last lanes (right halo) do, at the taps that reach past the tile.
#include <cuda_runtime.h>

// kerncast: block=256 grid=4096 taps=5 n=1048576
__global__ void haloFromGlobal(const float *in, const float *mask, float *out, int taps, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i];
    __syncthreads();
    int start = blockIdx.x * blockDim.x;
    int end = start + blockDim.x;
    float acc = 0.0f;
    for (int j = 0; j < taps; ++j) {
        int k = i - taps / 2 + j;
        if (k >= 0 && k < n) {
            if (k >= start && k < end)
                acc += tile[threadIdx.x - taps / 2 + j] * mask[j];
            else
                acc += in[k] * mask[j];
        }
    }
    out[i] = acc;
}

int main()
{
    float *in, *mask, *out;
    cudaMalloc(&in, 1 << 22);
    cudaMalloc(&mask, 64);
    cudaMalloc(&out, 1 << 22);
    haloFromGlobal<<<4096, 256, 256 * sizeof(float)>>>(in, mask, out, 5, 1 << 20);
    cudaDeviceSynchronize();
    return 0;
}
