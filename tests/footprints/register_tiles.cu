// A register-tiled single-precision matrix product: each 256-thread block computes a 128 x 128 tile of C, each
// thread an 8 x 8 sub-tile, staging 8-wide slices of A (transposed) and B in shared memory through float4 loads.
// Its indices come from the unsigned threadIdx.x, so nvcc writes the thread's row and column in the tile as
// shifts and bit masks (`(threadIdx.x * 8) & 120` for `threadIdx.x % 16 * 8`), and the A and B pointers step
// along K in the loop.
// kerncast: grid=32,32 block=256 smem=0 M=4096 N=4096 K=4096
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
__global__ void registerTiles(int M, int N, int K, const float *A, const float *B, float *C)
{
    __shared__ float As[BK * BM];
    __shared__ float Bs[BK * BN];
    const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    const int ar = threadIdx.x / (BK / 4), ac = threadIdx.x % (BK / 4);
    const int br = threadIdx.x / (BN / 4), bc = threadIdx.x % (BN / 4);
    float acc[TM * TN] = {0.0f};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        float4 t = reinterpret_cast<const float4 *>(&A[ar * K + ac * 4])[0];
        As[(ac * 4 + 0) * BM + ar] = t.x;
        As[(ac * 4 + 1) * BM + ar] = t.y;
        As[(ac * 4 + 2) * BM + ar] = t.z;
        As[(ac * 4 + 3) * BM + ar] = t.w;
        reinterpret_cast<float4 *>(&Bs[br * BN + bc * 4])[0] = reinterpret_cast<const float4 *>(&B[br * N + bc * 4])[0];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int k = 0; k < BK; ++k) {
            for (int i = 0; i < TM; i += 4) {
                float4 v = reinterpret_cast<float4 *>(&As[k * BM + tr * TM + i])[0];
                ra[i] = v.x; ra[i + 1] = v.y; ra[i + 2] = v.z; ra[i + 3] = v.w;
            }
            for (int j = 0; j < TN; j += 4) {
                float4 v = reinterpret_cast<float4 *>(&Bs[k * BN + tc * TN + j])[0];
                rb[j] = v.x; rb[j + 1] = v.y; rb[j + 2] = v.z; rb[j + 3] = v.w;
            }
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4) {
            float4 o = make_float4(acc[i * TN + j], acc[i * TN + j + 1], acc[i * TN + j + 2], acc[i * TN + j + 3]);
            reinterpret_cast<float4 *>(&C[(tr * TM + i) * N + tc * TN + j])[0] = o;
        }
}
