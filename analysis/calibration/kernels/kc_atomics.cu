// Kerncast calibration harness: global atomics that many threads aim at few addresses (timing/atomics.py).
//
// - Same-address rate: one lane of every warp adds 1 to one word, many times, over a launch that fills the GPU;
//   the L2 performs the updates to that word one after another, so updates / (event time x SM clock) is the
//   rate per clock. Only one lane per warp makes the atomic, so no warp replays same-address lanes and the
//   compiler has no lanes to combine.
// - Same-address lanes of one warp: one warp per SM adds 1 to its own 128-byte line of words, groups of `lanes`
//   consecutive lanes sharing one word; the address comes from the thread index, so ptxas cannot prove it the
//   same in every lane and leaves the lanes to the hardware, which replays the instruction once per further
//   lane. Cycles per instruction against lanes per address: its slope is the cycles one further lane holds a
//   warp.
#pragma once

#include "kc_common.cu"
#include "kc_memory.cu"

namespace kc {

constexpr int kAtomicUnroll = 4;

__global__ void same_address_kernel(unsigned int *word, int iterations) {
  if ((threadIdx.x & 31) != 0) return;
#pragma unroll kAtomicUnroll
  for (int i = 0; i < iterations; ++i) {
    asm volatile("red.global.add.u32 [%0], 1;" : : "l"(word) : "memory");
  }
}

__global__ void lane_replay_kernel(unsigned int *words, int lanes, int iterations) {
  const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int *p = words + (t >> 5) * 32u + (t & 31u) / static_cast<unsigned int>(lanes);
#pragma unroll kAtomicUnroll
  for (int i = 0; i < iterations; ++i) {
    asm volatile("red.global.add.u32 [%0], 1;" : : "l"(p) : "memory");
  }
}

inline void run_atomics(int sm_count, bool quick) {
  const int repeats = quick ? 3 : 9;
  DeviceBuffer<unsigned int> word(1);
  KC_CHECK(cudaMemset(word.get(), 0, sizeof(unsigned int)));
  const int iterations = quick ? 64 : 256;
  for (int blocks_per_sm : {1, 4, 8}) {
    const int blocks = sm_count * blocks_per_sm;
    const int threads = 256;
    const double us = timed([&] { same_address_kernel<<<blocks, threads>>>(word.get(), iterations); }, repeats);
    const long long warps = static_cast<long long>(blocks) * threads / 32;
    std::printf("{\"kind\":\"atomic_same_address\",\"warps\":%lld,\"updates\":%lld,\"time_us\":%.4f}\n", warps,
                warps * iterations, us);
  }
  DeviceBuffer<unsigned int> words(static_cast<size_t>(sm_count) * 32);
  KC_CHECK(cudaMemset(words.get(), 0, static_cast<size_t>(sm_count) * 32 * sizeof(unsigned int)));
  const int replay_iterations = quick ? 64 : 512;
  for (int lanes : {1, 2, 4, 8, 16, 32}) {
    const double us = timed([&] { lane_replay_kernel<<<sm_count, 32>>>(words.get(), lanes, replay_iterations); },
                            repeats);
    std::printf("{\"kind\":\"atomic_lanes\",\"lanes_per_address\":%d,\"warps\":%d,\"instructions_per_warp\":%d,"
                "\"time_us\":%.4f}\n", lanes, sm_count, replay_iterations, us);
  }
  std::fflush(stdout);
}

}  // namespace kc
