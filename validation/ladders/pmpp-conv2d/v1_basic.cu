// 2D convolution, version 1: one thread per output pixel reads its mask_h x mask_w neighbourhood and the
// mask from global memory (interleaved channels, one channel in the measurement). Problem of the
// measurement: 8192 x 8192 floats, 1 channel, 5 x 5 mask, 16 x 16 threads per block (see ladder.toml).
__device__ __forceinline__ float saturate01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// kerncast: grid=512,512 block=16,16 smem=0 mask_h=5 mask_w=5 height=8192 width=8192 channels=1
__global__ void conv2d_basic(const float *in, const float *mask, float *out, int mask_h, int mask_w,
                             int height, int width, int channels)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height || col >= width) return;
    int r0 = row - mask_h / 2;
    int c0 = col - mask_w / 2;
    for (int c = 0; c < channels; ++c) {
        float acc = 0.0f;
        for (int u = 0; u < mask_h; ++u)
            for (int v = 0; v < mask_w; ++v) {
                int r = r0 + u, q = c0 + v;
                if (r >= 0 && r < height && q >= 0 && q < width)
                    acc += in[(r * width + q) * channels + c] * mask[u * mask_w + v];
            }
        out[(row * width + col) * channels + c] = saturate01(acc);
    }
}
