// Kerncast calibration harness: kernel launch overhead (thesis section 3.4) and the SM clock under load.
#pragma once

#include "kc_common.cu"
#include "kc_memory.cu"

namespace kc {

__global__ void empty_kernel() {}

// Event time of an empty kernel against threads launched, from one warp to 2^24 threads.
inline void run_launch_overhead(bool quick) {
  const int repeats = quick ? 5 : 25;
  for (long long total : thread_sweep(1ll << 24, quick ? 8 : 40)) {
    const int threads = static_cast<int>(std::min<long long>(256, total));
    const int blocks = static_cast<int>(total / threads);
    const double us = timed([&] { empty_kernel<<<blocks, threads>>>(); }, repeats);
    std::printf("{\"kind\":\"launch\",\"threads\":%lld,\"blocks\":%d,\"block\":%d,\"time_us\":%.4f}\n",
                static_cast<long long>(blocks) * threads, blocks, threads, us);
  }
  std::fflush(stdout);
}

__global__ void spin_kernel(long long cycles, long long *sink) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  sink[0] = now - start;
}

// SM clock in MHz while busy: a kernel that spins for a known number of cycles, timed with events.
inline void run_clock(bool quick) {
  const long long cycles = quick ? 20000000ll : 200000000ll;
  DeviceBuffer<long long> sink(1);
  std::vector<double> mhz;
  for (int r = 0; r < 3; ++r) {
    const double us = timed([&] { spin_kernel<<<1, 1>>>(cycles, sink.get()); }, 1);
    mhz.push_back(static_cast<double>(sink.download(1)[0]) / us);
  }
  std::printf("{\"kind\":\"clock\",\"sm_mhz\":%.2f}\n", median(mhz));
  std::fflush(stdout);
}

}  // namespace kc
