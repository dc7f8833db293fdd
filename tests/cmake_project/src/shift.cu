#include "kc_config.h"

__global__ void shift(float *data)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i] += static_cast<float>(kc_tile);
}

void launch_shift(float *data)
{
    shift<<<64, 256>>>(data);
}
