// Element-wise addition of two 2D arrays, version 1: threadIdx.x walks rows, so the lanes of a warp touch
// addresses a row apart. Problem of the measurement: 8192 x 8192 floats, 16 x 16 threads per block.
// kerncast: grid=512,512 block=16,16 smem=0 m=8192 n=8192
__global__ void add2d_uncoalesced(const float *a, const float *b, float *c, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int idx = i * m + j;
    if (i < n && j < m) c[idx] = a[idx] + b[idx];
}
