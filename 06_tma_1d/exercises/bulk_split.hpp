// Exercise 06.2 (CPU): which part of a byte range may one bulk copy move?
//
// The lesson's arrays obey every rule of cp.async.bulk by construction: 16-byte aligned, whole
// 16-byte units. Real ranges do not: a kernel may need bytes [gmem_addr, gmem_addr + num_bytes)
// of a larger buffer, starting anywhere and of any length. It stages them in shared memory at
// the same offset modulo 16 (the shared buffer is 16-byte aligned and the range lands at
// smem_buffer + gmem_addr % 16), so that the two sides are aligned alike.
// A bulk copy may move only whole 16-byte units between 16-byte aligned addresses (the model's
// rules, tma_1d_model.hpp). So the range is split in three: a head that the threads copy with
// ordinary loads, a body that the leader moves with one bulk copy (and announces on the barrier),
// and a tail that the threads copy again. The range is at most a few hundred KiB: it fits in
// shared memory, so the body never exceeds what one barrier phase can count.
//
// Your task: split_for_bulk() returns the split whose body is as large as the rules allow. When
// no whole aligned unit lies inside the range, there is no bulk copy at all (body 0).
// Check: scripts/exercise.py bulk_split
#pragma once

#include <cstddef>
#include <cstdint>

#include "tma_1d_model.hpp"  // kBulkAlignBytes

struct BulkSplit {
  std::size_t head_bytes;  // copied by the threads, from gmem_addr on
  std::size_t body_bytes;  // one bulk copy, right after the head: what the leader announces
  std::size_t tail_bytes;  // copied by the threads, after the body
};

inline BulkSplit split_for_bulk(std::uintptr_t gmem_addr, std::size_t num_bytes) {
  (void)gmem_addr;
  // TODO: the whole range as one bulk copy is right only for some ranges.
  return {0, num_bytes, 0};
}
