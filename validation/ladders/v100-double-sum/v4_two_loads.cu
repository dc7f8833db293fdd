// Sum of 2^25 doubles on a V100, version 4: blocks of 128 threads, each adding two elements a block apart
// while loading; the grid stays that of 256 elements per block (ladder.toml).
// kerncast: grid=131072 block=128 smem=1024 size=33554432
__global__ void dsum_two_loads(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * (blockDim.x * 2) + t;
    s[t] = g < size ? in[g] : 0.0;
    s[t] += g + blockDim.x < size ? in[g + blockDim.x] : 0.0;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step >>= 1) {
        if (t < step) s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
