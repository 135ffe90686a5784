// Exercise 09.1 (CPU): the replaces that retarget a map.
//
// A kernel that needs the map of another tensor does not encode one from nothing: it copies a map
// it already has (the driver's template, or the map of the previous tensor) into shared memory and
// changes the fields that differ, one tensormap.replace per field. PTX counts each replace as a
// write of the whole 128-byte map, so a good encoder writes only what differs: the lesson's
// template encoder replaces five fields (address, two global dimensions, the row stride, the box
// width), because everything else is the same for every tensor of the batch.
//
// Your task: complete retarget(). It lists the replaces that turn the map described by `from` into
// the map described by `to` (two course::TensorMapRequest, course/tensor_map.hpp), as few as possible:
//   - a field that already holds the value `to` needs is not replaced;
//   - only what `to` uses counts: global_dim, box_dim and element_strides below to.rank, and
//     global_strides below to.rank - 1. A dimension that `from` does not use holds nothing yet;
//   - each value is written the way tensormap.replace takes it: the rank minus one; the element
//     type, interleave, swizzle and fill mode as PTX's codes (device_tensormap_model.hpp, ptx_codes),
//     not the driver's enums; the address, dimensions and strides as they are;
//   - a difference that no tensormap.replace can write means that no list of replaces retargets the
//     map: then return std::nullopt (the kernel needs another template). Which field is that?
//     (The PTX page of tensormap.replace lists the fields it can change.)
// The test applies your replaces to `from` and compares the result with `to`, field by field.
// Check: scripts/exercise.py retarget_fields
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device_tensormap_model.hpp"  // course::TensorMapRequest, ptx_elemtype() & co.

enum class MapField { global_address, rank, global_dim, global_stride, box_dim, element_stride,
                      elemtype, interleave_layout, swizzle_mode, fill_mode };

struct Replace {
  MapField field;
  int ord;              // the dimension (global_dim, box_dim, element_stride) or stride index
                        // (global_stride); 0 for the fields that have none
  std::uint64_t value;  // the new value, as tensormap.replace takes it
};

inline std::optional<std::vector<Replace>> retarget(const course::TensorMapRequest& from,
                                                    const course::TensorMapRequest& to) {
  std::vector<Replace> replaces;
  (void)from;
  (void)to;
  // TODO: one Replace for every field whose value `to` needs and `from` does not hold; std::nullopt
  //       when a difference cannot be written by tensormap.replace.
  return replaces;
}
