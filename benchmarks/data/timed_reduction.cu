// A min-reduction per block that times itself with clock(), in the shape of the CUDA samples' `clock`
// program: 64 blocks of 256 threads, each block reducing 2 x 256 floats in dynamic shared memory. The
// thesis measured this kernel (Table 4.8, "timedReduction"); benchmarks/validate_time.py compares with it.
#include <cuda_runtime.h>
#include <ctime>

__global__ void timedReduction(const float *input, float *output, clock_t *timer)
{
    extern __shared__ float values[];
    const int t = threadIdx.x;
    const int b = blockIdx.x;
    if (t == 0) timer[b] = clock();
    values[t] = input[t];
    values[t + blockDim.x] = input[t + blockDim.x];
    for (int half = blockDim.x; half > 0; half /= 2) {
        __syncthreads();
        if (t < half) {
            float mine = values[t];
            float other = values[t + half];
            if (other < mine) values[t] = other;
        }
    }
    if (t == 0) output[b] = values[0];
    __syncthreads();
    if (t == 0) timer[b + gridDim.x] = clock();
}

int main()
{
    const int blocks = 64, threads = 256;
    float *input, *output;
    clock_t *timer;
    cudaMalloc(&input, 2 * threads * blocks * sizeof(float));
    cudaMalloc(&output, blocks * sizeof(float));
    cudaMalloc(&timer, 2 * blocks * sizeof(clock_t));
    timedReduction<<<blocks, threads, 2 * threads * sizeof(float)>>>(input, output, timer);
    cudaDeviceSynchronize();
    return 0;
}
