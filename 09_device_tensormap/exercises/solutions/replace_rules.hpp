// Exercise 09.2 (CPU): the rules a retargeted map must pass. Solution.
//
// Address: not null (the course's own rule; the driver accepts null) and 16-byte aligned. Every
// dimension 1 to 2^32 elements, every box dimension 1 to 256. The row stride a multiple of 16 bytes,
// below 2^40, and at least one row's bytes (shorter strides make rows overlap: this course refuses
// that, the driver does not). A box row, box_cols x 4 bytes, a multiple of 16.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct RetargetValues {
  std::uintptr_t global_address;   // element (0, 0) of the matrix
  std::uint64_t cols;              // globalDim[0], elements per row
  std::uint64_t rows;              // globalDim[1]
  std::uint64_t row_stride_bytes;  // globalStrides[0]
  std::uint32_t box_cols;          // boxDim[0]; boxDim[1] stays 32
};

inline std::optional<std::string> broken_rule(const RetargetValues& v) {
  constexpr std::uint64_t kElemBytes = sizeof(float);
  constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;
  if (v.global_address == 0) return "the global address is null";
  if (v.global_address % 16 != 0) return "the global address is not 16-byte aligned";
  if (v.cols < 1 || v.cols > kMaxDim) return "globalDim[0] (cols) is outside 1..2^32";
  if (v.rows < 1 || v.rows > kMaxDim) return "globalDim[1] (rows) is outside 1..2^32";
  if (v.box_cols < 1 || v.box_cols > 256) return "boxDim[0] is outside 1..256";
  if (v.row_stride_bytes % 16 != 0) return "the row stride is not a multiple of 16 bytes";
  if (v.row_stride_bytes >= (std::uint64_t{1} << 40)) return "the row stride is not below 2^40 bytes";
  if (v.row_stride_bytes < v.cols * kElemBytes) return "the row stride is shorter than a row: rows overlap";
  if (v.box_cols * kElemBytes % 16 != 0) return "a box row (boxDim[0] x 4 bytes) is not a multiple of 16 bytes";
  return std::nullopt;
}
