// Exercise 09.2 (CPU): the rules a retargeted map must pass.
//
// cuTensorMapEncodeTiled refuses a map it cannot describe; tensormap.replace refuses nothing. It
// writes whatever value it is given, and the first tensor copy through a bad map faults or moves
// the wrong bytes. So the values a kernel is about to write must be checked first, against the
// same rules the driver applies (the lesson does it on the host, in batch_problems()).
//
// Your task: complete broken_rule() for the five values the lesson's encoder replaces in a map of
// float matrices (rank 2, 4-byte elements, no interleave, no swizzle, element strides 1, boxes 32
// rows tall). Return std::nullopt when the driver would accept a map with these values, otherwise
// one sentence naming the broken rule. Think about:
//   - where the matrix may start (the address of element (0, 0));
//   - how many elements a dimension may have, and how many a box;
//   - what the row stride must be a multiple of, how large it may be, and how small;
//   - what the byte width of one box row must be a multiple of.
// Write the rules yourself, from chapter 07 and the driver's documentation of
// cuTensorMapEncodeTiled; the test compares your verdict with the course's rule check
// (course/tensor_map.hpp), which was checked against the driver on an H100.
// Check: scripts/exercise.py replace_rules
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
  (void)v;
  // TODO: the address, the two dimensions, the box width and the row stride, each against its rules.
  return std::nullopt;
}
