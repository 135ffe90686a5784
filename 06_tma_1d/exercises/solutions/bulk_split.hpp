// Exercise 06.2 (CPU): which part of a byte range may one bulk copy move? Solution.
//
// The body starts at the first 16-byte boundary at or after the range's start and ends at the
// last boundary at or before its end. The head is at most 15 bytes, the tail too. When the first
// boundary lies beyond the last one, no whole unit fits: the threads copy everything.
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
  const std::uintptr_t end = gmem_addr + num_bytes;
  const std::uintptr_t body_begin = (gmem_addr + kBulkAlignBytes - 1) / kBulkAlignBytes * kBulkAlignBytes;  // round up
  const std::uintptr_t body_end = end / kBulkAlignBytes * kBulkAlignBytes;                                   // round down
  if (body_end <= body_begin) return {num_bytes, 0, 0};  // no whole aligned unit inside: no bulk copy
  return {body_begin - gmem_addr, body_end - body_begin, end - body_end};
}
