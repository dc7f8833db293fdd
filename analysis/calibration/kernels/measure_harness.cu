// Kerncast measurement harness: launches one user kernel repeatedly and reports each launch's event time.
//
// `kerncast measure` generates a small file that includes the user's .cu (with its `main` renamed), then this
// file, then a `main` that calls kc_measure::run with the kernel. Parameter types come from the kernel's own
// signature (template deduction), so no C++ parsing is needed: pointer parameters get a device buffer filled
// with ones (zeros for non-arithmetic element types), arithmetic scalars take the values given with --arg
// (default: the number of threads launched for integers, 1 for floating point), other types are zeroed.
//
// Protocol on stdin/stdout (JSON lines out): after setup it prints {"kind":"ready",...}; then each input line
// "run N" launches the kernel N times back to back and prints {"kind":"times","us":[...]}; "quit" ends.
#pragma once

#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>

#include "kc_common.cu"

namespace kc_measure {

struct Options {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  size_t smem = 0;
  long long bytes = -1;
  int device = 0;
  std::map<int, std::string> args;
};

inline dim3 parse_dim(const char *text) {
  unsigned v[3] = {1, 1, 1};
  std::sscanf(text, "%u,%u,%u", &v[0], &v[1], &v[2]);
  return dim3(v[0], v[1], v[2]);
}

inline Options parse_options(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char *value = argv[i + 1];
    if (key == "--grid") {
      o.grid = parse_dim(value);
    } else if (key == "--block") {
      o.block = parse_dim(value);
    } else if (key == "--smem") {
      o.smem = std::strtoull(value, nullptr, 10);
    } else if (key == "--bytes") {
      o.bytes = std::strtoll(value, nullptr, 10);
    } else if (key == "--device") {
      o.device = std::atoi(value);
    } else if (key == "--arg") {
      const std::string a = value;
      const size_t eq = a.find('=');
      if (eq != std::string::npos) o.args[std::atoi(a.substr(0, eq).c_str())] = a.substr(eq + 1);
    }
  }
  return o;
}

inline long long total_threads(const Options &o) {
  return static_cast<long long>(o.grid.x) * o.grid.y * o.grid.z * o.block.x * o.block.y * o.block.z;
}

template <typename E>
__global__ void fill_kernel(E *p, size_t n, E value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = value;
  }
}

struct Setup {
  const Options &opts;
  std::vector<void *> buffers;
  std::string described;  // JSON array body describing each parameter

  void describe(int index, const char *what, const std::string &value) {
    if (!described.empty()) described += ",";
    described += "{\"index\":" + std::to_string(index) + ",\"kind\":\"" + what + "\",\"value\":\"" + value + "\"}";
  }

  template <typename T>
  T make(int index) {
    if constexpr (std::is_pointer_v<T>) {
      using E = std::remove_cv_t<std::remove_pointer_t<T>>;
      constexpr size_t elem = std::is_void_v<E> ? 1 : sizeof(std::conditional_t<std::is_void_v<E>, char, E>);
      const size_t bytes = opts.bytes > 0 ? static_cast<size_t>(opts.bytes) : total_threads(opts) * elem;
      void *p = nullptr;
      KC_CHECK(cudaMalloc(&p, bytes));
      buffers.push_back(p);
      KC_CHECK(cudaMemset(p, 0, bytes));
      if constexpr (std::is_arithmetic_v<E>) {
        fill_kernel<E><<<256, 256>>>(static_cast<E *>(p), bytes / sizeof(E), static_cast<E>(1));
        KC_CHECK(cudaGetLastError());
      }
      describe(index, "buffer", std::to_string(bytes) + " bytes");
      return static_cast<T>(p);
    } else if constexpr (std::is_arithmetic_v<T>) {
      const auto given = opts.args.find(index);
      T value;
      if constexpr (std::is_integral_v<T>) {
        value = given != opts.args.end() ? static_cast<T>(std::strtoll(given->second.c_str(), nullptr, 0))
                                         : static_cast<T>(total_threads(opts));
      } else {
        value = given != opts.args.end() ? static_cast<T>(std::strtod(given->second.c_str(), nullptr))
                                         : static_cast<T>(1);
      }
      describe(index, given != opts.args.end() ? "scalar" : "default", std::to_string(value));
      return value;
    } else {
      describe(index, "zeroed", "");
      return T{};
    }
  }

  ~Setup() {
    for (void *p : buffers) cudaFree(p);
  }
};

template <typename... Args, size_t... I>
std::tuple<std::decay_t<Args>...> make_args(Setup &setup, std::index_sequence<I...>) {
  return std::tuple<std::decay_t<Args>...>{setup.make<std::decay_t<Args>>(static_cast<int>(I))...};
}

template <typename... Args>
int run(int argc, char **argv, void (*kernel)(Args...)) {
  const Options opts = parse_options(argc, argv);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) kc::fail("cudaGetDeviceCount", err, kc::kExitNoDevice);
  if (opts.device < 0 || opts.device >= count) kc::fail("device index", cudaErrorInvalidDevice, kc::kExitNoDevice);
  KC_CHECK(cudaSetDevice(opts.device));
  if (opts.smem > 48 * 1024) {
    KC_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(opts.smem)));
  }
  Setup setup{opts, {}, {}};
  auto values = make_args<Args...>(setup, std::index_sequence_for<Args...>{});
  void *pointers[sizeof...(Args) + 1] = {};
  std::apply([&](auto &...v) {
    int i = 0;
    ((pointers[i++] = static_cast<void *>(&v)), ...);
  }, values);
  auto launch = [&] {
    KC_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), opts.grid, opts.block, pointers, opts.smem,
                              nullptr));
  };
  launch();  // warm-up, and the first check that the launch works at all
  KC_CHECK(cudaDeviceSynchronize());
  cudaDeviceProp prop{};
  KC_CHECK(cudaGetDeviceProperties(&prop, opts.device));
  int driver = 0;
  KC_CHECK(cudaDriverGetVersion(&driver));
  std::printf("{\"kind\":\"ready\",\"device\":");
  kc::json_string(prop.name);
  std::printf(",\"pci_bus_id\":\"%08x:%02x:%02x.0\",\"driver_version\":%d,\"params\":[%s]}\n", prop.pciDomainID,
              prop.pciBusID, prop.pciDeviceID, driver, setup.described.c_str());
  std::fflush(stdout);

  std::vector<cudaEvent_t> events;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("run ", 0) != 0) break;
    const int n = std::max(1, std::atoi(line.c_str() + 4));
    while (events.size() < 2 * static_cast<size_t>(n)) {
      cudaEvent_t e;
      KC_CHECK(cudaEventCreate(&e));
      events.push_back(e);
    }
    for (int i = 0; i < n; ++i) {
      KC_CHECK(cudaEventRecord(events[2 * i]));
      launch();
      KC_CHECK(cudaEventRecord(events[2 * i + 1]));
    }
    KC_CHECK(cudaDeviceSynchronize());
    KC_CHECK(cudaGetLastError());
    std::printf("{\"kind\":\"times\",\"us\":[");
    for (int i = 0; i < n; ++i) {
      float ms = 0.0f;
      KC_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
      std::printf(i ? ",%.3f" : "%.3f", 1000.0 * ms);
    }
    std::printf("]}\n");
    std::fflush(stdout);
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return 0;
}

}  // namespace kc_measure
