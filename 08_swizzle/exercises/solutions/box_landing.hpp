// Exercise 08.1 (CPU): where a swizzled box lands, what it occupies, what its barrier expects.
// Solution.
//
// With a swizzle every box row takes a whole span, however narrow the box, so row r starts
// r x span bytes after the box's first byte; the chunk then moves inside its 128-byte row by the
// XOR with that row's place in the pattern, taken from its shared-memory address. The rows of a
// 64B or 32B box share a 128-byte row (two or four of them), and their chunk positions count from
// that row's start, so the XOR is applied to the chunk's position in the 128-byte row, not in the
// box row. The footprint is a span per row: at some place of the pattern the last row's chunks
// move to the far end of its span. The barrier counts what the copy delivers, the box's own
// bytes: announcing the footprint waits for bytes that never come.
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

#include <cstdint>

namespace exercise {
constexpr int kChunkBytes = 16;
constexpr int kRowBytes = 128;
// 32, 64 or 128; 0 without a swizzle.
inline int span_bytes(CUtensorMapSwizzle swizzle) {
  return swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0 : kChunkBytes << static_cast<int>(swizzle);
}
}  // namespace exercise

inline std::uint32_t chunk_landing_byte(CUtensorMapSwizzle swizzle, int inner_bytes, int row, int chunk,
                                        std::uint32_t smem_addr) {
  constexpr int kChunk = exercise::kChunkBytes, kRow = exercise::kRowBytes;
  const int span = exercise::span_bytes(swizzle);
  if (span == 0) return static_cast<std::uint32_t>(row * inner_bytes + chunk * kChunk);
  const auto unswizzled = static_cast<std::uint32_t>(row * span + chunk * kChunk);       // a span per box row
  const std::uint32_t row_start = unswizzled / kRow * kRow;                              // its 128-byte row
  const int position = static_cast<int>(unswizzled % kRow) / kChunk;                     // its chunk in that row
  const int place = static_cast<int>((smem_addr + row_start) / kRow) % (span / kChunk);  // in the pattern
  return row_start + static_cast<std::uint32_t>((position ^ place) * kChunk);
}

inline std::uint32_t box_footprint_bytes(CUtensorMapSwizzle swizzle, int inner_bytes, int rows) {
  const int span = exercise::span_bytes(swizzle);
  return static_cast<std::uint32_t>(rows * (span == 0 ? inner_bytes : span));
}

inline std::uint32_t box_expect_tx_bytes(CUtensorMapSwizzle swizzle, int inner_bytes, int rows) {
  (void)swizzle;  // the swizzle changes where the bytes go, not how many arrive
  return static_cast<std::uint32_t>(rows * inner_bytes);
}
