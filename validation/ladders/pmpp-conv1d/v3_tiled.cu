// 1D convolution, version 3: each block stages its tile and both halos in shared memory, then every tap
// reads shared memory. Problem of the measurement: 2^26 floats, mask width 5, 512 threads per block;
// dynamic shared memory (512 + 5 - 1) floats (see ladder.toml).
#define MAX_TAPS 121
__constant__ float c_mask[MAX_TAPS];

__device__ __forceinline__ float saturate01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// kerncast: grid=131072 block=512 smem=2064 mask_width=5 width=67108864
__global__ void conv1d_tiled(const float *in, float *out, int mask_width, int width)
{
    extern __shared__ float tile[];
    int half = mask_width / 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    // left halo: the last `half` threads fetch the end of the previous tile
    int left = (blockIdx.x - 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x >= blockDim.x - half)
        tile[threadIdx.x - (blockDim.x - half)] = left < 0 ? 0.0f : in[left];
    tile[half + threadIdx.x] = in[i];
    // right halo: the first `half` threads fetch the start of the next tile
    int right = (blockIdx.x + 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x < half)
        tile[half + blockDim.x + threadIdx.x] = right >= width ? 0.0f : in[right];
    __syncthreads();

    float acc = 0.0f;
    for (int j = 0; j < mask_width; ++j) acc += tile[threadIdx.x + j] * c_mask[j];
    out[i] = saturate01(acc);
}
