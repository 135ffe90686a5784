/// @file
/// @brief 07_tma_2d, the model: the tensor map argument by argument, its rules, the driver call,
/// and what a tensor copy does at a matrix's edges, all on the host.
///
/// Part 1 is this chapter's teaching copy of the course's one encoder and rule check
/// (common/course/tensor_map.hpp, which later chapters use as plumbing): one field per argument
/// of cuTensorMapEncodeTiled, every rule of the guide and of the driver checked before the
/// driver sees the request (broken_tensor_map_rule() needs no GPU and no driver, so the rules
/// are tested one by one on any machine), and the driver call reached through the runtime, so
/// the program never links libcuda. tma_2d_test.cu checks that the two copies give the same
/// verdict for every request and the same 128 bytes for every map.
/// Part 2 is the chapter's problem without a GPU: the tile, the matrix and its map request, the
/// grid of tiles, and the host model of a tensor copy (zero fill on loads, clipped stores) from
/// which the reference is computed. tma_2d.cu (the lesson) and tma_2d_lab.cu include it.
#pragma once

#include <cuda.h>          // CUtensorMap and its enums (types only: the driver library is never linked)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.hpp"
#include "course/pattern.hpp"

// The two functions the kernels share with the host model; plain host functions without nvcc.
#ifdef __CUDACC__
#define TMA_2D_HOST_DEVICE __host__ __device__
#else
#define TMA_2D_HOST_DEVICE
#endif

// ==== Part 1: the tensor map ==================================================================

/// [request]
// One field per argument of cuTensorMapEncodeTiled, in its order. Dimension 0 is the
// innermost (fastest varying) one: a row-major matrix is {columns, rows}.
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
/// [request]

// Bytes per element; 0 for values outside the enum and for the packed 4- and 6-bit types
// (16U4/16U6, newer GPUs), which this course does not encode.
constexpr std::uint32_t element_bytes(CUtensorMapDataType type) {
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
constexpr bool is_floating(CUtensorMapDataType type) {
  return type >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && type <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}
constexpr std::uint32_t swizzle_span_bytes(CUtensorMapSwizzle swizzle) {  // 0: no swizzle
  return swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0 : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32
         : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
}
// With interleave one index of dimension 0 is a whole slice of channels (measured on an H100).
constexpr std::uint32_t interleave_slice_bytes(CUtensorMapInterleave interleave) {  // 0: no interleave
  return interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 0 : interleave == CU_TENSOR_MAP_INTERLEAVE_16B ? 16 : 32;
}
// The most bytes one copy may move: the shared memory one SM can give a block (228 KiB on
// compute capability 9.0, measured on an H100, and on 10.x; 100 KiB on 12.x). Undocumented.
constexpr std::uint64_t max_box_bytes(int compute_capability) {
  return compute_capability == 90 || compute_capability == 100 || compute_capability == 103 ? 228u * 1024 : 100u * 1024;
}

// One broken rule as a sentence, from its parts.
template <class... Parts>
std::optional<std::string> rule_text(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}

/// [rules]
// The rules of the guide's table and of the driver's documentation, checked on the host; the
// driver's undocumented limit on a box's bytes; and three rules the driver does not check: a
// null address and overlapping rows (this course's own), the 32-byte interleave's swizzle (the
// documentation's). Returns the first broken one as a sentence, or nothing.
// `compute_capability` (major x 10 + minor) is the GPU the map is for: some enum values and the
// box limit depend on it.
inline std::optional<std::string> broken_tensor_map_rule(const TensorMapRequest& r, int compute_capability = 90) {
  const std::uint32_t elem = element_bytes(r.data_type);
  const bool interleaved = r.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  const std::uint64_t align = r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;  // address and strides
  if (elem == 0 && r.data_type >= CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && r.data_type <= CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) {
    return rule_text("data type ", static_cast<int>(r.data_type), " (packed 4- or 6-bit values) needs compute "
                     "capability 10.0; this course encodes 1-, 2-, 4- and 8-byte types");
  }
  if (elem == 0) {
    return rule_text("data type ", static_cast<int>(r.data_type), " is not a 1-, 2-, 4- or 8-byte CUtensorMapDataType");
  }
  if (r.interleave > CU_TENSOR_MAP_INTERLEAVE_32B || r.swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
      r.l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || r.oob_fill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) {
    return rule_text("interleave, swizzle, L2 promotion or OOB fill is not a value of its enum");
  }
  if (r.swizzle >= CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B && compute_capability < 100) {
    return rule_text("swizzle mode ", static_cast<int>(r.swizzle), " (128B_ATOM_*) needs compute capability 10.0; "
                     "this GPU has ", compute_capability / 10, ".", compute_capability % 10);
  }
  if (r.rank < 1 || r.rank > 5) return rule_text("rank ", r.rank, " is outside 1..5");
  if (interleaved && r.rank < 3) return rule_text("an interleaved layout needs rank 3 or more, not ", r.rank);
  const auto address = reinterpret_cast<std::uintptr_t>(r.global_address);
  if (address == 0) return rule_text("global address is null");  // this course's rule: the driver accepts it
  if (address % align != 0) {
    return rule_text("global address ", r.global_address, " is not ", align, "-byte aligned");
  }
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    if (r.global_dim[i] == 0 || r.global_dim[i] > (1ull << 32)) {
      return rule_text("globalDim[", i, "] = ", r.global_dim[i], " is outside 1..2^32");
    }
    if (r.box_dim[i] == 0 || r.box_dim[i] > 256) return rule_text("boxDim[", i, "] = ", r.box_dim[i], " is outside 1..256");
    if (r.element_strides[i] == 0 || r.element_strides[i] > 8) {
      return rule_text("elementStrides[", i, "] = ", r.element_strides[i], " is outside 1..8");
    }
  }
  for (std::uint32_t i = 0; i + 1 < r.rank; ++i) {
    const std::uint64_t stride = r.global_strides[i];
    if (stride % align != 0) {
      return rule_text("globalStrides[", i, "] = ", stride, " bytes is not a multiple of ", align, " (pad each row to ",
                       (stride + align - 1) / align * align, " bytes)");
    }
    if (stride >= (1ull << 40)) return rule_text("globalStrides[", i, "] = ", stride, " bytes is not below 2^40");
    // The driver's stride formula: stride[0] = dim[0] x element size + padding[0],
    // stride[i] = stride[i-1] x (dim[i] + padding[i]), padding never negative. The driver
    // itself accepts overlapping rows; this course rejects them (a store would race). With
    // interleave one index of dimension 0 is a whole 16- or 32-byte slice (measured on an H100).
    const std::uint64_t spans = i == 0 ? r.global_dim[0] * (interleaved ? interleave_slice_bytes(r.interleave) : elem) : r.global_strides[i - 1] * r.global_dim[i];
    if (stride < spans) {
      return rule_text("globalStrides[", i, "] = ", stride, " bytes is less than the ", spans,
                       " bytes that one index of dimension ", i + 1, " spans");
    }
  }
  // The documentation asks for this only without interleave; the driver asks for it always.
  const std::uint64_t inner_box_bytes = std::uint64_t{r.box_dim[0]} * elem;
  if (inner_box_bytes % 16 != 0) {
    return rule_text("boxDim[0] x element size = ", inner_box_bytes, " bytes is not a multiple of 16");
  }
  // Undocumented: the elements one copy moves (boxDim / elementStrides per dimension, rounded
  // down) fill at most the shared memory of one SM.
  std::uint64_t moved_bytes = elem;
  for (std::uint32_t i = 0; i < r.rank; ++i) moved_bytes *= r.box_dim[i] / r.element_strides[i];
  if (moved_bytes > max_box_bytes(compute_capability)) {
    return rule_text("one copy of this box moves ", moved_bytes, " bytes (boxDim / elementStrides per dimension, "
                     "rounded down); the driver allows at most ", max_box_bytes(compute_capability),
                     " (the shared memory of one SM)");
  }
  const std::uint32_t span = swizzle_span_bytes(r.swizzle);
  if (!interleaved && span != 0 && inner_box_bytes > span) {
    return rule_text("boxDim[0] x element size = ", inner_box_bytes, " bytes exceeds the ", span, "-byte swizzle span");
  }
  if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    return rule_text("a 32-byte interleave needs the 32-byte swizzle (the driver's documentation)");
  }
  if (r.oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && !is_floating(r.data_type)) {
    return rule_text("the NaN out-of-bounds fill needs a floating-point data type");
  }
  return std::nullopt;
}
/// [rules]

/// [encode]
// TUTORIAL: the driver API function is looked up at run time through the runtime, so the
// program does not link libcuda: linked to it, it would not even start on a machine without
// a driver (where this chapter must still print its host model and report "skipped").
// Version 12000 asks for the signature introduced with CUDA 12.0 (cudaTypedefs.h's _v12000).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    COURSE_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw course::CudaError("cudaGetDriverEntryPointByVersion: the driver has no cuTensorMapEncodeTiled (12.0 ABI)");
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
/// [encode]

// ==== Part 2: the problem, and what a tensor copy does ==========================================

constexpr int kTileRows = 32;                                        // box height (rows)
constexpr int kTileCols = 256;                                       // box width (floats): 1 KiB per row, the widest box
constexpr int kTileElems = kTileRows * kTileCols;
constexpr std::uint32_t kTileBytes = kTileElems * sizeof(float);     // 32 KiB per tile and per stage
constexpr int kMatrixCols = 16384;                                   // 64 KiB rows; --size sets the row count
constexpr std::size_t kRowBytes = kMatrixCols * sizeof(float);
constexpr int kPaddingCols = 3;               // padded matrices use pitch - 3 floats per row: not a 16-byte multiple
constexpr int kShiftCols = 4, kShiftRows = 3; // shifted tiles: out[r][c] = modify(in[r - 3][c - 4])
constexpr int kStoreGranuleElems = 16 / sizeof(float);  // a store writes whole 16-byte granules of a row
static_assert(kTileCols * sizeof(float) % 16 == 0, "TMA box rows (boxDim[0] x element size) are multiples of 16 bytes");
static_assert(kTileCols <= 256 && kTileRows <= 256, "TMA boxes are at most 256 elements in every dimension");
static_assert(kShiftCols * sizeof(float) % 16 == 0, "a box's start in dimension 0 is a multiple of 16 bytes");

// `rows` x `cols` floats, consecutive rows `pitch_elems` floats apart (pitch_elems >= cols).
struct MatrixView {
  int rows;
  int cols;
  int pitch_elems;
};

/// [matrix_request]
// The map of a matrix for this chapter's kernels: boxes of kTileRows x kTileCols floats.
inline TensorMapRequest matrix_request(const float* gmem_matrix, const MatrixView& m) {
  TensorMapRequest r;
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  r.rank = 2;
  r.global_address = gmem_matrix;
  r.global_dim[0] = static_cast<std::uint64_t>(m.cols);  // innermost first: columns...
  r.global_dim[1] = static_cast<std::uint64_t>(m.rows);  // ...then rows
  r.global_strides[0] = static_cast<std::uint64_t>(m.pitch_elems) * sizeof(float);  // bytes from a row to the next
  r.box_dim[0] = kTileCols;
  r.box_dim[1] = kTileRows;
  return r;  // element strides 1; no interleave, swizzle or L2 promotion; zero fill out of bounds
}
/// [matrix_request]

TMA_2D_HOST_DEVICE inline float modify(float x) { return 2.0f * x; }  // exact: zero stays zero

// The output tiles: tile t covers rows [y, y + kTileRows) and columns [x, x + kTileCols) of
// the output; its input box starts shift_rows rows higher and shift_cols columns further left.
struct TileGrid {
  int tiles_x;
  int num_tiles;
  int shift_cols;
  int shift_rows;
};
struct TileCoords {
  int x, y;  // column, row of the top-left element
};
TMA_2D_HOST_DEVICE inline TileCoords tile_origin(const TileGrid& g, int tile) {
  return {(tile % g.tiles_x) * kTileCols, (tile / g.tiles_x) * kTileRows};
}
inline TileGrid tile_grid(const MatrixView& m, bool shifted) {
  const int tiles_x = (m.cols + kTileCols - 1) / kTileCols;
  const int tiles_y = (m.rows + kTileRows - 1) / kTileRows;
  return {tiles_x, tiles_x * tiles_y, shifted ? kShiftCols : 0, shifted ? kShiftRows : 0};
}

/// [tma_model]
// What a tensor copy does, modelled on the host. A load of the box whose top-left element is
// (x, y) reads the elements inside the matrix and fills the rest with zeros; x and y may be
// negative. A store writes the box elements inside the matrix and drops the rest, except that
// in dimension 0 it writes whole 16-byte granules: a row whose width is not a multiple of 16
// bytes gets up to 12 bytes of its padding overwritten (seen on the H100; the guide is silent).
// Element (r, c) of the box at (x, y) is read from the matrix, or else filled with zero.
inline bool loads_from_matrix(const MatrixView& m, int x, int y, int r, int c) {
  return y + r >= 0 && y + r < m.rows && x + c >= 0 && x + c < m.cols;
}
inline void load_box_model(const std::vector<float>& gmem, const MatrixView& m, int x, int y, float* box) {
  for (int r = 0; r < kTileRows; ++r) {
    for (int c = 0; c < kTileCols; ++c) {
      const bool inside = loads_from_matrix(m, x, y, r, c);
      box[r * kTileCols + c] = inside ? gmem[std::size_t(y + r) * m.pitch_elems + (x + c)] : 0.0f;
    }
  }
}
inline void store_box_model(std::vector<float>& gmem, const MatrixView& m, int x, int y, const float* box) {
  const int stored_cols = (m.cols + kStoreGranuleElems - 1) / kStoreGranuleElems * kStoreGranuleElems;
  for (int r = 0; r < kTileRows && y + r < m.rows; ++r) {
    for (int c = 0; c < kTileCols && x + c < stored_cols; ++c) {
      gmem[std::size_t(y + r) * m.pitch_elems + (x + c)] = box[r * kTileCols + c];
    }
  }
}
/// [tma_model]

// The host reference: every tile as the kernels do it. Elements no store reaches keep the poison.
inline std::vector<float> reference(const std::vector<float>& in, const MatrixView& m, bool shifted) {
  std::vector<float> out(in.size(), course::poison_value<float>());
  std::vector<float> box(kTileElems);
  const TileGrid grid = tile_grid(m, shifted);
  for (int tile = 0; tile < grid.num_tiles; ++tile) {
    const TileCoords at = tile_origin(grid, tile);
    load_box_model(in, m, at.x - grid.shift_cols, at.y - grid.shift_rows, box.data());
    for (float& v : box) v = modify(v);
    store_box_model(out, m, at.x, at.y, box.data());
  }
  return out;
}

// What runs without a GPU: the tile, and the rule check on the maps the chapter encodes.
inline void print_map_model(std::ostream& out) {
  out << "tile: " << kTileRows << " x " << kTileCols << " floats (" << kTileBytes / 1024 << " KiB)\n";
  const float* aligned = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);  // any 16-byte aligned address
  auto show = [&](const char* what, const MatrixView& m) {
    const std::optional<std::string> broken = broken_tensor_map_rule(matrix_request(aligned, m));
    out << "  " << what << ": " << m.rows << " x " << m.cols << " floats, row pitch " << m.pitch_elems * sizeof(float)
        << " B -> " << (broken ? "rejected: " + *broken : std::string("tensor map ok")) << '\n';
  };
  show("1 GiB matrix", {16384, kMatrixCols, kMatrixCols});
  show("rows of 1001 floats, packed", {999, 1001, 1001});
  show("rows of 1001 floats, padded", {999, 1001, 1004});
}
