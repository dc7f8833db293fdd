// __ldg is defined in a CUDA header and inlined: its load carries the header's line, `inlined_at` this one, and
// is placed here.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void stridedLdg(const float *__restrict__ in, float *out)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __ldg(&in[i * 32]);  // expect: uncoalesced-global
}

// kerncast: block=256
__global__ void unitLdg(const float *__restrict__ in, float *out)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __ldg(&in[i]);
}
