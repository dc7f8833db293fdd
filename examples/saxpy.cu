// SAXPY in a grid-stride loop, and an array-of-structs update whose loads are strided.
#include <cuda_runtime.h>

struct Particle {
    float x, y, z;
    float vx, vy, vz;
};

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

__global__ void advanceParticles(Particle *p, int n, float dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i].x += p[i].vx * dt;
        p[i].y += p[i].vy * dt;
        p[i].z += p[i].vz * dt;
    }
}

int main()
{
    const int n = 1 << 24;
    float *x, *y;
    Particle *p;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&p, n * sizeof(Particle));
    // kerncast: loops=16
    saxpy<<<4096, 256>>>(n, 2.0f, x, y);
    advanceParticles<<<(n + 127) / 128, 128>>>(p, n, 0.01f);
    cudaDeviceSynchronize();
    return 0;
}
