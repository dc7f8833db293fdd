// Array of structs: each lane reads one field of a 12-byte struct, so a warp touches three times the bytes
// it uses; the structure-of-arrays version is coalesced.
#include <cuda_runtime.h>

struct Particle { float x, y, z; };

// kerncast: block=128
__global__ void moveAos(Particle *p, float dt, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i].x += dt * p[i].y;  // expect: uncoalesced-global
}

// kerncast: block=128
__global__ void moveSoa(float *x, const float *y, float dt, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += dt * y[i];
}

int main()
{
    const int n = 1 << 20;
    Particle *p;
    float *x, *y;
    cudaMalloc(&p, n * sizeof(Particle));
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    moveAos<<<n / 128, 128>>>(p, 0.1f, n);
    moveSoa<<<n / 128, 128>>>(x, y, 0.1f, n);
    cudaDeviceSynchronize();
    return 0;
}
