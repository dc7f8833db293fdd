// Sum of 2^25 doubles on a V100, version 1: one element per thread into shared memory, then a tree whose
// active threads are those with tid % (2s) == 0. Four passes of 256-thread blocks (ladder.toml).
// kerncast: grid=131072 block=256 smem=2048 size=33554432
__global__ void dsum_interleaved(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * blockDim.x + t;
    s[t] = g < size ? in[g] : 0.0;
    __syncthreads();
    for (int step = 1; step < blockDim.x; step *= 2) {
        if (t % (2 * step) == 0) s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
