// Integer division: by a run-time value inside a loop it is a long instruction sequence each iteration; by a
// constant, or once outside a loop, it is not reported.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void wrapSum(const float *a, float *out, int n, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < width; ++k) {
        sum += a[(i + k) % n];  // expect: slow-integer-division
    }
    out[i] = sum;
}

// kerncast: block=256
__global__ void rowsOfFlat(const int *idx, int *rows, int count, int cols)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        rows[j] = idx[j] / cols;  // expect: slow-integer-division
    }
}

// kerncast: block=256
__global__ void unflatten(const float *in, float *out, int n, int w, int h)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
        unsigned x = (unsigned)j % (unsigned)w, y = ((unsigned)j / (unsigned)w) % (unsigned)h;  // expect: slow-integer-division
        out[j] = in[y * w + x];
    }
}

// kerncast: block=256
__global__ void constantDivisor(const float *a, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k) sum += a[(i + k) % 1000];
    out[i] = sum;
}

// kerncast: block=256
__global__ void divideOnce(const int *idx, int *rows, int count, int cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < count) rows[j] = idx[j] / cols;
}

// kerncast: block=256
__global__ void shiftInLoop(const int *idx, int *rows, int count, int shift)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        rows[j] = idx[j] >> shift;
    }
}

// A device function defined above its caller, inlined into a loop whose count is a parameter: its line comes
// first in the file, yet the loop's assumed count is reported at the loop's own statement.
__device__ float blend(float acc, float x)
{
    return acc * 0.75f + x;
}

// kerncast: block=256
__global__ void blendRows(const float *in, float *out, int len, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < len; ++k) {  // expect: assumed-trip-count
        acc = blend(acc, in[k * stride + i]);
    }
    out[i] = acc;
}

// A loop without a test of its own (`while (true)`, left by a return): the finding is placed on the `while`.
// kerncast: block=256
__global__ void probeSlots(uint2 *table, const uint2 *pairs, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        unsigned key = pairs[i].x;  // expect: uncoalesced-global (one half of each 8-byte pair: stride 2)
        unsigned slot = key & 1023u;
        while (true)  // expect: assumed-trip-count
        {
            unsigned prev = atomicCAS(&table[slot].x, 0xffffffffu, key);
            if (prev == 0xffffffffu || prev == key)
            {
                atomicExch(&table[slot].y, pairs[i].y);  // expect: uncoalesced-global
                return;
            }
            slot = (slot + 1) & 1023u;
        }
    }
}

int main()
{
    float *a, *b;
    int *p, *q;
    int n = 1 << 20;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&p, n * sizeof(int));
    cudaMalloc(&q, n * sizeof(int));
    wrapSum<<<n / 256, 256>>>(a, b, n, 9);
    rowsOfFlat<<<1024, 256>>>(p, q, n, 1000);
    unflatten<<<1024, 256>>>(a, b, n, 1024, 1024);
    constantDivisor<<<n / 256, 256>>>(a, b, n);
    divideOnce<<<n / 256, 256>>>(p, q, n, 1000);
    shiftInLoop<<<1024, 256>>>(p, q, n, 10);
    cudaDeviceSynchronize();
    return 0;
}
