// Included by main.cu, which defines fp and NUMBER_THREADS before the #include.
__global__ void scale(fp *d, long n, fp factor)
{
    long i = blockIdx.x * (long)NUMBER_THREADS + threadIdx.x;
    if (i < n) {
        d[i] *= factor;
    }
}
