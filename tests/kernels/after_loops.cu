// Addresses built from what an earlier loop left behind, from an unrolled loop's derived counter, from a signed
// index divided by a power of two, from a bit-field insert, from an index split by parameters and rebuilt and
// from an index divided by a parameter. Every kernel is launched from main with a
// known block, so every address can be placed lane by lane.

// A Blelloch scan of 2 * 256 elements: the down-sweep's stride starts where the up-sweep's ended.
__global__ void blellochScan(float *data)
{
    __shared__ float s[512];
    unsigned t = threadIdx.x;
    s[t] = data[t];
    s[t + 256] = data[t + 256];
    unsigned stride = 1;
    for (unsigned d = blockDim.x; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            s[stride * (2 * t + 2) - 1] += s[stride * (2 * t + 1) - 1];  // expect: shared-bank-conflict
        }
        stride *= 2;
    }
    if (t == 0) s[2 * blockDim.x - 1] = 0.0f;
    for (unsigned d = 1; d <= blockDim.x; d *= 2) {
        stride >>= 1;
        __syncthreads();
        if (t < d) {
            unsigned ai = stride * (2 * t + 1) - 1;
            unsigned bi = stride * (2 * t + 2) - 1;
            float x = s[ai];  // expect: shared-bank-conflict
            s[ai] = s[bi];  // expect: shared-bank-conflict
            s[bi] += x;  // expect: shared-bank-conflict
        }
    }
    __syncthreads();
    data[t] = s[t];
    data[t + 256] = s[t + 256];
}

// A loop nvcc unrolls by hand-written 4: the fourth load's counter is recomputed from the first each time.
__global__ void fourPerStep(const float *in, float *out, int n)
{
    float acc = 0.0f;
    int col = threadIdx.x;
    for (; col + 3 * blockDim.x < n; col += 4 * blockDim.x) {
        acc += in[col] + in[col + blockDim.x] + in[col + 2 * blockDim.x] + in[col + 3 * blockDim.x];
    }
    out[threadIdx.x] = acc;
}

// A signed index divided by 64: nvcc rounds toward zero with the index's sign bit.
__global__ void perWord(const unsigned long long *in, unsigned long long *out, int n)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = in[1 + idx / 64];
}

// 4 * row + (x & 3), which nvcc writes as a bit-field insert.
__global__ void quads(const short *in, short *out, int width)
{
    int x = threadIdx.x;
    int row = blockIdx.y * 4 + (x >> 2);
    out[row * width + (blockIdx.x * 4 | (x & 3))] = in[row * width + (blockIdx.x * 4 | (x & 3))];  // expect: uncoalesced-global
}

// An index split into three by two parameters and put together again (i / S / N, i / N % S, i % N): the
// output of a gate over the middle dimension, whose input has that dimension twice.
__global__ void splitIndex(const float *in, float *out, int M, int S, int N)
{
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= M * S * N) return;
    const int i = index / S / N;
    const int j = index / N % S;
    const int k = index % N;
    const float a = in[i * 2 * S * N + j * N + k];
    const float g = in[i * 2 * S * N + (j + S) * N + k];
    out[i * S * N + j * N + k] = a / (1.0f + expf(-g));
}

// Each element scaled by its row's factor: lanes read the same or the next factor, whatever the row length.
__global__ void rowScale(const float *in, const float *scale, float *out, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * scale[i / cols];
}

// sin of a double reads its coefficient table at the quadrant its slow path returns: a call's result.
__global__ void sines(double *out, double step)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = sin(step * i);
}

int main(int argc, char **argv)
{
    float *f = 0;
    unsigned long long *w = 0;
    short *h = 0;
    blellochScan<<<64, 256>>>(f);
    fourPerStep<<<1, 256>>>(f, f, 1 << 20);
    perWord<<<4096, 256>>>(w, w, 1 << 20);
    quads<<<dim3(64, 64), 64>>>(h, h, 1024);
    int s = argc + 1, n = 2 * argc;  // known only when it runs
    splitIndex<<<4096, 256>>>(f, f, s, s, n);
    rowScale<<<4096, 256>>>(f, f, f, n);
    double *d = 0;
    sines<<<4096, 256>>>(d, 0.5);
    return 0;
}
