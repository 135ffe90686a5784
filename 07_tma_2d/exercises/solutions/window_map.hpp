// Exercise 07.2 (CPU): a tensor map for a window of a matrix. Solution.
//
// The window is a matrix of its own: it starts at its top-left element's address, has its own
// columns and rows (innermost first), and keeps the matrix's row pitch, in bytes: a window is
// narrower than its rows are apart. The box is {columns, rows}, innermost first too.
#pragma once

#include <cstdint>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes, broken_tensor_map_rule

struct Window {
  int row0, col0;  // the window's top-left element, in the matrix
  int rows, cols;  // its size, in elements
};

inline TensorMapRequest window_request(const void* gmem_matrix, CUtensorMapDataType type, int pitch_elems,
                                       const Window& w, std::uint32_t box_cols, std::uint32_t box_rows) {
  const std::uint64_t elem = element_bytes(type);
  TensorMapRequest r;  // defaults: element strides 1, no interleave, swizzle or L2 promotion, zero fill
  r.data_type = type;
  r.rank = 2;
  r.global_address = static_cast<const unsigned char*>(gmem_matrix) +
                     (static_cast<std::uint64_t>(w.row0) * pitch_elems + w.col0) * elem;  // element (row0, col0)
  r.global_dim[0] = static_cast<std::uint64_t>(w.cols);  // innermost first: the window's columns...
  r.global_dim[1] = static_cast<std::uint64_t>(w.rows);  // ...then its rows
  r.global_strides[0] = static_cast<std::uint64_t>(pitch_elems) * elem;  // the matrix's pitch, in bytes
  r.box_dim[0] = box_cols;
  r.box_dim[1] = box_rows;
  return r;
}
