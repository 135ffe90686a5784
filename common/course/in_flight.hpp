/// @file
/// @brief Little's law on the GPU that runs a lesson: the bytes each SM must keep in flight for
/// device memory to deliver its peak, beside the bytes the lesson's launch keeps in flight.
///
/// Chapter 01 teaches the law (bytes in flight = bandwidth x latency). Here the bandwidth comes
/// from the running device (memory clock x bus width, two transfers per clock; a lesson that reads
/// and writes each byte once reads at half of it) and the latency is chapter 01's assumed round
/// figure for a DRAM load under load. A lesson whose stages, stage
/// bytes and blocks per SM keep at least that much in flight is not tuned to one GPU: its
/// program prints the comparison and its tests check it on whatever GPU runs them.
/// `HostInFlight` (common/tests/in_flight_test.cpp) checks it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "course/check.hpp"
#include "course/device.hpp"

namespace course {

/// Chapter 01's latency of a DRAM load under load: an assumption, not a measurement.
constexpr double kAssumedLoadLatencyNs = 600;

/// Peak device-memory bandwidth in GB/s: two transfers per memory clock over the whole bus.
inline double peak_dram_gbps(int mem_clock_mhz, int bus_bits) {
  return 2.0 * mem_clock_mhz * 1e6 * (bus_bits / 8.0) / 1e9;
}

/// What Little's law asks of each SM: read bandwidth x latency, shared among the SMs. A lesson that
/// reads and writes every byte once reads at half the peak (chapter 01's 1.5 of 3 TB/s).
struct InFlightNeed {
  double peak_gbps = 0;
  double read_gbps = 0;
  double latency_ns = 0;
  int num_sms = 0;
  double per_sm_bytes = 0;  ///< GB/s x ns = bytes
};
inline InFlightNeed in_flight_need(double peak_gbps, int num_sms,
                                   double latency_ns = kAssumedLoadLatencyNs) {
  const double read_gbps = peak_gbps / 2;
  return {peak_gbps, read_gbps, latency_ns, num_sms, read_gbps * latency_ns / num_sms};
}
inline InFlightNeed in_flight_need(const DeviceInfo& device) {
  return in_flight_need(peak_dram_gbps(device.mem_clock_mhz, device.mem_bus_bits), device.sm_count);
}

/// What a lesson's launch keeps in flight per SM, and how: "ring: 4 stages x 32 KiB x 1 block per SM".
struct KeptInFlight {
  double per_sm_bytes = 0;
  std::string how;
};

/// "ring: 4 stages x 8 KiB x 6 blocks per SM": the usual product, spelled for the line below.
inline KeptInFlight stages_in_flight(const char* kernel, int stages, std::size_t stage_bytes,
                                     int blocks_per_sm) {
  char how[160];
  std::snprintf(how, sizeof how, "%s: %d stage%s x %g KiB x %d block%s per SM", kernel, stages,
                stages == 1 ? "" : "s", stage_bytes / 1024.0, blocks_per_sm, blocks_per_sm == 1 ? "" : "s");
  return {static_cast<double>(stages) * stage_bytes * blocks_per_sm, how};
}

/// A lesson's launch: its kernel, block and shared memory, and the stages each block fills.
struct InFlightLaunch {
  const char* kernel_name = "";
  const void* kernel = nullptr;  ///< the kernel as launched, e.g. (const void*)ring_kernel<4, 32768>
  int threads = 0;
  std::size_t smem_bytes = 0;  ///< dynamic shared memory per block
  int stages = 0;
  std::size_t stage_bytes = 0;
};

/// How many blocks of `kernel` one SM holds at once with `threads` threads and `smem_bytes` of
/// dynamic shared memory: the occupancy calculator on this device. Above 48 KiB the kernel is
/// opted in first, as its launch must be (chapter 11).
inline int blocks_per_sm(const void* kernel, int threads, std::size_t smem_bytes = 0) {
  if (smem_bytes > 48 * 1024) {
    COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(smem_bytes)));
  }
  int blocks = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem_bytes));
  return blocks;
}

/// A persistent grid: every SM of this device full of `kernel`'s blocks (blocks_per_sm x SMs).
inline unsigned resident_blocks(const void* kernel, int threads, std::size_t smem_bytes = 0) {
  int device = 0, num_sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(num_sms * blocks_per_sm(kernel, threads, smem_bytes));
}

/// The blocks of the launch that one SM holds, times its stages' bytes.
inline KeptInFlight kept_in_flight(const InFlightLaunch& launch) {
  return stages_in_flight(launch.kernel_name, launch.stages, launch.stage_bytes,
                          blocks_per_sm(launch.kernel, launch.threads, launch.smem_bytes));
}

/// One line for a lesson's output, e.g. "bytes in flight per SM: 128.0 KiB kept (ring: 4 stages x
/// 32 KiB x 1 block per SM), 10.7 KiB needed (Little's law: 2407 GB/s of reads, half the 4814 GB/s
/// peak, x 600 ns / 132 SMs): 12.0 x".
inline std::string in_flight_line(const InFlightNeed& need, const KeptInFlight& kept) {
  char line[320];
  std::snprintf(line, sizeof line,
                "bytes in flight per SM: %.1f KiB kept (%s), %.1f KiB needed (Little's law: %.0f GB/s "
                "of reads, half the %.0f GB/s peak, x %.0f ns / %d SMs): %.1f x",
                kept.per_sm_bytes / 1024.0, kept.how.c_str(), need.per_sm_bytes / 1024.0, need.read_gbps,
                need.peak_gbps, need.latency_ns, need.num_sms,
                need.per_sm_bytes > 0 ? kept.per_sm_bytes / need.per_sm_bytes : 0.0);
  return line;
}

}  // namespace course
