// Kerncast calibration harness: memory latency and throughput (thesis sections 3.3 and 4.4.5).
//
// - Global load latency against threads launched (Table 3.3): every thread chases its own chain of indices
//   (word k holds the address of word (k + T) mod N, so the lanes of a warp read consecutive words and no
//   word is read twice) with ld.global.cg, which bypasses L1 as the thesis's caching-disabled loads did;
//   cycles per load are averaged over all threads of the launch.
// - Shared and constant (param row) latency: one warp chases a chain in shared / constant memory.
// - Global and shared memory throughput against the number of warp-level memory requests (Table 4.5): kernels
//   in which every thread issues m independent 4-byte loads, timed with CUDA events.
#pragma once

#include <cmath>

#include "kc_common.cu"

namespace kc {

constexpr int kChainWords = 1024;

}  // namespace kc

// At file scope so that its PTX name is not mangled and the inline assembly below can take its address.
__constant__ unsigned int kc_const_chain[kc::kChainWords];

namespace kc {

// Every word holds the address of the next one, so a step is one load whose result is the next address.
__global__ void global_chase_kernel(const unsigned long long *start_words, long long *cycles,
                                    unsigned long long *sink, int iterations) {
  const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long p = reinterpret_cast<unsigned long long>(start_words + t);
  const long long start = clock64();
#pragma unroll 4
  for (int i = 0; i < iterations; ++i) {
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
  }
  const long long stop = clock64();
  cycles[t] = stop - start;
  sink[t] = p;
}

// Mean cycles per global load over all threads of a <<<blocks, threads>>> launch.
inline double global_chase(int blocks, int threads) {
  const size_t total = static_cast<size_t>(blocks) * threads;
  const int iterations = total <= 65536 ? 32 : 8;
  const size_t words = total * (iterations + 1);
  DeviceBuffer<unsigned long long> arr(words);
  const unsigned long long base = reinterpret_cast<unsigned long long>(arr.get());
  std::vector<unsigned long long> host(words);
  for (size_t k = 0; k < words; ++k) host[k] = base + 8ull * ((k + total) % words);
  arr.upload(host);
  DeviceBuffer<long long> cycles(total);
  DeviceBuffer<unsigned long long> sink(total);
  global_chase_kernel<<<blocks, threads>>>(arr.get(), cycles.get(), sink.get(), 2);  // warm-up (TLB)
  KC_CHECK(cudaGetLastError());
  global_chase_kernel<<<blocks, threads>>>(arr.get(), cycles.get(), sink.get(), iterations);
  KC_CHECK(cudaGetLastError());
  KC_CHECK(cudaDeviceSynchronize());
  const std::vector<long long> got = cycles.download(total);
  double sum = 0.0;
  for (long long c : got) sum += static_cast<double>(c);
  return sum / static_cast<double>(total) / iterations;
}

// Threads launched for a sweep: about `points` values, geometric from one warp to `max_threads`.
inline std::vector<long long> thread_sweep(long long max_threads, int points) {
  std::vector<long long> out;
  double t = 32.0;
  const double factor = std::pow(static_cast<double>(max_threads) / 32.0, 1.0 / (points - 1));
  for (int i = 0; i < points; ++i, t *= factor) {
    long long rounded = (static_cast<long long>(t + 0.5) + 31) / 32 * 32;
    if (out.empty() || rounded > out.back()) out.push_back(rounded);
  }
  return out;
}

inline void run_global_latency(bool quick) {
  const long long max_threads = 2203648;  // the largest launch of thesis Table 3.3
  for (long long total : thread_sweep(max_threads, quick ? 12 : 64)) {
    const int threads = static_cast<int>(std::min<long long>(256, total));
    const int blocks = static_cast<int>(total / threads);
    const double cycles = global_chase(blocks, threads);
    std::printf("{\"kind\":\"global_latency\",\"threads\":%lld,\"blocks\":%d,\"block\":%d,\"cycles\":%.3f}\n",
                static_cast<long long>(blocks) * threads, blocks, threads, cycles);
    std::fflush(stdout);
  }
}

// One warp follows a chain of 32-bit window addresses in shared (`Shared` true) or constant memory from
// address `a`; lane 0 records the cycles. The two spaces differ only in the load instruction, which inline
// assembly must name literally, so the space is a template parameter resolved at compile time.
template <bool Shared>
__device__ __forceinline__ void timed_window_chase(unsigned int a, int iterations, long long *cycles,
                                                   unsigned int *sink) {
  const long long start = clock64();
#pragma unroll 16
  for (int i = 0; i < iterations; ++i) {
    if constexpr (Shared) {
      asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) : : "memory");
    } else {
      asm volatile("ld.const.u32 %0, [%0];" : "+r"(a) : : "memory");
    }
  }
  const long long stop = clock64();
  if (threadIdx.x == 0) cycles[0] = stop - start;
  sink[threadIdx.x] = a;
}

// The chain holds shared-window addresses, built in the kernel from the next-index table `next`.
__global__ void shared_chase_kernel(const unsigned int *next, long long *cycles, unsigned int *sink,
                                    int iterations) {
  __shared__ unsigned int chain[kChainWords];
  const unsigned int base = static_cast<unsigned int>(__cvta_generic_to_shared(chain));
  for (int i = threadIdx.x; i < kChainWords; i += blockDim.x) chain[i] = base + 4u * next[i];
  __syncthreads();
  timed_window_chase<true>(base + 4u * threadIdx.x, iterations, cycles, sink);
}

__global__ void const_base_kernel(unsigned int *out) {
  unsigned int base;
  asm("mov.u32 %0, kc_const_chain;" : "=r"(base));
  out[0] = base;
}

// The chain holds constant-window addresses (see const_base_kernel), uploaded by the host.
__global__ void const_chase_kernel(long long *cycles, unsigned int *sink, unsigned int first, int iterations) {
  timed_window_chase<false>(first + 4u * threadIdx.x, iterations, cycles, sink);
}

// Cycles per dependent load in shared (`shared` true) or constant memory: one warp, long minus short chain.
inline double small_chase(bool shared, int repeats) {
  std::vector<unsigned int> next(kChainWords);
  for (int k = 0; k < kChainWords; ++k) next[k] = static_cast<unsigned int>((k + 32) % kChainWords);
  DeviceBuffer<unsigned int> table(kChainWords);
  table.upload(next);
  DeviceBuffer<long long> cycles(1);
  DeviceBuffer<unsigned int> sink(32);
  unsigned int const_base = 0;
  if (!shared) {
    const_base_kernel<<<1, 1>>>(sink.get());
    KC_CHECK(cudaGetLastError());
    const_base = sink.download(1)[0];
    std::vector<unsigned int> addresses(kChainWords);
    for (int k = 0; k < kChainWords; ++k) addresses[k] = const_base + 4u * next[k];
    KC_CHECK(cudaMemcpyToSymbol(kc_const_chain, addresses.data(), kChainWords * sizeof(unsigned int)));
  }
  auto run = [&](int iterations) {
    if (shared) {
      shared_chase_kernel<<<1, 32>>>(table.get(), cycles.get(), sink.get(), iterations);
    } else {
      const_chase_kernel<<<1, 32>>>(cycles.get(), sink.get(), const_base, iterations);
    }
    KC_CHECK(cudaGetLastError());
    KC_CHECK(cudaDeviceSynchronize());
    return static_cast<double>(cycles.download(1)[0]);
  };
  run(64);
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back((run(1088) - run(64)) / 1024.0);
  return median(samples);
}

inline void run_small_latencies(bool quick) {
  const int repeats = quick ? 3 : 7;
  std::printf("{\"kind\":\"latency\",\"row\":\"shared\",\"cycles\":%.3f}\n", small_chase(true, repeats));
  std::printf("{\"kind\":\"latency\",\"row\":\"param\",\"cycles\":%.3f}\n", small_chase(false, repeats));
  std::fflush(stdout);
}

__global__ void global_stream_kernel(const float *__restrict__ in, float *out, int loads, long long stride) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int m = 0; m < loads; ++m) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(in + t + m * stride));
    acc += v;
  }
  out[t] = acc;
}

// Loads per thread in one iteration of the shared throughput loop; the sweep's load counts are multiples of it.
constexpr int kSharedLoadsPerIteration = 8;

// Shared-memory throughput: every iteration issues kSharedLoadsPerIteration independent 4-byte loads per thread.
// Lane l of every warp reads word l + 32 j for load j, so the 32 lanes of a request hit the 32 banks once each
// (no bank conflict by construction), and every address is the lane's base plus an immediate offset (multiples
// of 128 bytes, which keep the bank of every lane), so the loop needs no address arithmetic. The loaded values
// are summed two at a time (one three-input add per pair) into two accumulators, about one other instruction
// per load, so issue never limits the loads: one warp request per SM per clock (32 thread loads) is reachable.
// `ld.volatile` keeps ptxas from reusing a value loaded in an earlier iteration.
__global__ void shared_stream_kernel(float *out, int loads) {
  __shared__ unsigned int tile[32 * kSharedLoadsPerIteration];
  for (int i = threadIdx.x; i < 32 * kSharedLoadsPerIteration; i += blockDim.x) tile[i] = static_cast<unsigned>(i);
  __syncthreads();
  const unsigned int base = static_cast<unsigned int>(__cvta_generic_to_shared(tile + (threadIdx.x & 31u)));
  unsigned int acc0 = 0, acc1 = 0;
  for (int m = 0; m < loads; m += kSharedLoadsPerIteration) {
    unsigned int v[kSharedLoadsPerIteration];
#pragma unroll
    for (int j = 0; j < kSharedLoadsPerIteration; ++j) {
      asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v[j]) : "r"(base + 128u * j));
    }
#pragma unroll
    for (int j = 0; j < kSharedLoadsPerIteration; j += 4) {
      acc0 += v[j] + v[j + 1];
      acc1 += v[j + 2] + v[j + 3];
    }
  }
  out[static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x] = static_cast<float>(acc0 + acc1);
}

// Median event time (microseconds) of `repeats` launches after one warm-up.
template <typename Launch>
double timed(Launch launch, int repeats) {
  EventTimer timer;
  launch();
  KC_CHECK(cudaGetLastError());
  KC_CHECK(cudaDeviceSynchronize());
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    timer.start();
    launch();
    us.push_back(timer.stop_us());
  }
  return median(us);
}

inline void report_memory_throughput(const char *space, long long threads, int loads, double time_us) {
  const long long warps = (threads + 31) / 32;
  const double bytes = 4.0 * static_cast<double>(threads) * loads;
  std::printf("{\"kind\":\"memory_throughput\",\"space\":\"%s\",\"threads\":%lld,\"loads_per_thread\":%d,"
              "\"requests\":%lld,\"bytes\":%.0f,\"time_us\":%.4f}\n",
              space, threads, loads, warps * loads, bytes, time_us);
  std::fflush(stdout);
}

inline void run_memory_throughput(int sm_count, bool quick) {
  const int repeats = quick ? 3 : 9;
  const long long max_threads = static_cast<long long>(sm_count) * 2048 * 4;
  const int load_counts[] = {1, 4, 16};
  const long long max_words = max_threads * 16;
  DeviceBuffer<float> in(max_words);
  KC_CHECK(cudaMemset(in.get(), 0, max_words * sizeof(float)));
  DeviceBuffer<float> out(max_threads);
  for (int loads : load_counts) {
    for (long long total : thread_sweep(max_threads, quick ? 8 : 24)) {
      const int threads = static_cast<int>(std::min<long long>(256, total));
      const int blocks = static_cast<int>(total / threads);
      const long long n = static_cast<long long>(blocks) * threads;
      const double g = timed([&] { global_stream_kernel<<<blocks, threads>>>(in.get(), out.get(), loads, n); },
                             repeats);
      report_memory_throughput("global", n, loads, g);
      const int shared_loads = loads * kSharedLoadsPerIteration;
      const double s = timed([&] { shared_stream_kernel<<<blocks, threads>>>(out.get(), shared_loads); }, repeats);
      report_memory_throughput("shared", n, shared_loads, s);
    }
  }
}

}  // namespace kc
