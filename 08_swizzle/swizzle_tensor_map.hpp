// 08_swizzle: the tensor maps of this chapter, encoded on the host, with every rule of
// cuTensorMapEncodeTiled (and of the guide's Table 25) checked before the driver sees a map.
// Chapter 07 teaches tensor maps; this is the same encoding, compact, with the swizzle mode.
// Driver: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
// Runtime: cudaGetDriverEntryPointByVersion
//   https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <cstdint>
#include <optional>
#include <string>

#include "course/check.hpp"
#include "course/cli.hpp"  // course::UsageError: a broken rule is reported like bad input
#include "swizzle_layout.hpp"

/// [tiled_map]
struct TiledMap {
  CUtensorMapDataType type;
  int elem_bytes;
  int rank;                          // 1 to 5
  const void* gmem;                  // first element
  std::uint64_t dims[5];             // elements per dimension, innermost first
  std::uint64_t strides[4];          // bytes from one index of dimension i + 1 to the next
  std::uint32_t box[5];              // elements per dimension that one copy moves
  std::uint32_t elem_strides[5];     // 1: every element
  Swizzle swizzle;
};

// A rows x cols row-major matrix, moved in boxes of box_rows x box_cols elements.
inline TiledMap matrix_map(CUtensorMapDataType type, int elem_bytes, const void* gmem, int rows, int cols, int box_rows,
                           int box_cols, Swizzle swizzle) {
  return {type, elem_bytes, 2, gmem,
          {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows)},
          {static_cast<std::uint64_t>(cols) * elem_bytes},
          {static_cast<std::uint32_t>(box_cols), static_cast<std::uint32_t>(box_rows)},
          {1, 1}, swizzle};
}

// The first rule of cuTensorMapEncodeTiled (and of the guide's Table 25) that `m` breaks, as one line.
inline std::optional<std::string> tensor_map_problem(const TiledMap& m) {
  const auto str = [](auto v) { return std::to_string(v); };
  if (m.rank < 1 || m.rank > 5) return "tensor rank must be 1 to 5 (got " + str(m.rank) + ")";
  const int gmem_align = m.swizzle == Swizzle::none ? 16 : 128;
  if (reinterpret_cast<std::uintptr_t>(m.gmem) % gmem_align != 0) {
    return "global address must be " + str(gmem_align) + "-byte aligned" +
           (m.swizzle == Swizzle::none ? "" : " with a swizzle (guide Table 25)");
  }
  for (int i = 0; i < m.rank; ++i) {
    if (m.dims[i] == 0 || m.dims[i] > (1ull << 32)) return "dimension " + str(i) + " must have 1 to 2^32 elements";
    if (m.box[i] == 0 || m.box[i] > 256) return "box dimension " + str(i) + " must be 1 to 256 elements";
    if (m.elem_strides[i] == 0 || m.elem_strides[i] > 8) return "element stride " + str(i) + " must be 1 to 8";
  }
  for (int i = 0; i + 1 < m.rank; ++i) {
    if (m.strides[i] % 16 != 0 || m.strides[i] >= (1ull << 40)) {
      return "stride of dimension " + str(i + 1) + " must be a multiple of 16 bytes below 2^40 (got " +
             str(m.strides[i]) + ")";
    }
  }
  if (m.rank > 1 && m.strides[0] < m.dims[0] * m.elem_bytes) return "rows must not overlap: stride 1 < a row's bytes";
  const std::uint64_t inner_bytes = std::uint64_t{m.box[0]} * m.elem_bytes;
  if (inner_bytes % 16 != 0) return "inner box dimension must be a multiple of 16 bytes (got " + str(inner_bytes) + ")";
  if (m.swizzle != Swizzle::none && inner_bytes > static_cast<std::uint64_t>(span_bytes(m.swizzle))) {
    return "inner box dimension (" + str(inner_bytes) + " bytes) must not exceed the swizzle span (" +
           str(span_bytes(m.swizzle)) + " bytes)";
  }
  return std::nullopt;
}

// The driver's encoder, without linking libcuda: the runtime hands out the entry point.
inline CUtensorMap encode_tiled(const TiledMap& m) {
  if (std::optional<std::string> problem = tensor_map_problem(m)) throw course::UsageError("tensor map: " + *problem);
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    COURSE_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess) throw course::CudaError("the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map{};
  COURSE_CHECK(encode(&map, m.type, m.rank, const_cast<void*>(m.gmem), m.dims, m.strides, m.box, m.elem_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, static_cast<CUtensorMapSwizzle>(m.swizzle),
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}
/// [tiled_map]
