// Double precision by accident: unsuffixed literals and double math calls promote float data to double;
// float literals, float math and kernels whose data is double are not reported.
#include <cuda_runtime.h>

// kerncast: block=256
__global__ void halfLiteral(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 0.5 + 1.0;  // expect: fp64-in-fp32
}

// kerncast: block=256
__global__ void doubleSqrt(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sqrt(x[i] * 2.0) * 3.0f;  // expect: fp64-in-fp32
}

// kerncast: block=256
__global__ void scaledExp(const float *x, float *y, int n, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = k * x[i] * 1e-1 + expf(x[i]);  // expect: fp64-in-fp32
}

// kerncast: block=256
__global__ void floatLiterals(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sqrtf(x[i] * 2.0f) * 0.5f + 1.0f;
}

// kerncast: block=256
__global__ void doubleData(const double *x, double *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sqrt(x[i]) * 0.5;
}

// kerncast: block=256
__global__ void doubleParam(const float *x, float *y, int n, double scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * scale;
}

// kerncast: block=256
__global__ void rotateFloat(const float *x, float *y, int n, float theta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float u = x[i] * cosf(theta) - x[i + n] * sinf(theta);
    y[i] = u;
}

// kerncast: block=256
__global__ void dampedSeries(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
#pragma unroll 1
    for (int k = 0; k < 256; ++k) {
        v = v * 0.999 + 0.5;  // expect: fp64-in-fp32
    }
    y[i] = v;
}

// Doubles asked for by name: a double local and a cast on float data are the author's choice, not an accident.
// kerncast: block=256
__global__ void widenOnPurpose(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double wide = static_cast<double>(x[i]) * x[i];
        y[i] = (float)(wide / (1.0 + wide));
    }
}

int main()
{
    float *a, *b;
    double *c, *d;
    int n = 1 << 20;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(double));
    cudaMalloc(&d, n * sizeof(double));
    halfLiteral<<<n / 256, 256>>>(a, b, n);
    doubleSqrt<<<n / 256, 256>>>(a, b, n);
    scaledExp<<<n / 256, 256>>>(a, b, n, 2.0f);
    floatLiterals<<<n / 256, 256>>>(a, b, n);
    doubleData<<<n / 256, 256>>>(c, d, n);
    doubleParam<<<n / 256, 256>>>(a, b, n, 0.25);
    rotateFloat<<<n / 512, 256>>>(a, b, n / 2, 0.3f);
    dampedSeries<<<n / 256, 256>>>(a, b, n);
    widenOnPurpose<<<n / 256, 256>>>(a, b, n);
    cudaDeviceSynchronize();
    return 0;
}
