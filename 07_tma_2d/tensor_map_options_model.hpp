// 07_tma_2d, the model of the second lesson (tensor_map_options.cu): what one tensor load puts in
// shared memory, element by element, and so how many bytes its barrier must expect, for maps of
// rank 1 to 5, with element strides, with or without interleave, swizzled or not. The lesson's
// kernels take their expect-tx from it and its reference from load_box_model();
// tensor_map_options_test.cu checks it on the CPU against an independent formula, and on the GPU
// against what the hardware lands.
// PTX tensors (tiled mode, traversal stride, interleave layout)
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensors
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tma_2d_model.hpp"  // TensorMapRequest, element_bytes, swizzle_span_bytes, interleave_slice_bytes

namespace options {

/// [model]
// TUTORIAL: per dimension i a box traverses boxDim[i] elements from its start coordinate, taking
// every elementStrides[i]-th: ceil(boxDim[i] / stride) of them land. Dimension 0 is the exception:
// on a map without interleave its stride is ignored (driver API; the PTX ISA says it must be 1),
// so a box row lands whole. What lands is stored densely, dimension 0 fastest, zero where an
// element lies outside the tensor; the barrier must expect exactly those bytes.
// An interleaved map (NC/4HWC4: slices of channels, pixel after pixel) differs in three ways,
// measured on an H100 (the chapter page says how): one index of dimension 0 is a whole
// 16- or 32-byte slice, whatever the data type; dimension 0's stride counts (pixels are skipped);
// and dimension rank - 2 (the slices) lands one index per load, whatever its boxDim.
inline bool interleaved(const TensorMapRequest& r) { return r.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE; }
inline std::uint32_t unit_bytes(const TensorMapRequest& r) {  // one index of dimension 0
  return interleaved(r) ? interleave_slice_bytes(r.interleave) : element_bytes(r.data_type);
}
inline std::uint32_t traversal_stride(const TensorMapRequest& r, std::uint32_t i) {
  return i == 0 && !interleaved(r) ? 1 : r.element_strides[i];
}
inline std::uint32_t landed_elems(const TensorMapRequest& r, std::uint32_t i) {
  if (interleaved(r) && i + 2 == r.rank) return 1;
  return (r.box_dim[i] + traversal_stride(r, i) - 1) / traversal_stride(r, i);
}
inline std::uint32_t box_tx_bytes(const TensorMapRequest& r) {  // the expect-tx of one load
  std::uint32_t bytes = unit_bytes(r);
  for (std::uint32_t i = 0; i < r.rank; ++i) bytes *= landed_elems(r, i);
  return bytes;
}
// Where the float at `elem` of the dense box sits in shared memory: a swizzle (the lesson's
// 32-byte interleave requires one) exchanges 16-byte chunks within its span, keyed by the
// 128-byte line of shared memory, as chapter 08 teaches.
inline std::size_t swizzled(const TensorMapRequest& r, std::size_t elem) {
  const std::size_t byte = elem * sizeof(float), chunks = swizzle_span_bytes(r.swizzle) / 16;
  return chunks == 0 ? elem : (byte ^ (((byte >> 7) & (chunks - 1)) << 4)) / sizeof(float);
}
// What a load of the box starting at `start` puts in shared memory (32-bit elements).
inline void load_box_model(const std::vector<float>& gmem, const TensorMapRequest& r, const std::int32_t* start, float* smem) {
  if (unit_bytes(r) % sizeof(float) != 0)
    throw std::invalid_argument("the model holds elements of 4 or 8 bytes (or interleaved slices) as floats");
  if (r.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && box_tx_bytes(r) % (8 * swizzle_span_bytes(r.swizzle)) != 0)
    throw std::invalid_argument("the model places swizzled boxes of whole swizzle patterns (8 x the span) only");
  std::uint32_t k[5] = {};  // the landed element's index per dimension; k[0] runs fastest
  for (std::size_t out = 0;;) {
    std::int64_t row = 0;  // elements from the tensor's first to column 0 of this box row
    bool row_inside = true;
    for (std::uint32_t i = 1; i < r.rank; ++i) {
      const std::int64_t at = start[i] + std::int64_t{k[i]} * traversal_stride(r, i);
      row_inside = row_inside && at >= 0 && at < static_cast<std::int64_t>(r.global_dim[i]);
      row += at * static_cast<std::int64_t>(r.global_strides[i - 1] / sizeof(float));
    }
    const std::uint32_t unit = unit_bytes(r) / sizeof(float);  // floats per index of dimension 0
    for (k[0] = 0; k[0] < landed_elems(r, 0); ++k[0]) {
      const std::int64_t at = start[0] + std::int64_t{k[0]} * traversal_stride(r, 0);
      const bool inside = row_inside && at >= 0 && at < static_cast<std::int64_t>(r.global_dim[0]);
      for (std::uint32_t u = 0; u < unit; ++u, ++out) smem[swizzled(r, out)] = inside ? gmem[row + at * unit + u] : 0.0f;
    }
    std::uint32_t i = 1;
    while (i < r.rank && ++k[i] == landed_elems(r, i)) k[i++] = 0;  // the next box row, like an odometer
    if (i >= r.rank) return;
  }
}
/// [model]

}  // namespace options
