// 1D convolution, version 2: the mask moves to constant memory (one broadcast per warp and tap).
// Problem of the measurement: 2^26 floats, mask width 5, 512 threads per block (see ladder.toml).
#define MAX_TAPS 121
__constant__ float c_mask[MAX_TAPS];

__device__ __forceinline__ float saturate01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// kerncast: grid=131072 block=512 smem=0 mask_width=5 width=67108864
__global__ void conv1d_constant(const float *in, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int first = i - mask_width / 2;
    float acc = 0.0f;
    for (int j = 0; j < mask_width; ++j) {
        int k = first + j;
        if (k >= 0 && k < width) acc += in[k] * c_mask[j];
    }
    out[i] = saturate01(acc);
}
