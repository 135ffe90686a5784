// Exercise 07.4 (CPU): how many bytes does a load through an interleaved map deliver?
//
// An interleaved map describes NC/4HWC4- or NC/8HWC8-style layouts: channels in 16- or 32-byte
// slices, pixel after pixel. Chapter 07's second lesson (tensor_map_options, "Interleaved
// layouts") measured what one load of such a map moves on an H100; a barrier that expects
// boxDim x element size bytes is wrong for it, in either direction.
//
// Your task: load_bytes() returns the count to announce for one load through `map`, plain or
// interleaved, with element strides. Without interleave, a box row lands whole whatever
// elementStrides[0] says; in the other dimensions ceil(boxDim / stride) indices land. Out-of-bounds
// elements count as delivered (the fill). The model (tma_2d_model.hpp) has the TensorMapRequest,
// element_bytes() and the CUtensorMapInterleave values. The test plays each load on a model
// barrier (course/mbarrier_model.hpp): maps of rank 2 to 5, 1- to 8-byte types, 16- and 32-byte
// interleave, boxes over the slices, pixel strides.
// Check: scripts/exercise.py slice_bytes
#pragma once

#include <cstdint>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes

inline std::uint32_t load_bytes(const TensorMapRequest& map) {
  (void)map;
  return 0;  // TODO: the bytes one load through this map delivers to shared memory
}
