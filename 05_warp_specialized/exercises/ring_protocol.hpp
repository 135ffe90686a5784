// Exercise 05.1 (CPU): the arrival counts and the producer's parity of a full/empty ring.
//
// A warp-specialised block hands each buffer of its ring back and forth through two barriers:
// full_bar[stage] (the batch has landed: the producer side signals it, the consumers wait) and
// empty_bar[stage] (the buffer is free: the consumer side signals it, the producer waits). Each
// barrier must be initialised with the arrivals that *its* signalling side makes per phase, and
// those depend on how that side signals:
//   full:  kNoincPerLane    every producer lane copies with LDGSTS and ends with
//                           cp.async.mbarrier.arrive.noinc (the lesson's raw kernel);
//          kCommitPerLane   every producer lane copies with LDGSTS and calls producer_commit(): the
//                           counting cp.async.mbarrier.arrive, then an arrive of its own (the
//                           lesson's partitioned cuda::pipeline);
//          kBulkCopyPerWarp one elected lane per producer warp makes mbarrier.arrive.expect_tx with
//                           the bytes of its warp's share, then issues that share as one bulk copy,
//                           which completes those bytes (TMA, chapters 06 and later);
//   empty: kOnePerWarp      lane 0 of each consumer warp arrives after __syncwarp() (raw kernel);
//          kEveryThread     every consumer thread arrives (consumer_release() of the pipeline).
// Both sides walk the ring with a {stage, phase} cursor; the consumers wait on full_bar for the
// parity of their cursor's phase. The producer, before filling a buffer, waits on empty_bar.
//
// Your task: full_arrivals() and empty_arrivals() for any block shape and signalling scheme, and
// producer_empty_parity(): the parity the producer's wait on empty_bar names, given its cursor's
// phase. The test runs a block's ring on host models of the barriers (course::MbarrierModel) and
// the chapter's own ring (warp_specialized_model.hpp): every phase must complete exactly when its
// last arrival (or byte) comes, and no wait may return before its buffer is full or free.
// Check: scripts/exercise.py ring_protocol
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
  (void)shape;
  return 0;  // TODO: the arrivals that complete one phase of full_bar[stage]
}

inline int empty_arrivals(const RingShape& shape) {
  (void)shape;
  return 0;  // TODO: the arrivals that complete one phase of empty_bar[stage]
}

// The parity the producer waits for on empty_bar[stage] before filling the buffer in the round
// whose parity is `cursor_phase`.
inline std::uint32_t producer_empty_parity(std::uint32_t cursor_phase) {
  return cursor_phase;  // TODO: is this the phase that frees the buffer?
}
