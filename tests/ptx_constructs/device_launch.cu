// Dynamic parallelism: a kernel that launches another from device code. nvcc compiles this only as
// relocatable device code (-rdc=true), and ptxas assembles that PTX only in compile-only mode.
__global__ void scaleChild(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= 2.0f;
    }
}

__global__ void scaleParent(float *data, int n)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        scaleChild<<<(n + 255) / 256, 256>>>(data, n);
    }
}
