// 1D convolution, version 4: only the block's own tile goes to shared memory; taps that fall into the
// neighbouring tiles read global memory and rely on the L1/L2 caches. Problem of the measurement: 2^26
// floats, mask width 5, 512 threads per block, 512 floats of dynamic shared memory (see ladder.toml).
#define MAX_TAPS 121
__constant__ float c_mask[MAX_TAPS];

__device__ __forceinline__ float saturate01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// kerncast: grid=131072 block=512 smem=2048 mask_width=5 width=67108864
__global__ void conv1d_tiled_l1(const float *in, float *out, int mask_width, int width)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i];
    __syncthreads();

    int tile_start = blockIdx.x * blockDim.x;
    int tile_end = tile_start + blockDim.x;
    int half = mask_width / 2;
    int first = i - half;
    float acc = 0.0f;
    for (int j = 0; j < mask_width; ++j) {
        int k = first + j;
        if (k >= 0 && k < width) {
            if (k >= tile_start && k < tile_end)
                acc += tile[threadIdx.x + j - half] * c_mask[j];
            else
                acc += in[k] * c_mask[j];
        }
    }
    out[i] = saturate01(acc);
}
