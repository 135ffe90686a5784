/// @file
/// @brief Timing of device work with CUDA events: warm-up, then the median of N runs.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "course/check.hpp"

namespace course {

/// Summary of repeated timings, in milliseconds.
struct TimingStats {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int samples = 0;
};

/// Median, minimum and maximum of @p samples_ms (median of an even count: mean of the middle two).
inline TimingStats summarize(std::vector<double> samples_ms) {
  if (samples_ms.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  TimingStats stats;
  stats.samples = static_cast<int>(n);
  stats.min_ms = samples_ms.front();
  stats.max_ms = samples_ms.back();
  stats.median_ms = n % 2 == 1 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  return stats;
}

/// Times @p launch (which enqueues work on the default stream) with CUDA events:
/// @p warmup untimed calls, then @p iters timed ones, each bracketed by its own events.
template <class Launch>
TimingStats time_events(Launch&& launch, int iters, int warmup = 3) {
  if (iters < 1) throw std::invalid_argument("time_events: iters must be at least 1");
  for (int i = 0; i < warmup; ++i) launch();
  COURSE_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  COURSE_CHECK(cudaEventCreate(&start));
  COURSE_CHECK(cudaEventCreate(&stop));
  std::vector<double> samples;
  samples.reserve(iters);
  for (int i = 0; i < iters; ++i) {
    COURSE_CHECK(cudaEventRecord(start));
    launch();
    COURSE_CHECK(cudaEventRecord(stop));
    COURSE_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    COURSE_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms);
  }
  COURSE_CHECK(cudaEventDestroy(start));
  COURSE_CHECK(cudaEventDestroy(stop));
  return summarize(std::move(samples));
}

}  // namespace course
