// Exercise 11.1 (CPU): from a carveout percentage to blocks per SM, and back. Solution.
//
// The footprint is static + dynamic + the driver's reservation. A percentage selects the smallest
// capacity that is at least that share of the largest (kib * 100 >= percent * max_kib: integers,
// no rounding error); if one block does not fit there, the driver takes the smallest capacity that
// holds one. Blocks per SM are capacity / footprint, rounded down. The smallest percentage for a
// wanted occupancy is found by trying 0, 1, ..., 100: the first that reaches it. The opt-in: up to
// 48 KiB per block (static included) nothing is needed; beyond it, the opt-in works while static +
// dynamic stays within sharedMemPerBlockOptin.
#pragma once

#include <cstddef>
#include <optional>

#include "carveout_model.hpp"  // SharedCapacities, capacity_table(), shared_capacities(), kKiB

struct BlockShared {
  std::size_t static_bytes;   // the kernel's __shared__ variables (cudaFuncAttributes::sharedSizeBytes)
  std::size_t dynamic_bytes;  // the third <<<...>>> argument
};

inline std::size_t footprint_bytes(const BlockShared& block, std::size_t reserved_bytes) {
  return block.static_bytes + block.dynamic_bytes + reserved_bytes;
}

inline int blocks_per_sm(const SharedCapacities& caps, int percent, std::size_t footprint) {
  int preferred = caps.max_kib();
  for (int kib : caps.kib) {
    if (kib * 100 >= percent * caps.max_kib()) {
      preferred = kib;
      break;
    }
  }
  for (int kib : caps.kib) {
    if (kib >= preferred && static_cast<std::size_t>(kib) * kKiB >= footprint) {
      return static_cast<int>(static_cast<std::size_t>(kib) * kKiB / footprint);
    }
  }
  return 0;  // not even the largest capacity holds one block
}

inline std::optional<int> smallest_percent(const SharedCapacities& caps, std::size_t footprint, int wanted) {
  for (int percent = 0; percent <= 100; ++percent) {
    if (blocks_per_sm(caps, percent, footprint) >= wanted) return percent;
  }
  return std::nullopt;
}

enum class LaunchRule {
  as_is,         // the launch works without any attribute
  after_opt_in,  // only after cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ...)
  impossible,    // no opt-in makes this block fit
};

inline LaunchRule launch_rule(const BlockShared& block, std::size_t optin_limit_bytes) {
  const std::size_t total = block.static_bytes + block.dynamic_bytes;
  if (total <= 48 * kKiB) return LaunchRule::as_is;
  return total <= optin_limit_bytes ? LaunchRule::after_opt_in : LaunchRule::impossible;
}
