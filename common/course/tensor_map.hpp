/// @file
/// @brief Tensor maps for TMA: the request, its rules checked on the host, and the driver call.
///
/// Chapter 07 (07_tma_2d/tma_2d_model.hpp) teaches this code argument by argument; later
/// chapters use it as plumbing from here. The two copies must agree: chapter 07's tests check
/// that they report the same broken rules and encode the same CUtensorMap bytes.
/// cuTensorMapEncodeTiled is looked up through cudaGetDriverEntryPointByVersion, so nothing
/// links libcuda and programs still start (and skip) on machines without a driver.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "course/check.hpp"

namespace course {

/// The arguments of cuTensorMapEncodeTiled, in its order; dimension 0 is the innermost.
struct TensorMapRequest {
  CUtensorMapDataType data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;  // element type, hence element size
  std::uint32_t rank = 2;                                            // number of dimensions, 1..5
  const void* global_address = nullptr;                              // element (0, 0, ...) in global memory
  std::uint64_t global_dim[5] = {};       // elements per dimension, innermost first
  std::uint64_t global_strides[4] = {};   // bytes between consecutive indices of dimensions 1..rank-1
  std::uint32_t box_dim[5] = {};          // the box (tile) one copy moves, elements per dimension
  std::uint32_t element_strides[5] = {1, 1, 1, 1, 1};  // 1 = every element; k = every k-th (dimension 0: ignored)
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;        // NC/8HWC8-style layouts; none here
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;                 // shared-memory layout (chapter 08)
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;   // L2 fetch granularity
  CUtensorMapFloatOOBfill oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;    // out-of-bounds loads: zeros or NaN
};

// Bytes per element; 0 for values outside the enum and for the packed 4- and 6-bit types
// (16U4/16U6, newer GPUs), which this course does not encode.
inline constexpr std::uint32_t element_bytes(CUtensorMapDataType type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: case CU_TENSOR_MAP_DATA_TYPE_INT32: case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: case CU_TENSOR_MAP_DATA_TYPE_INT64: case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default: return 0;
  }
}
inline constexpr bool is_floating(CUtensorMapDataType type) {
  return type >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && type <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}
inline constexpr std::uint32_t swizzle_span_bytes(CUtensorMapSwizzle swizzle) {  // 0: no swizzle
  return swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0 : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32
         : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
}
// With interleave one index of dimension 0 is a whole slice of channels (measured on an H100).
inline constexpr std::uint32_t interleave_slice_bytes(CUtensorMapInterleave interleave) {  // 0: no interleave
  return interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 0 : interleave == CU_TENSOR_MAP_INTERLEAVE_16B ? 16 : 32;
}

/// The most bytes one tensor copy may move, as the driver enforces it: the shared memory one SM
/// can give a block (228 KiB on compute capability 9.0, measured there, and on 10.x; 100 KiB on 12.x).
inline constexpr std::uint64_t max_box_bytes(int compute_capability) {
  return compute_capability == 90 || compute_capability == 100 || compute_capability == 103 ? 228u * 1024 : 100u * 1024;
}

namespace detail {
template <class... Parts>
std::optional<std::string> rule_text(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}
}  // namespace detail

// The rules of the guide's table and of the driver's documentation, checked on the host, the
// driver's undocumented limit on a box's bytes, and three rules the driver does not check:
// a null address and overlapping rows (this course's own), and the 32-byte interleave's swizzle
// (the documentation's). A sweep of random requests against the driver on an H100
// (common/tests/tensor_map_test.cu) keeps the rest in agreement.
// Returns the first broken one as a sentence, or nothing.
// Calls inside are qualified: the enums live in the global namespace, where a chapter may
// define functions of the same names (chapter 07 does), and argument-dependent lookup
// would find both.
// @p compute_capability (major x 10 + minor) is the GPU the map is for: some values of the
// enums exist only on newer GPUs.
inline std::optional<std::string> broken_tensor_map_rule(const TensorMapRequest& r, int compute_capability = 90) {
  const std::uint32_t elem = course::element_bytes(r.data_type);
  const bool interleaved = r.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  const std::uint64_t align = r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;  // address and strides
  if (elem == 0 && r.data_type >= CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && r.data_type <= CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) {
    return detail::rule_text("data type ", static_cast<int>(r.data_type), " (packed 4- or 6-bit values) needs compute "
                             "capability 10.0; this course encodes 1-, 2-, 4- and 8-byte types");
  }
  if (elem == 0) {
    return detail::rule_text("data type ", static_cast<int>(r.data_type), " is not a 1-, 2-, 4- or 8-byte CUtensorMapDataType");
  }
  if (r.interleave > CU_TENSOR_MAP_INTERLEAVE_32B || r.swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
      r.l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || r.oob_fill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) {
    return detail::rule_text("interleave, swizzle, L2 promotion or OOB fill is not a value of its enum");
  }
  if (r.swizzle >= CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B && compute_capability < 100) {
    return detail::rule_text("swizzle mode ", static_cast<int>(r.swizzle), " (128B_ATOM_*) needs compute capability 10.0; "
                             "this GPU has ", compute_capability / 10, ".", compute_capability % 10);
  }
  if (r.rank < 1 || r.rank > 5) return detail::rule_text("rank ", r.rank, " is outside 1..5");
  if (interleaved && r.rank < 3) return detail::rule_text("an interleaved layout needs rank 3 or more, not ", r.rank);
  const auto address = reinterpret_cast<std::uintptr_t>(r.global_address);
  if (address == 0) return detail::rule_text("global address is null");  // this course's rule: the driver accepts it
  if (address % align != 0) {
    return detail::rule_text("global address ", r.global_address, " is not ", align, "-byte aligned");
  }
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    if (r.global_dim[i] == 0 || r.global_dim[i] > (1ull << 32)) {
      return detail::rule_text("globalDim[", i, "] = ", r.global_dim[i], " is outside 1..2^32");
    }
    if (r.box_dim[i] == 0 || r.box_dim[i] > 256) return detail::rule_text("boxDim[", i, "] = ", r.box_dim[i], " is outside 1..256");
    if (r.element_strides[i] == 0 || r.element_strides[i] > 8) {
      return detail::rule_text("elementStrides[", i, "] = ", r.element_strides[i], " is outside 1..8");
    }
  }
  for (std::uint32_t i = 0; i + 1 < r.rank; ++i) {
    const std::uint64_t stride = r.global_strides[i];
    if (stride % align != 0) {
      return detail::rule_text("globalStrides[", i, "] = ", stride, " bytes is not a multiple of ", align, " (pad each row to ",
                       (stride + align - 1) / align * align, " bytes)");
    }
    if (stride >= (1ull << 40)) return detail::rule_text("globalStrides[", i, "] = ", stride, " bytes is not below 2^40");
    // The driver's stride formula: stride[0] = dim[0] x element size + padding[0],
    // stride[i] = stride[i-1] x (dim[i] + padding[i]), padding never negative. The driver
    // itself accepts overlapping rows; this course rejects them (a store would race). With
    // interleave one index of dimension 0 is a whole 16- or 32-byte slice (measured on an H100).
    const std::uint64_t spans = i == 0 ? r.global_dim[0] * (interleaved ? course::interleave_slice_bytes(r.interleave) : elem) : r.global_strides[i - 1] * r.global_dim[i];
    if (stride < spans) {
      return detail::rule_text("globalStrides[", i, "] = ", stride, " bytes is less than the ", spans,
                       " bytes that one index of dimension ", i + 1, " spans");
    }
  }
  // The driver's documentation asks for this only without interleave; the driver (measured on
  // an H100) asks for it with every layout.
  const std::uint64_t inner_box_bytes = std::uint64_t{r.box_dim[0]} * elem;
  if (inner_box_bytes % 16 != 0) {
    return detail::rule_text("boxDim[0] x element size = ", inner_box_bytes, " bytes is not a multiple of 16");
  }
  // Undocumented, measured on an H100 (common/tests/tensor_map_test.cu): the elements one copy
  // moves, boxDim[i] / elementStrides[i] per dimension rounded down, may fill at most the
  // shared memory of one SM, 228 KiB on compute capability 9.0.
  std::uint64_t moved_bytes = elem;
  for (std::uint32_t i = 0; i < r.rank; ++i) moved_bytes *= r.box_dim[i] / r.element_strides[i];
  if (moved_bytes > course::max_box_bytes(compute_capability)) {
    return detail::rule_text("one copy of this box moves ", moved_bytes, " bytes (boxDim / elementStrides per dimension, "
                             "rounded down); the driver allows at most ", course::max_box_bytes(compute_capability),
                             " (the shared memory of one SM)");
  }
  const std::uint32_t span = course::swizzle_span_bytes(r.swizzle);
  if (!interleaved && span != 0 && inner_box_bytes > span) {
    return detail::rule_text("boxDim[0] x element size = ", inner_box_bytes, " bytes exceeds the ", span, "-byte swizzle span");
  }
  if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    // The driver's documentation states it; the driver (on an H100) does not check it.
    return detail::rule_text("a 32-byte interleave needs the 32-byte swizzle (the driver's documentation)");
  }
  if (r.oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && !course::is_floating(r.data_type)) {
    return detail::rule_text("the NaN out-of-bounds fill needs a floating-point data type");
  }
  return std::nullopt;
}

// Looked up through the runtime (signature of CUDA 12.0), so that no program links libcuda.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    COURSE_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw CudaError("cudaGetDriverEntryPointByVersion: the driver has no cuTensorMapEncodeTiled (12.0 ABI)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The driver call alone; a refusal throws course::CudaError naming the CUresult.
inline CUtensorMap encode_tiled_unchecked(const TensorMapRequest& r) {
  CUtensorMap map{};  // zeroed first: the same request always gives the same 128 bytes
  COURSE_CHECK(tensor_map_encoder()(&map, r.data_type, r.rank, const_cast<void*>(r.global_address), r.global_dim,
                                    r.global_strides, r.box_dim, r.element_strides, r.interleave, r.swizzle,
                                    r.l2_promotion, r.oob_fill));
  return map;
}

// Rules first, with a sentence that names the broken one; then the driver.
inline CUtensorMap encode_tiled(const TensorMapRequest& request) {
  if (std::optional<std::string> broken = broken_tensor_map_rule(request)) {
    throw std::invalid_argument("tensor map rejected on the host: " + *broken);
  }
  return encode_tiled_unchecked(request);
}

}  // namespace course
