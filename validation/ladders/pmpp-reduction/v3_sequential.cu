// Sum reduction, version 3: sequential addressing, the stride halves from blockDim.x / 2 and thread t adds
// part[t + s] (contiguous threads, conflict-free shared memory). Passes over 2^26 unsigned 32-bit values,
// 512 threads per block (ladder.toml lists every pass).
// kerncast: grid=131072 block=512 smem=2048 n=67108864
__global__ void reduce_sequential(const unsigned *x, unsigned n, unsigned *y)
{
    extern __shared__ unsigned part[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] : 0u;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = part[0];
}
