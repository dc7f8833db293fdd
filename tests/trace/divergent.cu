// Warps whose index is below `busy` run the loop, the others skip it: busy = 0 (all skip), 4 of a block's 8
// warps (half skip) or 8 (none skip). The condition reads threadIdx.x and a launch parameter only.
__global__ void someWarpsLoop(const float* x, float* y, int n, int busy)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if ((threadIdx.x >> 5) < busy) {
        for (int k = 0; k < n; ++k) {
            v = v * 1.0001f + 0.5f;
        }
    }
    y[i] = v;
}

// Odd and even lanes disagree: every warp diverges and runs the loop (its odd lanes' path) and the skip.
__global__ void oddLanesLoop(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (threadIdx.x & 1) {
        for (int k = 0; k < n; ++k) {
            v = v * 1.0001f + 0.5f;
        }
    }
    y[i] = v;
}

// A branch on loaded data: the trace model cannot decide it and runs both paths (its stated assumption).
__global__ void dataBranch(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (v > 0.0f) {
        for (int k = 0; k < n; ++k) {
            v = v * 1.0001f + 0.5f;
        }
    }
    y[i] = v;
}

int main()
{
    float *x, *y;
    cudaMalloc(&x, 1 << 22);
    cudaMalloc(&y, 1 << 22);
    someWarpsLoop<<<1024, 256>>>(x, y, 512, 4);
    oddLanesLoop<<<1024, 256>>>(x, y, 512);
    dataBranch<<<1024, 256>>>(x, y, 512);
    cudaDeviceSynchronize();
    return 0;
}
