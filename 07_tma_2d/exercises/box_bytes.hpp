// Exercise 07.1 (CPU): how many bytes does one tensor copy deliver?
//
// A tensor load completes on the barrier the leader names, like chapter 06's bulk copy: the
// leader's arrive.expect_tx announces a byte count, and the phase completes when the copy has
// counted that many bytes down again. A bulk copy takes its size as an operand; a tensor copy
// takes none. What it moves is fixed by the map (the box, the element type, the rank) and by
// where the box lies: its start may be negative, and it may hang over the tensor's far edges,
// where loads fill in zeros or NaNs (chapter 07, "At the edges").
//
// Your task: box_tx_bytes() returns the count to announce for a load of a box through `map`,
// whose first element sits at `coords` (map.rank coordinates, innermost first). The maps have
// element strides of 1, no interleave and no swizzle; the model (tma_2d_model.hpp) has the
// TensorMapRequest and element_bytes(). The test plays each load on a model barrier
// (course/mbarrier_model.hpp) for maps of every rank and several element types, with boxes inside
// the tensor and boxes over its edges.
// Check: scripts/exercise.py box_bytes
#pragma once

#include <cstdint>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes

inline std::uint32_t box_tx_bytes(const TensorMapRequest& map, const std::int32_t* coords) {
  (void)map;
  (void)coords;
  return 0;  // TODO: the bytes this load delivers to shared memory
}
