// A work-efficient (up-sweep / down-sweep) scan of one block's 2 * blockDim.x elements in shared memory, the
// indices padded by a word every 16 and another every 256 against bank conflicts. No launch in this file: the
// block is unknown.
#define PAD(i) (((i) >> 4) + ((i) >> 8))

__global__ void paddedScan(const float *in, float *out)
{
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    unsigned n = 2 * blockDim.x;
    unsigned g = blockIdx.x * n + t;
    s[t + PAD(t)] = in[g];
    s[t + blockDim.x + PAD(t + blockDim.x)] = in[g + blockDim.x];
    unsigned stride = 1;
    for (unsigned d = blockDim.x; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            unsigned ai = stride * (2 * t + 1) - 1;
            unsigned bi = stride * (2 * t + 2) - 1;
            s[bi + PAD(bi)] += s[ai + PAD(ai)];
        }
        stride *= 2;
    }
    __syncthreads();
    out[g] = s[t + PAD(t)];
    out[g + blockDim.x] = s[t + blockDim.x + PAD(t + blockDim.x)];
}
