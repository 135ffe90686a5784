/// @file
/// @brief Achieved bandwidth (bytes read plus bytes written) and the `cudaMemcpy` device-to-device baseline.
#pragma once

#include <cstddef>
#include <string>

#include "course/buffer.hpp"
#include "course/timing.hpp"

namespace course {

/// A timed run: median time and the bandwidth it implies.
struct Bandwidth {
  double ms = 0;
  double gbps = 0;
};

/// GB/s (10^9 bytes per second) for @p bytes_moved in @p ms milliseconds.
inline double gigabytes_per_second(double bytes_moved, double ms) {
  return ms > 0 ? bytes_moved / (ms * 1e6) : 0.0;
}

/// Times @p launch and converts the median to bandwidth; @p bytes_moved counts reads plus writes.
template <class Launch>
Bandwidth measure_bandwidth(Launch&& launch, std::size_t bytes_moved, int iters) {
  const TimingStats stats = time_events(launch, iters);
  return {stats.median_ms, gigabytes_per_second(static_cast<double>(bytes_moved), stats.median_ms)};
}

/// The reference every chapter compares with: `cudaMemcpy` device-to-device of @p copy_bytes,
/// which reads and writes @p copy_bytes each (2 x copy_bytes moved).
inline Bandwidth measure_memcpy_d2d(std::size_t copy_bytes, int iters) {
  DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  src.fill_bytes(0x5A);
  return measure_bandwidth(
      [&] { COURSE_CHECK(cudaMemcpy(dst.data(), src.data(), copy_bytes, cudaMemcpyDeviceToDevice)); },
      2 * copy_bytes, iters);
}

/// True when a working set of @p bytes would mostly be served from an L2 of @p l2_bytes;
/// benchmarks want at least twice the L2 so that they measure device memory.
inline bool working_set_too_small(std::size_t bytes, std::size_t l2_bytes) { return bytes < 2 * l2_bytes; }

}  // namespace course
