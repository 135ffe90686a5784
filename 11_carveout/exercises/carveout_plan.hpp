// Exercise 11.1 (CPU): from a carveout percentage to blocks per SM, and back.
//
// A kernel states a carveout as a percentage of the largest shared-memory capacity of the
// architecture (carveout_model.hpp has the guide's table of capacities). The driver turns it into
// one of the capacities, and how many blocks an SM then holds depends on what each block takes
// from that capacity. The lesson's model answers the forward question for its own kernels; here
// you write the steps yourself, and then answer the question a programmer actually has: which
// percentage is enough for the occupancy I want?
//
// Your tasks:
//   1. footprint_bytes(): the shared memory one resident block takes from the SM: everything the
//      block uses, plus what the driver keeps per block (reservedSharedMemPerBlock, 1 KiB on 9.0).
//   2. blocks_per_sm(): how many blocks of that footprint an SM holds when the kernel asks for
//      `percent` (0 to 100), counting shared memory only. Two rules from the chapter: a percentage
//      that falls between two capacities gets the next larger one, and a preference too small for
//      even one block is raised to the smallest capacity that holds one. 0 when none holds one.
//   3. smallest_percent(): the smallest percentage at which an SM holds at least `wanted` blocks of
//      that footprint (std::nullopt when no percentage does). A small carveout leaves more L1 to
//      the kernel, so the smallest one that reaches the occupancy is the one to ask for.
//   4. launch_rule(): what the host must do before it can launch a block with this much static and
//      dynamic shared memory on a device whose sharedMemPerBlockOptin is `optin_limit_bytes`.
// Use capacity_table()/shared_capacities() for the capacities; write the rules yourself (the test
// compares your answers with the chapter's model and with what the H100 measured in the lab).
// Check: scripts/exercise.py carveout_plan
#pragma once

#include <cstddef>
#include <optional>

#include "carveout_model.hpp"  // SharedCapacities, capacity_table(), shared_capacities(), kKiB

struct BlockShared {
  std::size_t static_bytes;   // the kernel's __shared__ variables (cudaFuncAttributes::sharedSizeBytes)
  std::size_t dynamic_bytes;  // the third <<<...>>> argument
};

inline std::size_t footprint_bytes(const BlockShared& block, std::size_t reserved_bytes) {
  (void)block;
  (void)reserved_bytes;
  return 0;  // TODO 1
}

inline int blocks_per_sm(const SharedCapacities& caps, int percent, std::size_t footprint) {
  (void)caps;
  (void)percent;
  (void)footprint;
  return 0;  // TODO 2
}

inline std::optional<int> smallest_percent(const SharedCapacities& caps, std::size_t footprint, int wanted) {
  (void)caps;
  (void)footprint;
  (void)wanted;
  return std::nullopt;  // TODO 3
}

enum class LaunchRule {
  as_is,         // the launch works without any attribute
  after_opt_in,  // only after cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ...)
  impossible,    // no opt-in makes this block fit
};

inline LaunchRule launch_rule(const BlockShared& block, std::size_t optin_limit_bytes) {
  (void)block;
  (void)optin_limit_bytes;
  return LaunchRule::as_is;  // TODO 4
}
