// 2D convolution, version 3: each 16 x 16 block loads an input tile (halo included) into shared memory and
// the inner 12 x 12 threads compute one output each from it. Problem of the measurement: 8192 x 8192
// floats, 1 channel, 5 x 5 mask, 16 x 16 threads per block, a grid of 683 x 683 blocks (see ladder.toml).
#define MAX_TAPS 121
__constant__ float c_mask[MAX_TAPS];

__device__ __forceinline__ float saturate01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// kerncast: grid=683,683 block=16,16 smem=1024 mask_h=5 mask_w=5 height=8192 width=8192 channels=1
__global__ void conv2d_tiled(const float *in, float *out, int mask_h, int mask_w, int height, int width,
                             int channels)
{
    extern __shared__ float tile[];
    int out_h = blockDim.y - mask_h + 1;
    int out_w = blockDim.x - mask_w + 1;
    int ty = threadIdx.y, tx = threadIdx.x;
    int row = blockIdx.y * out_h + ty;
    int col = blockIdx.x * out_w + tx;
    int src_r = row - mask_h / 2;
    int src_c = col - mask_w / 2;
    for (int c = 0; c < channels; ++c) {
        bool inside = src_r >= 0 && src_r < height && src_c >= 0 && src_c < width;
        tile[ty * blockDim.x + tx] = inside ? in[(src_r * width + src_c) * channels + c] : 0.0f;
        __syncthreads();
        if (ty < out_h && tx < out_w && row < height && col < width) {
            float acc = 0.0f;
            for (int u = 0; u < mask_h; ++u)
                for (int v = 0; v < mask_w; ++v)
                    acc += tile[(ty + u) * blockDim.x + tx + v] * c_mask[u * mask_w + v];
            out[(row * width + col) * channels + c] = saturate01(acc);
        }
        __syncthreads();
    }
}
