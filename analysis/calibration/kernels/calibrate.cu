// Kerncast calibration harness: runs the microbenchmarks of thesis chapter 3 and section 4.4.5 on one GPU and
// prints every raw result as a JSON line; `kerncast calibrate` builds it with nvcc, fits the models and writes
// the GPU profile.
//
// Usage: kerncast_calibrate [--device N] [--quick] [--only device,clock,compute,memory,global,throughput,launch,atomics]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kc_atomics.cu"
#include "kc_chains.cu"
#include "kc_common.cu"
#include "kc_launch.cu"
#include "kc_memory.cu"

namespace kc {

inline int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  KC_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// The device properties a GPU profile needs, as one JSON line.
inline void report_device(int device, int *sm_count, int *max_warps) {
  cudaDeviceProp p{};
  KC_CHECK(cudaGetDeviceProperties(&p, device));
  int driver = 0, runtime = 0;
  KC_CHECK(cudaDriverGetVersion(&driver));
  KC_CHECK(cudaRuntimeGetVersion(&runtime));
  char pci[32];
  std::snprintf(pci, sizeof pci, "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  std::printf("{\"kind\":\"device\",\"name\":");
  json_string(p.name);
  std::printf(",\"pci_bus_id\":\"%s\",\"major\":%d,\"minor\":%d,\"sm_count\":%d,\"warp_size\":%d,"
              "\"max_threads_per_sm\":%d,\"max_threads_per_block\":%d,\"max_blocks_per_sm\":%d,"
              "\"regs_per_sm\":%d,\"regs_per_block\":%d,\"shared_per_sm\":%zu,\"shared_per_block\":%zu,"
              "\"shared_per_block_optin\":%zu,\"l2_bytes\":%d,\"global_bytes\":%zu,\"bus_width_bits\":%d,"
              "\"clock_khz\":%d,\"memory_clock_khz\":%d,\"driver_version\":%d,\"runtime_version\":%d}\n",
              pci, p.major, p.minor, p.multiProcessorCount, p.warpSize, p.maxThreadsPerMultiProcessor,
              p.maxThreadsPerBlock, p.maxBlocksPerMultiProcessor, p.regsPerMultiprocessor, p.regsPerBlock,
              p.sharedMemPerMultiprocessor, p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.l2CacheSize,
              p.totalGlobalMem, p.memoryBusWidth, attribute(cudaDevAttrClockRate, device),
              attribute(cudaDevAttrMemoryClockRate, device), driver, runtime);
  std::fflush(stdout);
  *sm_count = p.multiProcessorCount;
  *max_warps = p.maxThreadsPerMultiProcessor / p.warpSize;
}

inline bool wanted(const std::string &only, const char *part) {
  if (only.empty()) return true;
  const std::string list = "," + only + ",";
  return list.find("," + std::string(part) + ",") != std::string::npos;
}

}  // namespace kc

int main(int argc, char **argv) {
  int device = 0;
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--device N] [--quick] [--only PARTS]\n", argv[0]);
      return 64;
    }
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) kc::fail("cudaGetDeviceCount", err, kc::kExitNoDevice);
  if (device < 0 || device >= count) kc::fail("device index", cudaErrorInvalidDevice, kc::kExitNoDevice);
  KC_CHECK(cudaSetDevice(device));
  int sm_count = 0, max_warps = 0;
  kc::report_device(device, &sm_count, &max_warps);
  if (kc::wanted(only, "clock")) kc::run_clock(quick);
  if (kc::wanted(only, "compute")) kc::run_compute_benchmarks(sm_count, max_warps, quick);
  if (kc::wanted(only, "memory")) kc::run_small_latencies(quick);
  if (kc::wanted(only, "global")) kc::run_global_latency(quick);
  if (kc::wanted(only, "throughput")) kc::run_memory_throughput(sm_count, quick);
  if (kc::wanted(only, "launch")) kc::run_launch_overhead(quick);
  if (kc::wanted(only, "atomics")) kc::run_atomics(sm_count, quick);
  std::printf("{\"kind\":\"done\"}\n");
  return 0;
}
