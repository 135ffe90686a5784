// Exercise 07.4 (CPU): how many bytes does a load through an interleaved map deliver? Solution.
//
// With interleave one index of dimension 0 is a whole slice (16 or 32 bytes, whatever the data
// type), dimension 0's element stride counts like any other, and dimension rank - 2 (the slices of
// an NC/4HWC4 map {pixels, rows, slices, images}) lands one index per load, whatever its boxDim.
// Without interleave dimension 0's stride is ignored: a box row lands whole.
#pragma once

#include <cstdint>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes

inline std::uint32_t load_bytes(const TensorMapRequest& map) {
  const bool interleaved = map.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  std::uint32_t bytes = !interleaved                                   ? element_bytes(map.data_type)
                        : map.interleave == CU_TENSOR_MAP_INTERLEAVE_16B ? 16
                                                                         : 32;
  for (std::uint32_t i = 0; i < map.rank; ++i) {
    const std::uint32_t stride = i == 0 && !interleaved ? 1 : map.element_strides[i];
    bytes *= interleaved && i + 2 == map.rank ? 1 : (map.box_dim[i] + stride - 1) / stride;
  }
  return bytes;
}
