// Exercise 09.1 (CPU): the replaces that retarget a map. Solution.
//
// Compare field by field over what `to` uses; a dimension beyond from.rank is always written.
// Values go in tensormap.replace's own encoding (rank - 1, PTX's codes). The L2 promotion is the
// one field of the request that tensormap.replace cannot write: if it differs, only another
// template helps. The same holds for a new value that has no code in PTX's table on sm_90a.
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
  if (from.l2_promotion != to.l2_promotion) return std::nullopt;  // no tensormap.replace field for it
  std::vector<Replace> replaces;
  const auto address = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
  if (from.global_address != to.global_address) replaces.push_back({MapField::global_address, 0, address(to.global_address)});
  if (from.rank != to.rank) replaces.push_back({MapField::rank, 0, to.rank - 1});
  for (int i = 0; i < static_cast<int>(to.rank); ++i) {
    const bool used = i < static_cast<int>(from.rank);  // beyond from's rank nothing is held yet
    if (!used || from.global_dim[i] != to.global_dim[i]) replaces.push_back({MapField::global_dim, i, to.global_dim[i]});
    if (!used || from.box_dim[i] != to.box_dim[i]) replaces.push_back({MapField::box_dim, i, to.box_dim[i]});
    if (!used || from.element_strides[i] != to.element_strides[i]) {
      replaces.push_back({MapField::element_stride, i, to.element_strides[i]});
    }
  }
  for (int i = 0; i + 1 < static_cast<int>(to.rank); ++i) {
    const bool used = i + 1 < static_cast<int>(from.rank);
    if (!used || from.global_strides[i] != to.global_strides[i]) {
      replaces.push_back({MapField::global_stride, i, to.global_strides[i]});
    }
  }
  // The four immediates, in PTX's numbers; -1: a value sm_90a cannot encode, so no replace writes it.
  const auto immediate = [&](bool differs, MapField field, int code) {
    if (differs && code >= 0) replaces.push_back({field, 0, static_cast<std::uint64_t>(code)});
    return !differs || code >= 0;
  };
  if (!immediate(from.data_type != to.data_type, MapField::elemtype, ptx_elemtype(to.data_type)) ||
      !immediate(from.interleave != to.interleave, MapField::interleave_layout, ptx_interleave(to.interleave)) ||
      !immediate(from.swizzle != to.swizzle, MapField::swizzle_mode, ptx_swizzle(to.swizzle)) ||
      !immediate(from.oob_fill != to.oob_fill, MapField::fill_mode, ptx_fill_mode(to.oob_fill))) {
    return std::nullopt;
  }
  return replaces;
}
