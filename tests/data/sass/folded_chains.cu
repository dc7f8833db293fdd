// Microbenchmarks written the way ptxas sees through: the SASS checks must reject every one of them.
// Compiled with -I analysis/calibration/kernels by tests/test_calibration_sass.py.
#include "kc_chains.cu"

namespace kc {

// `and` with one mask again and again: ptxas keeps one `and` per loop iteration (idempotent)
struct OpAndFolded {
  using T = int;
  using Operand = int;
  static constexpr int per_step = 1;
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int, int) {
    asm volatile("and.b32 %0, %0, %1;" : "+r"(x) : "r"(y));
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return static_cast<unsigned>(x); }
};

// a move of a register onto itself: renamed away
struct OpMovFolded {
  using T = int;
  using Operand = int;
  static constexpr int per_step = 1;
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand, int, int) { asm volatile("mov.b32 %0, %0;" : "+r"(x)); }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return static_cast<unsigned>(x); }
};

// a shuffle of a value every lane already holds: dropped
struct OpShflUniform {
  using T = int;
  using Operand = int;
  static constexpr int per_step = 1;
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int, int) {
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(x) : "r"(y));
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return static_cast<unsigned>(x); }
};

template __global__ void chain_kernel<OpAndFolded, 1>(BlockClock *, unsigned long long *, int, int, int, int);
template __global__ void chain_kernel<OpMovFolded, 1>(BlockClock *, unsigned long long *, int, int, int, int);
template __global__ void chain_kernel<OpShflUniform, 1>(BlockClock *, unsigned long long *, int, int, int, int);

}  // namespace kc

// Shared-memory stream with address arithmetic and a dependent float sum per load: LDS are a fifth of the
// loop's instructions, too few for one warp request per SM per clock.
__global__ void shared_stream_slow(float *out, int loads) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  float acc = 0.0f;
  for (int m = 0; m < loads; ++m) {
    float v;
    const unsigned int slot = (threadIdx.x + 32u * m) & 1023u;
    const unsigned int addr = static_cast<unsigned int>(__cvta_generic_to_shared(tile + slot));
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
    acc += v;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Lanes two words apart: lanes l and l + 16 share a bank (a two-way conflict on every request).
__global__ void shared_stream_conflicted(unsigned int *out, int loads) {
  __shared__ unsigned int tile[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = i;
  __syncthreads();
  const unsigned int base = static_cast<unsigned int>(__cvta_generic_to_shared(tile + 2u * (threadIdx.x & 31u)));
  unsigned int acc0 = 0, acc1 = 0;
  for (int m = 0; m < loads; m += 8) {
    unsigned int v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v[j]) : "r"(base + 256u * j));
#pragma unroll
    for (int j = 0; j < 8; j += 4) {
      acc0 += v[j] + v[j + 1];
      acc1 += v[j + 2] + v[j + 3];
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc0 + acc1;
}

// The lane-replay atomics benchmark with its word chosen by blockIdx: every lane's address is the same as far as
// ptxas can tell, so it combines the warp's lanes into one update (a vote and a population count) and no lane is
// replayed.
__global__ void lane_replay_kernel(unsigned int *words, int iterations) {
  unsigned int *p = words + blockIdx.x * 32u;
#pragma unroll 4
  for (int i = 0; i < iterations; ++i) {
    asm volatile("red.global.add.u32 [%0], 1;" : : "l"(p) : "memory");
  }
}
