// Layer normalisation with one warp per row: each lane walks the row's C channels 32 apart, three times (mean,
// variance, output). nvcc unrolls each lane-strided loop by four and starts the unrolled part after the
// remainder iterations, which it counts as ((C - 1 - lane) / 32 + 1) & 3, written with `not.b32` of the lane:
// ~lane = -lane - 1. With C known that count is one value in every lane, so every address is the row's start
// plus the lane, the loop index and constants.
__device__ __forceinline__ float warpSum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

// kerncast: grid=1024 block=256 N=8192 C=768
__global__ void laneRows(float *__restrict__ out, float *__restrict__ mean, float *__restrict__ rstd,
                         const float *__restrict__ inp, const float *__restrict__ weight,
                         const float *__restrict__ bias, int N, int C)
{
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int i = lane; i < C; i += 32) s += x[i];
    float m = warpSum(s) / C;
    float v = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float d = x[i] - m;
        v += d * d;
    }
    float r = rsqrtf(warpSum(v) / C + 1e-5f);
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
    float *o = out + (size_t)row * C;
    for (int i = lane; i < C; i += 32) o[i] = (x[i] - m) * r * weight[i] + bias[i];
}
