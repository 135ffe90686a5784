// Exercise 02.1 (CPU): which instruction a copy call becomes. Solution.
//
// A global -> shared memcpy_async call becomes one of four things, and the library chooses:
//   - one bulk copy (cp.async.bulk, compute capability 9.0): a single instruction for the call;
//   - 16-byte LDGSTS that bypass L1 (cp.async.cg);
//   - 4- or 8-byte LDGSTS through L1 (cp.async.ca);
//   - a synchronous loop of 1- or 2-byte loads and stores through registers.
// What decides is the GPU, the alignment the call proves (from the pointed-to type and from a
// cuda::aligned_size_t<N> size, which the two libraries do not combine the same way), what a
// cuda::memcpy_async completes on, and, for cooperative_groups told less than 4 bytes, the two
// addresses at run time. The chapter page ("Alignment decides the copy") and the lab's rows show
// the rules at work. The test compares your answers with the chapter's model
// (memcpy_async_model.hpp), which restates the libraries' code: write yours without calling it.
//
// Your task: complete proven_alignment(), promise_broken() and choose().
// Check: scripts/exercise.py copy_choice
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace exercise {

enum class Library { cooperative_groups, cuda };  // cooperative_groups:: or cuda::memcpy_async
enum class CompletesOn {
  smem_block_barrier,  // a cuda::barrier<cuda::thread_scope_block> in shared memory
  other,               // a cuda::pipeline, or any other barrier (cuda::memcpy_async only)
};

// One global -> shared call, as the program writes it and as it runs.
struct CopyCall {
  Library library = Library::cuda;
  int sm = 80;                     // compute capability x 10 of the GPU it runs on: 80 or newer
  std::size_t type_align = 1;      // alignof the pointed-to type: 1 for char, 4 for float, 16 for uint4
  std::size_t promised_align = 0;  // N of a cuda::aligned_size_t<N> size; 0 for a plain std::size_t
  CompletesOn completes_on = CompletesOn::other;  // ignored by cooperative_groups
  std::uintptr_t dst = 0, src = 0;                // the addresses at run time
  std::size_t bytes = 0;                          // bytes the call copies
};

enum class Instruction { bulk_copy, ldgsts_bypass_l1, ldgsts_through_l1, synchronous };

struct Choice {
  Instruction instruction = Instruction::synchronous;
  int width_bytes = 0;  // bytes per instruction; for a bulk copy, the whole call
};

// The alignment the call proves at compile time: what the library may assume about dst, src and
// bytes without looking at them. Do not cap it.
inline std::size_t proven_alignment(const CopyCall& call) {
  if (call.library == Library::cuda) return std::max(call.type_align, call.promised_align);  // the larger of the two
  return call.promised_align != 0 ? call.promised_align : call.type_align;  // an aligned size replaces the type
}

// True when the addresses or the size break what the call proves: undefined behaviour, not a
// slower copy.
inline bool promise_broken(const CopyCall& call) {
  const std::size_t align = proven_alignment(call);
  return call.dst % align != 0 || call.src % align != 0 || call.bytes % align != 0;
}

// LDGSTS of `width` bytes: only the 16-byte form bypasses L1.
inline Choice ldgsts(int width) {
  return {width == 16 ? Instruction::ldgsts_bypass_l1 : Instruction::ldgsts_through_l1, width};
}

// What the library emits for the call, and the width of each instruction. cooperative_groups may
// copy a few bytes before and after its LDGSTS through registers: answer with the LDGSTS then.
inline Choice choose(const CopyCall& call) {
  const std::size_t proven = proven_alignment(call);
  const int width = static_cast<int>(std::min<std::size_t>(proven, 16));
  if (call.library == Library::cuda) {
    // Decided at compile time: the addresses never matter.
    if (call.sm >= 90 && proven >= 16 && call.completes_on == CompletesOn::smem_block_barrier) {
      return {Instruction::bulk_copy, static_cast<int>(call.bytes)};
    }
    if (proven >= 4) return ldgsts(width);
    return {Instruction::synchronous, width};
  }
  if (proven >= 4) return ldgsts(width);  // the hint alone decides; never a bulk copy
  // Told 1 or 2 bytes: the widest unit in which the two addresses agree below 16, if the call holds one.
  const std::uintptr_t differ = (call.dst ^ call.src) & 15u;
  int run_time = 16;
  for (int w = 8; w >= static_cast<int>(proven); w >>= 1) {
    if (differ & static_cast<std::uintptr_t>(w)) run_time = w;
  }
  if (call.bytes < static_cast<std::size_t>(run_time)) run_time = width;
  if (run_time < 4) return {Instruction::synchronous, run_time};
  return ldgsts(run_time);
}

}  // namespace exercise
