// Sum of 2^25 doubles on a V100, version 2: as version 1, but thread t works on index 2 t s, so the active
// threads are contiguous and the shared-memory accesses strided (ladder.toml).
// kerncast: grid=131072 block=256 smem=2048 size=33554432
__global__ void dsum_interleaved_contiguous(const double *in, int size, double *out)
{
    extern __shared__ double s[];
    int t = threadIdx.x;
    int g = blockIdx.x * blockDim.x + t;
    s[t] = g < size ? in[g] : 0.0;
    __syncthreads();
    for (int step = 1; step < blockDim.x; step *= 2) {
        int k = 2 * t * step;
        if (k < blockDim.x) s[k] += s[k + step];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
