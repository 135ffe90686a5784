/// @file
/// @brief Chapter 11: what the driver granted. The runtime reports a kernel's carveout
/// *preference* (cudaFuncGetAttributes); the capacity it chose shows only as blocks per SM.
/// This header counts them twice: as the occupancy API plans them, and as the SMs held them
/// (every block counts itself in and out on its SM), and prints both next to the host model.
#pragma once

#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "carveout_model.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"

constexpr int kMaxSmIds = 1024;  // %smid is below this on every GPU the course targets
constexpr int kProbeThreads = 64;

/// [residency_probe]
// Every block counts itself in on its SM, records the peak, stays for `hold_ns` so that the
// blocks the SM can hold at once overlap, and counts itself out. Its dynamic shared memory is
// never touched: only its size matters, because it decides how many blocks fit.
template <Api kApi>
__global__ void residency_kernel(int* live_per_sm, int* peak_per_sm, unsigned long long hold_ns) {
  if (threadIdx.x != 0) return;
  const std::uint32_t sm = cuda::ptx::get_sreg_smid();
  if (sm >= kMaxSmIds) return;
  const int now = atomicAdd(&live_per_sm[sm], 1) + 1;
  atomicMax(&peak_per_sm[sm], now);
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (cuda::ptx::get_sreg_globaltimer() - start < hold_ns) {
  }
  atomicSub(&live_per_sm[sm], 1);
}
/// [residency_probe]

struct Granted {
  int preference = 0;     // cudaFuncAttributes::preferredShmemCarveout: what was asked
  int occupancy_api = 0;  // cudaOccupancyMaxActiveBlocksPerMultiprocessor: what the driver plans
  int measured_min = 0;   // blocks resident together, over the SMs: what happened
  int measured_max = 0;
};

/// [measure_granted]
// Call after setting the kernel's preference: the occupancy query and the launch both see it.
template <Api kApi>
inline Granted measure_granted(std::size_t dynamic_bytes) {
  const auto kernel = residency_kernel<kApi>;
  Granted granted;
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  granted.preference = attributes.preferredShmemCarveout;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&granted.occupancy_api, kernel, kProbeThreads,
                                                              dynamic_bytes));
  int device = 0, num_sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  course::DeviceBuffer<int> live(kMaxSmIds), peak(kMaxSmIds);
  live.fill_bytes(0);
  peak.fill_bytes(0);
  // 40 blocks per SM for every block the SM could hold at most: the peak is reached everywhere.
  kernel<<<num_sms * 40, kProbeThreads, dynamic_bytes>>>(live.data(), peak.data(), 20000);
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<int> per_sm(kMaxSmIds);
  peak.download(per_sm.data());
  granted.measured_min = kMaxSmIds;
  for (int count : per_sm) {
    if (count == 0) continue;  // an SM id that does not exist
    granted.measured_min = std::min(granted.measured_min, count);
    granted.measured_max = std::max(granted.measured_max, count);
  }
  return granted;
}
/// [measure_granted]

/// [granted_table]
// A block of 30 KiB dynamic shared memory (31 KiB with the driver's reservation) under each
// setting: what the model predicts, what the occupancy API plans, what the SMs really held.
inline void print_granted(std::ostream& log) {
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::size_t dynamic_bytes = 30 * kKiB;
  const std::size_t block_bytes = dynamic_bytes + prop.reservedSharedMemPerBlock;
  const int other_limit = std::min(prop.maxBlocksPerMultiProcessor, prop.maxThreadsPerMultiProcessor / kProbeThreads);
  const std::optional<SharedCapacities> caps = shared_capacities(prop.major, prop.minor);
  log << "shared memory on this device: " << format_kib(prop.sharedMemPerMultiprocessor / double(kKiB))
      << " per SM at most, " << format_kib(prop.sharedMemPerBlock / double(kKiB)) << " per block without opt-in, "
      << format_kib(prop.sharedMemPerBlockOptin / double(kKiB)) << " with it, "
      << format_kib(prop.reservedSharedMemPerBlock / double(kKiB)) << " reserved by the driver per block\n";
  if (!caps) log << "compute capability " << prop.major << '.' << prop.minor << " is not in the guide's table\n";
  log << "what the driver granted to a block of " << format_kib(dynamic_bytes / double(kKiB)) << " (+"
      << format_kib(prop.reservedSharedMemPerBlock / double(kKiB)) << " reserved), in blocks per SM:\n"
      << "  " << std::left << std::setw(58) << "setting" << std::right
      << "   asks for  model: capacity  blocks  occupancy API  measured\n";
  auto row = [&](const std::string& label, std::optional<int> percent, const Granted& g) {
    std::ostringstream line;
    line << "  " << std::left << std::setw(58) << label << std::right;
    std::optional<int> capacity;
    if (caps && percent) capacity = launch_capacity_kib(*caps, *percent, block_bytes);
    line << std::setw(11) << (caps && percent ? format_kib(caps->max_kib() * *percent / 100.0) : "-")
         << std::setw(17) << (capacity ? format_kib(*capacity) : "-") << std::setw(8)
         << (capacity ? std::to_string(std::min(other_limit, blocks_per_sm_by_shared_memory(*capacity, block_bytes)))
                      : "-")
         << std::setw(15) << g.occupancy_api << std::setw(10)
         << (g.measured_min == g.measured_max ? std::to_string(g.measured_max)
                                              : std::to_string(g.measured_min) + ".." + std::to_string(g.measured_max))
         << '\n';
    log << line.str();
  };
  for (int carveout : {int{cudaSharedmemCarveoutDefault}, int{cudaSharedmemCarveoutMaxL1}, 10, 15, 50, 58, 75,
                       int{cudaSharedmemCarveoutMaxShared}}) {
    COURSE_CHECK(cudaFuncSetAttribute(residency_kernel<Api::attribute>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      carveout));
    const std::optional<int> percent = carveout >= 0 ? std::optional<int>(carveout) : std::nullopt;
    row("cudaFuncSetAttribute " + carveout_name(carveout), percent, measure_granted<Api::attribute>(dynamic_bytes));
  }
  for (auto [config, name] : {std::pair{cudaFuncCachePreferL1, "PreferL1"}, std::pair{cudaFuncCachePreferEqual, "PreferEqual"},
                              std::pair{cudaFuncCachePreferShared, "PreferShared"}}) {
    COURSE_CHECK(cudaFuncSetCacheConfig(residency_kernel<Api::cache_config>, config));
    row(std::string("cudaFuncSetCacheConfig ") + name, std::nullopt, measure_granted<Api::cache_config>(dynamic_bytes));
  }
}
/// [granted_table]
