// Includes the profiler API header as NVIDIA's samples (matrixMul) do: it ships in a header wheel of the
// `cuda` extra, not in the nvcc wheel.
#include <cuda_profiler_api.h>

__global__ void profiled_scale(float *data, float factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i] *= factor;
}

void run(float *data)
{
    cudaProfilerStart();
    profiled_scale<<<128, 256>>>(data, 2.0f);
    cudaProfilerStop();
}
