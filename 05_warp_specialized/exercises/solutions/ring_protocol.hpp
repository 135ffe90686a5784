// Exercise 05.1 (CPU): the arrival counts and the producer's parity of a full/empty ring. Solution.
//
// Each barrier counts the side that signals it. An LDGSTS copy belongs to the lane that issued
// it, so every producer lane arrives on full_bar: once through .noinc (which is one of the
// expected arrivals), or once with its own arrive after a counting arrive-on (which adds one
// expected arrival and removes it when the copies land: net zero). A bulk copy is counted in
// bytes, so one elected arrival per producer warp suffices. empty_bar counts whoever releases.
// The producer needs the consumers' release of the buffer's previous round, the phase before its
// cursor's: parity phase ^ 1, which a fresh barrier reports as complete in round 0.
#pragma once

#include <cstdint>

enum class FullSignal { kNoincPerLane, kCommitPerLane, kBulkCopyPerWarp };
enum class EmptySignal { kOnePerWarp, kEveryThread };

struct RingShape {
  int producer_warps;  // warps of 32 lanes that fill the buffers
  int consumer_warps;  // warps of 32 lanes that read them
  FullSignal full;
  EmptySignal empty;
};

inline int full_arrivals(const RingShape& shape) {
  switch (shape.full) {
    case FullSignal::kNoincPerLane:     // the .noinc arrival is the lane's only one
    case FullSignal::kCommitPerLane:    // the arrive-on nets zero; the lane's own arrive counts
      return shape.producer_warps * 32;
    case FullSignal::kBulkCopyPerWarp:  // one elected arrival per warp; the bytes are counted apart
      return shape.producer_warps;
  }
  return 0;
}

inline int empty_arrivals(const RingShape& shape) {
  return shape.empty == EmptySignal::kOnePerWarp ? shape.consumer_warps : shape.consumer_warps * 32;
}

// The parity the producer waits for on empty_bar[stage] before filling the buffer in the round
// whose parity is `cursor_phase`.
inline std::uint32_t producer_empty_parity(std::uint32_t cursor_phase) {
  return cursor_phase ^ 1u;  // the phase before this round's: the release of the previous round
}
