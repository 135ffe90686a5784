// Exercise 07.2 (CPU): a tensor map for a window of a matrix.
//
// A kernel often works on part of a matrix: a block of rows and columns inside a larger one. A
// tensor map need not describe the whole matrix: it can describe just the window, and then TMA
// treats the window's edges as the tensor's edges. A box that hangs over them is filled with
// zeros on loads (and clipped on stores) even where the matrix has data beyond them.
// The matrix is row-major, of `type` elements, its rows `pitch_elems` elements apart; the window
// is `w.rows` x `w.cols` elements whose top-left element is element (w.row0, w.col0) of the matrix.
// The windows of the test all start on a 16-byte boundary and have legal pitches.
//
// Your task: window_request() fills in the request for cuTensorMapEncodeTiled (the model's
// TensorMapRequest, tma_2d_model.hpp) so that a load of the box at (x, y) = (column, row) of
// the window brings exactly the window's elements, and zeros where the box leaves the window.
// One copy moves a box of `box_rows` rows of `box_cols` elements. The test checks the request
// against the model's rules (broken_tensor_map_rule), then follows every element of many boxes
// to the address TMA would read it from.
// Check: scripts/exercise.py window_map
#pragma once

#include <cstdint>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes, broken_tensor_map_rule

struct Window {
  int row0, col0;  // the window's top-left element, in the matrix
  int rows, cols;  // its size, in elements
};

inline TensorMapRequest window_request(const void* gmem_matrix, CUtensorMapDataType type, int pitch_elems,
                                       const Window& w, std::uint32_t box_cols, std::uint32_t box_rows) {
  TensorMapRequest r;  // defaults: element strides 1, no interleave, swizzle or L2 promotion, zero fill
  (void)gmem_matrix, (void)type, (void)pitch_elems, (void)w, (void)box_cols, (void)box_rows;
  // TODO: the data type, the rank, the address, the dimensions, the stride and the box.
  return r;
}
