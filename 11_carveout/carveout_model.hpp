/// @file
/// @brief Chapter 11's host model of the carveout: the capacities each architecture can select
/// (the programming guide's Table 32), how a percentage maps to one of them, how many blocks of
/// a given size that leaves room for, and the names of the three enums. Host code only: the
/// lesson (carveout.cu) and the lab print it next to what the driver granted; tested on the CPU
/// (carveout_test.cu, Host* suites).
///
/// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html#compute-capabilities-table-shared-memory-capacity-per-compute-capability
///        https://docs.nvidia.com/cuda/cuda-programming-guide/03-advanced/advanced-kernel-programming.html#configuring-l1-shared-memory-balance
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

constexpr std::size_t kKiB = 1024;

/// [capacity_table]
struct SharedCapacities {
  int major;
  int minor;              // -1: every minor version (10.x, 12.x)
  int unified_kib;        // L1 + shared memory per SM
  std::vector<int> kib;   // shared-memory capacities per SM a carveout can select, ascending
  int max_kib() const { return kib.back(); }  // what a percentage is a percentage of
};

inline const std::vector<SharedCapacities>& capacity_table() {
  static const std::vector<SharedCapacities> table = {
      {7, 5, 96, {32, 64}},
      {8, 0, 192, {0, 8, 16, 32, 64, 100, 132, 164}},
      {8, 6, 128, {0, 8, 16, 32, 64, 100}},
      {8, 7, 192, {0, 8, 16, 32, 64, 100, 132, 164}},
      {8, 9, 128, {0, 8, 16, 32, 64, 100}},
      {9, 0, 256, {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}},
      {10, -1, 256, {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}},
      {11, 0, 256, {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}},
      {12, -1, 128, {0, 8, 16, 32, 64, 100}},
  };
  return table;
}

inline std::optional<SharedCapacities> shared_capacities(int major, int minor) {
  for (const SharedCapacities& row : capacity_table()) {
    if (row.major == major && (row.minor == -1 || row.minor == minor)) return row;
  }
  return std::nullopt;  // not in the guide's table: ask the device, do not guess
}
/// [capacity_table]

/// [carveout_rounding]
// A carveout is an integer percentage of the largest capacity, or "no preference".
inline std::optional<std::string> carveout_problem(int carveout) {
  if (carveout == cudaSharedmemCarveoutDefault || (carveout >= 0 && carveout <= 100)) return std::nullopt;
  return "a carveout is a percentage from 0 (cudaSharedmemCarveoutMaxL1) to 100 (cudaSharedmemCarveoutMaxShared), "
         "or -1 (cudaSharedmemCarveoutDefault); got " + std::to_string(carveout);
}

// The capacity a percentage selects: the smallest supported one that is at least `percent` %
// of the largest. Between two capacities, the next larger one wins (12.0: 50 % -> 64 KiB).
inline int preferred_capacity_kib(const SharedCapacities& caps, int percent) {
  for (int kib : caps.kib) {
    if (kib * 100 >= percent * caps.max_kib()) return kib;
  }
  return caps.max_kib();
}

// The preference is a hint: when one block (its shared memory plus the driver's reservation)
// does not fit the preferred capacity, the driver takes the smallest capacity that fits it.
inline std::optional<int> launch_capacity_kib(const SharedCapacities& caps, int percent,
                                              std::size_t block_bytes) {
  const int preferred = preferred_capacity_kib(caps, percent);
  for (int kib : caps.kib) {
    if (kib >= preferred && static_cast<std::size_t>(kib) * kKiB >= block_bytes) return kib;
  }
  return std::nullopt;  // the block does not fit in any capacity
}

inline int blocks_per_sm_by_shared_memory(int capacity_kib, std::size_t block_bytes) {
  return static_cast<int>(static_cast<std::size_t>(capacity_kib) * kKiB / block_bytes);
}
/// [carveout_rounding]

// Blocks per SM the model predicts at `percent` for blocks of `block_bytes` (their shared memory
// plus the driver's reservation), when other limits (threads, blocks per SM) allow `other_limit`;
// nothing when no capacity holds one block.
inline std::optional<int> model_blocks_per_sm(const SharedCapacities& caps, int percent, std::size_t block_bytes,
                                              int other_limit) {
  const std::optional<int> capacity = launch_capacity_kib(caps, percent, block_bytes);
  if (!capacity) return std::nullopt;
  const int by_shared_memory = blocks_per_sm_by_shared_memory(*capacity, block_bytes);
  return by_shared_memory < other_limit ? by_shared_memory : other_limit;
}

inline std::string carveout_name(int carveout) {
  if (carveout == cudaSharedmemCarveoutDefault) return "cudaSharedmemCarveoutDefault (-1)";
  if (carveout == cudaSharedmemCarveoutMaxL1) return "cudaSharedmemCarveoutMaxL1 (0%)";
  if (carveout == cudaSharedmemCarveoutMaxShared) return "cudaSharedmemCarveoutMaxShared (100%)";
  return std::to_string(carveout) + "%";
}

inline std::string format_kib(double kib) {
  std::ostringstream out;
  out << std::setprecision(kib == static_cast<int>(kib) ? 0 : 1) << std::fixed << kib << " KiB";
  return out.str();
}

inline void print_host_model(std::ostream& out) {
  out << "shared-memory capacities a carveout can select (KiB per SM; guide, Table 32):\n";
  for (const SharedCapacities& row : capacity_table()) {
    std::ostringstream cc, sizes;
    cc << row.major << '.' << (row.minor < 0 ? std::string("x") : std::to_string(row.minor));
    for (int kib : row.kib) sizes << (sizes.tellp() > 0 ? ", " : "") << kib;
    out << "  " << std::left << std::setw(6) << cc.str() << std::right << sizes.str() << "  (L1 + shared: "
        << row.unified_kib << ")\n";
  }
  const SharedCapacities cc12 = *shared_capacities(12, 0);
  out << "a percentage rounds up to the next capacity: 12.0 at 50% asks for " << format_kib(cc12.max_kib() * 0.5)
      << " and gets " << format_kib(preferred_capacity_kib(cc12, 50)) << "\n";
}
