// Kerncast calibration harness: shared helpers (JSON-lines output, error checks, event timing).
//
// Every result is one JSON object per line on stdout, so that the Python side can parse the output of a run
// that stopped half-way. A CUDA error prints one {"kind": "error"} line and exits with status 3 (status 2
// when no device or driver is usable at all), never a partial result that looks complete.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kc {

constexpr int kExitNoDevice = 2;
constexpr int kExitCudaError = 3;

// Print `text` as a JSON string literal (quotes and control characters escaped).
inline void json_string(const char *text) {
  std::putchar('"');
  for (const char *p = text; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      std::printf("\\%c", c);
    } else if (c < 0x20) {
      std::printf("\\u%04x", c);
    } else {
      std::putchar(c);
    }
  }
  std::putchar('"');
}

[[noreturn]] inline void fail(const char *where, cudaError_t err, int status = kExitCudaError) {
  std::printf("{\"kind\":\"error\",\"where\":");
  json_string(where);
  std::printf(",\"code\":%d,\"message\":", static_cast<int>(err));
  json_string(cudaGetErrorString(err));
  std::printf("}\n");
  std::fflush(stdout);
  std::exit(status);
}

inline void check(cudaError_t err, const char *where) {
  if (err != cudaSuccess) fail(where, err);
}

#define KC_CHECK(call) ::kc::check((call), #call)

// Median of a copy of `values` (empty -> 0).
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Times launches with CUDA events; the events are created once and reused.
class EventTimer {
 public:
  EventTimer() {
    KC_CHECK(cudaEventCreate(&start_));
    KC_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { KC_CHECK(cudaEventRecord(start_)); }
  // Microseconds since start(); checks the launches in between for errors.
  double stop_us() {
    KC_CHECK(cudaEventRecord(stop_));
    KC_CHECK(cudaEventSynchronize(stop_));
    KC_CHECK(cudaGetLastError());
    float ms = 0.0f;
    KC_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return 1000.0 * ms;
  }

 private:
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

// Device buffer freed when it goes out of scope.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    KC_CHECK(cudaMalloc(reinterpret_cast<void **>(&ptr_), std::max<size_t>(count, 1) * sizeof(T)));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  T *get() const { return ptr_; }
  size_t size() const { return count_; }
  void upload(const std::vector<T> &host) {
    KC_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download(size_t count) const {
    std::vector<T> host(count);
    KC_CHECK(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T *ptr_ = nullptr;
  size_t count_;
};

}  // namespace kc
