// Sum of 2^25 doubles on a V100, version 3: sequential addressing, the stride halves from blockDim.x / 2
// (ladder.toml).
// kerncast: grid=131072 block=256 smem=2048 size=33554432
__global__ void dsum_sequential(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * blockDim.x + t;
    s[t] = g < size ? in[g] : 0.0;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step >>= 1) {
        if (t < step) s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
