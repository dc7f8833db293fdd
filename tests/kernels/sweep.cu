// Cyclic sweeps for the L2 reuse model: every thread walks the whole buffer `reps` times in grid-stride order,
// so each element is re-read once per repetition, at a reuse distance of the buffer's size.
__global__ void sweep(const float *x, float *out, int n, int reps)
{
    float s = 0.0f;
    for (int r = 0; r < reps; ++r) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
            s += x[i];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
