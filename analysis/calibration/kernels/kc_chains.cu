// Kerncast calibration harness: dependent-chain latency and ILP 1-3 throughput of each instruction class
// (thesis section 3.2, Tables 3.1 and 3.2).
//
// Latency: one warp runs a dependent chain; the cycle count of a short and a long chain are subtracted so the
// fixed cost of reading the clock and entering the loop cancels. Throughput: every SM runs w warps of ILP
// independent chains; each block records its SM id and clock64 at start and end, and the instructions an SM
// executed are divided by that SM's busy cycles (max end - min start over its blocks). The median over SMs is
// reported as thread-instructions per cycle per SM, the unit of thesis Table 3.1.
#pragma once

#include <map>

#include "kc_common.cu"
#include "kc_ops.cu"

namespace kc {

constexpr int kUnroll = 16;
// the run-time value of every Op's guard predicate operand (see kc_ops.cu): non-zero, so every step runs
constexpr int kGuard = 1;

struct BlockClock {
  unsigned int smid;
  unsigned int warps;
  long long start;
  long long stop;
};

__device__ __forceinline__ unsigned int sm_id() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

template <class Op, int ILP>
__global__ void __launch_bounds__(1024) chain_kernel(BlockClock *clocks, unsigned long long *sink,
                                                     typename Op::T seed, typename Op::Operand operand,
                                                     int guard, int iterations) {
  const typename Op::Operand y = Op::prepare(operand);
  typename Op::T v[ILP];
#pragma unroll
  for (int k = 0; k < ILP; ++k) v[k] = Op::start(seed);
  __syncthreads();
  const long long start = clock64();
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int r = 0; r < kUnroll; ++r) {
#pragma unroll
      for (int k = 0; k < ILP; ++k) Op::step(v[k], y, guard, k);
    }
  }
  __syncthreads();
  const long long stop = clock64();
  unsigned long long acc = 0;
#pragma unroll
  for (int k = 0; k < ILP; ++k) acc ^= Op::bits(v[k]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) clocks[blockIdx.x] = BlockClock{sm_id(), blockDim.x / 32, start, stop};
}

struct ChainRun {
  std::vector<BlockClock> clocks;
};

template <class Op, int ILP>
ChainRun run_chain(int blocks, int threads, int iterations) {
  DeviceBuffer<BlockClock> clocks(blocks);
  DeviceBuffer<unsigned long long> sink(static_cast<size_t>(blocks) * threads);
  chain_kernel<Op, ILP><<<blocks, threads>>>(clocks.get(), sink.get(), Op::seed(), Op::operand(), kGuard,
                                              iterations);
  KC_CHECK(cudaGetLastError());
  KC_CHECK(cudaDeviceSynchronize());
  return ChainRun{clocks.download(blocks)};
}

// Cycles per dependent instruction: difference of a long and a short chain run by one warp.
template <class Op>
double chain_latency(int repeats) {
  const int short_iters = 8;
  const int long_iters = 72;
  run_chain<Op, 1>(1, 32, short_iters);  // warm-up: instruction cache and clocks
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const BlockClock a = run_chain<Op, 1>(1, 32, short_iters).clocks[0];
    const BlockClock b = run_chain<Op, 1>(1, 32, long_iters).clocks[0];
    const double extra = static_cast<double>((b.stop - b.start) - (a.stop - a.start));
    samples.push_back(extra / (static_cast<double>(long_iters - short_iters) * kUnroll * Op::per_step));
  }
  return median(samples);
}

struct SmThroughput {
  double warps_per_sm;
  double per_cycle_per_sm;
};

// Thread-instructions per cycle per SM, median over the SMs, with `warps` warps resident on each SM.
template <class Op, int ILP>
SmThroughput chain_throughput(int sm_count, int warps, int iterations) {
  const int blocks_per_sm = warps > 32 ? 2 : 1;
  const int threads = 32 * (warps / blocks_per_sm);
  const ChainRun run = run_chain<Op, ILP>(sm_count * blocks_per_sm, threads, iterations);
  struct Span {
    long long start = 0, stop = 0;
    double warps = 0;
    bool used = false;
  };
  std::map<unsigned int, Span> per_sm;
  for (const BlockClock &c : run.clocks) {
    Span &s = per_sm[c.smid];
    s.start = s.used ? std::min(s.start, c.start) : c.start;
    s.stop = s.used ? std::max(s.stop, c.stop) : c.stop;
    s.warps += c.warps;
    s.used = true;
  }
  const double instr_per_warp = 32.0 * iterations * kUnroll * ILP * Op::per_step;
  std::vector<double> rates, warp_counts;
  for (const auto &[sm, s] : per_sm) {
    if (s.stop > s.start) rates.push_back(instr_per_warp * s.warps / static_cast<double>(s.stop - s.start));
    warp_counts.push_back(s.warps);
  }
  return SmThroughput{median(warp_counts), median(rates)};
}

// The warp counts per SM the throughput sweep visits (thesis Figure 3.1 sweeps active warps).
inline std::vector<int> warp_sweep(int max_warps, bool quick) {
  std::vector<int> out;
  const int step = quick ? 8 : 2;
  for (int w = 1; w <= max_warps; w = (w < 4 ? w + 1 : w + step)) {
    if (w > 32 && w % 2) continue;
    out.push_back(w);
  }
  return out;
}

template <class Op>
void report_latency(int repeats) {
  std::printf("{\"kind\":\"latency\",\"row\":\"%s\",\"cycles\":%.3f}\n", Op::row, chain_latency<Op>(repeats));
  std::fflush(stdout);
}

template <class Op, int ILP>
void report_throughput_ilp(int sm_count, int max_warps, bool quick) {
  const int iterations = quick ? 4 : 16;
  chain_throughput<Op, ILP>(sm_count, 4, 1);  // warm-up
  for (int w : warp_sweep(max_warps, quick)) {
    const SmThroughput t = chain_throughput<Op, ILP>(sm_count, w, iterations);
    std::printf("{\"kind\":\"throughput\",\"row\":\"%s\",\"ilp\":%d,\"warps_per_sm\":%.2f,"
                "\"per_cycle_per_sm\":%.4f}\n",
                Op::row, ILP, t.warps_per_sm, t.per_cycle_per_sm);
  }
  std::fflush(stdout);
}

template <class Op>
void report_throughput(int sm_count, int max_warps, bool quick) {
  report_throughput_ilp<Op, 1>(sm_count, max_warps, quick);
  report_throughput_ilp<Op, 2>(sm_count, max_warps, quick);
  report_throughput_ilp<Op, 3>(sm_count, max_warps, quick);
}

// Latency and throughput of every compute class; `sync` and `atom` get a latency only.
inline void run_compute_benchmarks(int sm_count, int max_warps, bool quick) {
  const int repeats = quick ? 3 : 7;
#define KC_COMPUTE(OP)                                \
  report_latency<OP>(repeats);                        \
  report_throughput<OP>(sm_count, max_warps, quick);
  KC_COMPUTE(OpAddf)
  KC_COMPUTE(OpSubf)
  KC_COMPUTE(OpMulf)
  KC_COMPUTE(OpAdds)
  KC_COMPUTE(OpSubs)
  KC_COMPUTE(OpMul)
  KC_COMPUTE(OpAnd)
  KC_COMPUTE(OpLogic)
  KC_COMPUTE(OpFma)
  KC_COMPUTE(OpMads)
  KC_COMPUTE(OpDivf)
  KC_COMPUTE(OpDivs)
  KC_COMPUTE(OpSqrt)
  KC_COMPUTE(OpSfu)
  KC_COMPUTE(OpMov)
  KC_COMPUTE(OpCvt)
  KC_COMPUTE(OpSetp)
  KC_COMPUTE(OpShfl)
  KC_COMPUTE(OpMma)
#undef KC_COMPUTE
  report_latency<OpAtom>(repeats);
  report_latency<OpSync>(repeats);
}

}  // namespace kc
