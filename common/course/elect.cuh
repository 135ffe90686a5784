/// @file
/// @brief One lane of a warp, elected with `elect.sync`, for the thread that issues TMA.
///
/// Chapter 06 (`is_elected_leader` in tma_1d.cu) teaches why a TMA issuer is elected this way
/// rather than with `threadIdx.x == 0`; its test checks that the chapter's copy and these agree.
/// CCCL 3.0 has no `cuda::ptx::elect_sync`, hence the inline PTX.
#pragma once

#include <cstdint>

namespace course {

/// [elect]
/// One lane of a converged warp. Every lane of the warp must call it: elect.sync is a
/// warp-wide instruction, and its predicate is true in exactly one lane.
__device__ inline bool elect_one_lane() {
  std::uint32_t elected = 0;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(elected));
  return elected != 0;
}

/// The thread that issues a block's TMA operations: one lane of warp 0. The shuffle makes
/// the warp index warp-uniform, so the compiler knows the whole warp takes the same branch.
__device__ inline bool elect_tma_leader() {
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  return warp_idx == 0 && elect_one_lane();  // every lane of warp 0 executes elect.sync
}
/// [elect]

}  // namespace course
