// __managed__ variables: unified memory the host and the device both address by name. nvcc declares them
// `.global .attribute(.managed)` in the PTX; the kernel reaches them through their symbol.
__managed__ unsigned int hits;
__managed__ float bias[256];

__global__ void strided_with_bias(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i * 32] + bias[threadIdx.x];
        atomicAdd(&hits, 1u);
    }
}

int main()
{
    float *in, *out;
    cudaMalloc(&in, 32 * 4 * (1 << 18));
    cudaMalloc(&out, 4 * (1 << 18));
    strided_with_bias<<<1024, 256>>>(in, out, 1 << 18);
    cudaDeviceSynchronize();
    return hits == 0;
}
