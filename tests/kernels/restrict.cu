// Pointers the kernel only reads, loaded on the ordinary path because nothing says they do not alias its
// writes; a pointer already __restrict__, written through, updated atomically, read with __ldg or as
// volatile, or handed on as a value is not reported, nor the rows a pointer array points to.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void scale(const float *in, float *out, int n)  // expect: missing-restrict
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

// kerncast: block=256
__global__ void weighted(const float *x, float *w, float *y, int n)  // expect: missing-restrict
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = x[i] * w[i] + x[i + 1];
}

// kerncast: block=256
__global__ void windowSum(const float *in, float *out, int n, int width)  // expect: missing-restrict
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *p = in + i;
    float s = 0.0f;
    for (int k = 0; k < width; ++k) {
        s += p[k];  // expect: shared-tiling
    }
    if (i < n) out[i] = s;
}

// kerncast: block=256
__global__ void alreadyRestrict(const float *__restrict__ in, float *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

// kerncast: block=256
__global__ void inPlace(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = data[i] * 2.0f;
}

// kerncast: block=256
__global__ void readThenCount(float *values, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && values[i] > 0.0f) {
        atomicAdd(&values[n], 1.0f);  // expect: atomic-contention
    }
}

// kerncast: block=256
__global__ void readOnlyCache(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * __ldg(&in[i]);
}

// kerncast: block=256
__global__ void gatherRows(const float *const *rows, float *out, int n)  // expect: missing-restrict
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = rows[i][0];  // 'rows' is only read; a row is a loaded pointer, no parameter
}

// kerncast: block=256
__global__ void handOn(const float *in, const float **slots, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        slots[i] = in + i;  // the pointer itself is stored: someone else may write through it
        out[i] = in[i];
    }
}

// kerncast: block=256
__global__ void pollFlag(volatile int *flag, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = flag[0] ? 1.0f : 0.0f;  // a volatile read: another agent writes the flag
}

int main()
{
    int n = 1 << 20;
    float *a, *b, *c;
    const float **rows;
    cudaMalloc(&a, (n + 64) * sizeof(float));
    cudaMalloc(&b, (n + 64) * sizeof(float));
    cudaMalloc(&c, (n + 64) * sizeof(float));
    cudaMalloc(&rows, n * sizeof(float *));
    scale<<<n / 256, 256>>>(a, b, n);
    weighted<<<n / 256, 256>>>(a, b, c, n);
    windowSum<<<n / 256, 256>>>(a, b, n, 16);
    alreadyRestrict<<<n / 256, 256>>>(a, b, n);
    inPlace<<<n / 256, 256>>>(a, n);
    readThenCount<<<n / 256, 256>>>(a, n);
    readOnlyCache<<<n / 256, 256>>>(a, b, n);
    gatherRows<<<n / 256, 256>>>(rows, b, n);
    handOn<<<n / 256, 256>>>(a, rows, b, n);
    pollFlag<<<n / 256, 256>>>((int *)c, b);
    cudaDeviceSynchronize();
    return 0;
}
