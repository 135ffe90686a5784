// 09_device_tensormap, the model: the batch and the fields of its maps, on the host.
//
// Several float matrices of different shapes live back to back in one allocation; each gets its
// own pair of tensor maps (input, output). This header holds everything that needs no GPU: the
// tile, the layout of the tensors in the allocation, the table that numbers the tiles of all
// tensors in one sequence (the kernels walk it), the tensor-map request of each tensor, the
// rules every request must pass before a kernel encodes its map (course/tensor_map.hpp, the
// course's one rule check), the host model of what one tensor copy does (zero fill on loads,
// clipping on stores) from which the reference is computed, PTX's numbers for the map fields
// that tensormap.replace takes as immediates, the --size rule and the batch table the program prints.
// Host code only (the few functions the kernels share are __host__ __device__ under nvcc);
// device_tensormap.cu (the lesson) and device_tensormap_lab.cu include it, and
// device_tensormap_test.cu checks it on the CPU.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#encoding-a-tensor-map-on-device
// Rules: course/tensor_map.hpp (taught in chapter 07).
// PTX field codes: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensormap-new-val-validity
#pragma once

#include <cuda.h>  // CUtensorMapDataType and the other tensor-map enums (types only)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/pattern.hpp"
#include "course/cli.hpp"         // course::format_size
#include "course/tensor_map.hpp"  // course::TensorMapRequest, course::broken_tensor_map_rule()

// The few functions the kernels share with the host model; plain host functions without nvcc.
#ifdef __CUDACC__
#define TENSORMAP_HOST_DEVICE __host__ __device__
#else
#define TENSORMAP_HOST_DEVICE
#endif

constexpr int kRank = 2;                                          // every tensor is a matrix
constexpr int kTileRows = 32;                                     // box height, every tensor
constexpr int kTileCols = 256;                                    // widest box: 1 KiB rows
constexpr int kTileElems = kTileRows * kTileCols;                 // the largest box (32 KiB)
constexpr int kGranuleElems = 16 / sizeof(float);                 // 16 bytes: pitches and box rows
constexpr std::size_t kTensorAlignBytes = 128;                    // where each tensor starts
constexpr int kMaxTensors = 32;                                   // the device map array holds 2 per tensor
constexpr int kMapsPerTensor = 2;                                 // [2t] input of tensor t, [2t + 1] its output
constexpr int kMaxMaps = kMaxTensors * kMapsPerTensor;
static_assert(kTileCols % kGranuleElems == 0, "a box row (boxDim[0] x element size) is a multiple of 16 bytes");
static_assert(kTileCols <= 256 && kTileRows <= 256, "a box is at most 256 elements in every dimension");
static_assert(kTensorAlignBytes % 16 == 0, "a tensor map's global address is 16-byte aligned");

constexpr int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

/// [layout]
// What a caller brings: a matrix of rows x cols floats whose rows are pitch_elems floats apart.
struct TensorShape {
  int rows;
  int cols;
  int pitch_elems;
};

// Where the batch puts it, and how its tiles are cut. The box is as wide as the row (rounded up
// to 16 bytes) but never wider than kTileCols: a 61-float row gets a 64-float box, not 256.
struct TensorLayout {
  int rows;
  int cols;
  int pitch_elems;
  int box_cols;               // boxDim[0]; boxDim[1] is kTileRows for every tensor
  int tiles_x;                // boxes per row of tiles
  std::int64_t offset_elems;  // first element, counted from the start of the batch allocation
};

// The batch as the kernels see it: one __grid_constant__ parameter (about 1 KiB).
struct Batch {
  int num_tensors;
  int num_tiles;                         // tiles of all tensors
  TensorLayout tensors[kMaxTensors];
  int first_tile[kMaxTensors + 1];       // tensor t owns tiles [first_tile[t], first_tile[t + 1])
};
/// [layout]

// The batch on the host: the layouts and the size of the allocation that holds them.
struct BatchPlan {
  std::vector<TensorLayout> tensors;
  std::int64_t total_elems = 0;
  int num_tiles = 0;
};

// Places the tensors one after another, each at the next kTensorAlignBytes boundary.
inline BatchPlan plan_batch(const std::vector<TensorShape>& shapes) {
  constexpr std::int64_t kAlignElems = kTensorAlignBytes / sizeof(float);
  BatchPlan plan;
  for (const TensorShape& s : shapes) {
    TensorLayout t{};
    t.rows = s.rows;
    t.cols = s.cols;
    t.pitch_elems = s.pitch_elems;
    t.box_cols = std::clamp(round_up(s.cols, kGranuleElems), kGranuleElems, kTileCols);
    t.tiles_x = std::max(0, (s.cols + t.box_cols - 1) / t.box_cols);
    t.offset_elems = (plan.total_elems + kAlignElems - 1) / kAlignElems * kAlignElems;
    const int tiles_y = std::max(0, (s.rows + kTileRows - 1) / kTileRows);
    plan.total_elems = t.offset_elems + std::max<std::int64_t>(0, std::int64_t{s.rows} * s.pitch_elems);
    plan.num_tiles += t.tiles_x * tiles_y;
    plan.tensors.push_back(t);
  }
  return plan;
}

// The kernels' parameter. Call only for a plan that batch_problems() accepted.
inline Batch batch_param(const BatchPlan& plan) {
  Batch batch{};
  batch.num_tensors = static_cast<int>(plan.tensors.size());
  batch.num_tiles = plan.num_tiles;
  for (int t = 0; t < batch.num_tensors; ++t) {
    const TensorLayout& layout = plan.tensors[t];
    batch.tensors[t] = layout;
    batch.first_tile[t + 1] = batch.first_tile[t] + layout.tiles_x * ((layout.rows + kTileRows - 1) / kTileRows);
  }
  return batch;
}

struct TileCoords {
  int x, y;  // column and row of the box's top-left element
};
// Where tile `local` of tensor t starts: tiles run along rows of tiles, left to right.
TENSORMAP_HOST_DEVICE inline TileCoords tile_origin(const TensorLayout& t, int local) {
  return {(local % t.tiles_x) * t.box_cols, (local / t.tiles_x) * kTileRows};
}

/// [tensor_request]
// The map of one tensor, as the driver would be asked for it. The device kernels replace the
// same fields with the same values; the host checks this request before they do.
inline course::TensorMapRequest tensor_request(const float* gmem_matrix, const TensorLayout& t) {
  course::TensorMapRequest r;  // float32, element strides 1, no interleave/swizzle/L2 promotion, zero fill
  r.rank = kRank;
  r.global_address = gmem_matrix;
  r.global_dim[0] = static_cast<std::uint64_t>(t.cols);  // innermost first
  r.global_dim[1] = static_cast<std::uint64_t>(t.rows);
  r.global_strides[0] = static_cast<std::uint64_t>(t.pitch_elems) * sizeof(float);  // bytes from a row to the next
  r.box_dim[0] = static_cast<std::uint32_t>(t.box_cols);
  r.box_dim[1] = kTileRows;
  return r;
}
/// [tensor_request]

// The template: a valid map of a one-tile placeholder matrix at the batch's first byte. Its
// type, rank, box height, element strides, swizzle and fill are what every tensor needs; the
// device replaces the rest, so its own shape never reaches a tensor copy.
inline course::TensorMapRequest template_request(const float* gmem_batch) {
  return tensor_request(gmem_batch, TensorLayout{kTileRows, kTileCols, kTileCols, kTileCols, 1, 0});
}

// A list of lines as one text, each line on its own indented line.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

/// [batch_problems]
// TUTORIAL: tensormap.replace checks nothing. A map the driver would refuse (a pitch that is not
// a multiple of 16 bytes, a misaligned address, an empty matrix) is written into the map as
// it is, and the first tensor copy that uses it fails or moves the wrong bytes. So every
// tensor's two requests go through the same rules as the driver's (course/tensor_map.hpp)
// before any kernel encodes a map: one line per problem, naming the tensor.
inline std::vector<std::string> batch_problems(const BatchPlan& plan, const float* gmem_in, const float* gmem_out) {
  std::vector<std::string> problems;
  const std::size_t count = plan.tensors.size();
  if (count < 1 || count > static_cast<std::size_t>(kMaxTensors)) {
    problems.push_back("a batch holds 1 to " + std::to_string(kMaxTensors) + " tensors (the device map array has " +
                       std::to_string(kMaxMaps) + " slots); this one has " + std::to_string(count));
  }
  for (std::size_t i = 0; i < count; ++i) {
    const TensorLayout& t = plan.tensors[i];
    const std::string name = "tensor " + std::to_string(i) + " (" + std::to_string(t.rows) + " x " +
                             std::to_string(t.cols) + " floats, pitch " + std::to_string(t.pitch_elems) + "): ";
    const std::optional<std::string> in = course::broken_tensor_map_rule(tensor_request(gmem_in + t.offset_elems, t));
    const std::optional<std::string> out = course::broken_tensor_map_rule(tensor_request(gmem_out + t.offset_elems, t));
    if (in) problems.push_back(name + "input map: " + *in);
    if (out && out != in) problems.push_back(name + "output map: " + *out);
  }
  return problems;
}
/// [batch_problems]

/// [tma_model]
// What one tensor copy does, modelled on the host (the behaviour chapter 07 measured). A load of
// the box at (x, y) brings the elements inside the matrix and zeros for the rest, also for
// negative x or y. A store writes the box elements inside the matrix, except that along a row
// it writes whole 16-byte granules: the padding up to the next 16-byte boundary is written too.
inline void load_box_model(const float* matrix, const TensorLayout& t, int x, int y, float* box) {
  for (int r = 0; r < kTileRows; ++r) {
    for (int c = 0; c < t.box_cols; ++c) {
      const bool inside = y + r >= 0 && y + r < t.rows && x + c >= 0 && x + c < t.cols;
      box[r * t.box_cols + c] = inside ? matrix[std::int64_t{y + r} * t.pitch_elems + (x + c)] : 0.0f;
    }
  }
}
inline void store_box_model(float* matrix, const TensorLayout& t, int x, int y, const float* box) {
  const int stored_cols = round_up(t.cols, kGranuleElems);
  for (int r = 0; r < kTileRows && y + r < t.rows; ++r) {
    for (int c = 0; c < t.box_cols && x + c < stored_cols; ++c) {
      matrix[std::int64_t{y + r} * t.pitch_elems + (x + c)] = box[r * t.box_cols + c];
    }
  }
}
/// [tma_model]

TENSORMAP_HOST_DEVICE inline float modify(float x) { return 2.0f * x; }  // exact; zero stays zero
#ifdef __CUDACC__
// The same computation on a box in shared memory: each thread of the block doubles float4 chunks.
__device__ inline void modify_box(float* smem_box, int box_elems) {
  float4* chunks = reinterpret_cast<float4*>(smem_box);
  for (int c = threadIdx.x; c < box_elems / 4; c += blockDim.x) {
    const float4 v = chunks[c];
    chunks[c] = make_float4(modify(v.x), modify(v.y), modify(v.z), modify(v.w));
  }
}
#endif

// The reference: every tile of every tensor as the kernels do it, each box element through `op`
// (the lesson's modify(); the lab's plain copies keep the value). What no store reaches (the
// padding beyond a row's last granule, the gaps between tensors) keeps the poison.
template <class Op>
std::vector<float> reference_with(const std::vector<float>& in, const BatchPlan& plan, Op op) {
  std::vector<float> out(in.size(), course::poison_value<float>());
  std::vector<float> box(kTileElems);
  for (const TensorLayout& t : plan.tensors) {
    const int tiles_y = (t.rows + kTileRows - 1) / kTileRows;
    for (int local = 0; local < t.tiles_x * tiles_y; ++local) {
      const TileCoords at = tile_origin(t, local);
      load_box_model(in.data() + t.offset_elems, t, at.x, at.y, box.data());
      for (int i = 0; i < t.box_cols * kTileRows; ++i) box[i] = op(box[i]);
      store_box_model(out.data() + t.offset_elems, t, at.x, at.y, box.data());
    }
  }
  return out;
}
inline std::vector<float> reference(const std::vector<float>& in, const BatchPlan& plan) {
  return reference_with(in, plan, [](float x) { return modify(x); });
}

// Bytes of the matrices themselves (no padding, no gaps), each read once and written once by a run.
inline std::size_t batch_bytes_moved(const BatchPlan& plan) {
  std::size_t elems = 0;
  for (const TensorLayout& t : plan.tensors) elems += std::size_t(t.rows) * t.cols;
  return 2 * elems * sizeof(float);
}

/// [default_batch]
// The batch a --size makes: eight tensors, equal shares of the bytes, awkward widths (rows of
// 16381, 1001 or 61 floats are not multiples of 16 bytes; some pitches carry extra padding).
struct BatchWidth {
  int cols;
  int pad_elems;  // padding beyond the next 16-byte boundary, a multiple of 4 floats
};
constexpr BatchWidth kBatchWidths[] = {{16381, 0}, {1001, 4}, {61, 0}, {4093, 12}, {250, 0}, {12289, 8}, {777, 0}, {8192, 0}};
constexpr int kBatchTensors = sizeof(kBatchWidths) / sizeof(kBatchWidths[0]);
static_assert(kBatchTensors <= kMaxTensors, "the default batch fits the device map array");

// num_tensors tensors (the lab asks for other counts) take the widths above in turn.
inline std::vector<TensorShape> default_shapes(std::size_t total_bytes, int num_tensors = kBatchTensors) {
  std::vector<TensorShape> shapes;
  for (int i = 0; i < num_tensors; ++i) {
    const BatchWidth& w = kBatchWidths[i % kBatchTensors];
    const int pitch = round_up(w.cols, kGranuleElems) + w.pad_elems;
    const std::size_t rows = total_bytes / num_tensors / (std::size_t(pitch) * sizeof(float));
    shapes.push_back({static_cast<int>(std::max<std::size_t>(rows, 1)), w.cols, pitch});
  }
  return shapes;
}
/// [default_batch]

// The lab's friendly batch: num_tensors equal matrices 8192 floats wide, chapter 07's shape:
// every box full (32 x 256 floats, 1 KiB rows), no padding, no partial tile along a row.
constexpr int kUniformCols = 8192;
inline std::vector<TensorShape> uniform_shapes(std::size_t total_bytes, int num_tensors) {
  const std::size_t rows = total_bytes / num_tensors / (std::size_t{kUniformCols} * sizeof(float));
  return std::vector<TensorShape>(num_tensors, TensorShape{static_cast<int>(std::max<std::size_t>(rows, 1)),
                                                           kUniformCols, kUniformCols});
}

// ---- The life of a map edited on the device (the minimal kernel, edit_address) ----------------

/// [map_life]
// Where the map's 128 bytes are written and read, and by which proxy. TMA reads a map through
// the tensormap proxy only; what the generic proxy wrote (st.global, tensormap.replace) reaches
// it after a release and then an acquire of the map. A __grid_constant__ parameter needs neither.
enum class MapOp { write, read, release, acquire };
enum class MapProxy { host, generic, tensormap };
struct MapStep {
  const char* step;         // what happens to the map
  const char* instruction;  // how the program does it
  MapProxy proxy;           // who writes or reads it (a fence: the proxy it orders towards)
  MapOp op;
};
inline std::vector<MapStep> edit_address_life() {
  return {{"encode", "cuTensorMapEncodeTiled (host)", MapProxy::host, MapOp::write},
          {"copy", "*gmem_map = out_map (st.global)", MapProxy::generic, MapOp::write},
          {"edit", "tensormap.replace.global_address", MapProxy::generic, MapOp::write},
          {"release", "fence.proxy.tensormap::generic.release", MapProxy::tensormap, MapOp::release},
          {"acquire", "fence.proxy.tensormap::generic.acquire", MapProxy::tensormap, MapOp::acquire},
          {"use", "cp.async.bulk.tensor (TMA load)", MapProxy::tensormap, MapOp::read}};
}
// The first step at which TMA reads the map while a generic write of it is not yet released
// and then acquired, or -1 when every read sees the last write.
inline int first_stale_read(const std::vector<MapStep>& steps) {
  bool unreleased = false, unacquired = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const MapStep& s = steps[i];
    if (s.op == MapOp::write && s.proxy == MapProxy::generic) unreleased = unacquired = true;
    if (s.op == MapOp::release) unreleased = false;
    if (s.op == MapOp::acquire && !unreleased) unacquired = false;
    if (s.op == MapOp::read && s.proxy == MapProxy::tensormap && unacquired) return int(i);
  }
  return -1;
}
/// [map_life]

// ---- PTX's numbers for the fields a template fixes ------------------------------------------

/// [ptx_codes]
// tensormap.replace takes the element type, interleave, swizzle and fill mode as immediates from
// its own table ("Tensormap new_val validity"), not as CUtensorMapDataType & co. Most element
// types have the driver's number; FLOAT64, BFLOAT16 and FLOAT32_FTZ (the driver's 8, 9, 10) are
// PTX's 9, 10 and 8. -1: not available on sm_90a.
TENSORMAP_HOST_DEVICE constexpr int ptx_elemtype(CUtensorMapDataType type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 0;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_INT32: return 3;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: return 4;
    case CU_TENSOR_MAP_DATA_TYPE_INT64: return 5;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: return 6;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return 7;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: return 8;  // the driver's 10
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 9;      // the driver's 8
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 10;    // the driver's 9
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: return 11;
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 12;
    default: return -1;
  }
}
TENSORMAP_HOST_DEVICE constexpr int ptx_interleave(CUtensorMapInterleave interleave) {
  return interleave <= CU_TENSOR_MAP_INTERLEAVE_32B ? static_cast<int>(interleave) : -1;  // none, 16B, 32B
}
TENSORMAP_HOST_DEVICE constexpr int ptx_swizzle(CUtensorMapSwizzle swizzle) {
  return swizzle <= CU_TENSOR_MAP_SWIZZLE_128B ? static_cast<int>(swizzle) : -1;  // none, 32B, 64B, 128B
}
TENSORMAP_HOST_DEVICE constexpr int ptx_fill_mode(CUtensorMapFloatOOBfill fill) {
  return fill <= CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA ? static_cast<int>(fill) : -1;  // zeros, NaN
}
/// [ptx_codes]

// ---- The command line, and what the programs print without a GPU -----------------------------

// The rule for --size, the bytes of the whole batch: whole MiB, at most 16 GiB.
inline std::optional<std::string> batch_size_problem(std::size_t bytes) {
  if (bytes % (1u << 20) != 0 || bytes == 0) return "--size must be a whole number of MiB (at least 1M)";
  if (bytes > (std::size_t{16} << 30)) return "--size must be at most 16G";
  return std::nullopt;
}

// One line about a batch: tensors, maps, tiles, the range of box sizes, the bytes a run moves.
inline std::string batch_summary(const BatchPlan& plan) {
  int min_box_cols = kTileCols, max_box_cols = 0;
  for (const TensorLayout& t : plan.tensors) {
    min_box_cols = std::min(min_box_cols, t.box_cols);
    max_box_cols = std::max(max_box_cols, t.box_cols);
  }
  char line[160];
  std::snprintf(line, sizeof line, "%zu tensors, %zu maps, %d tiles, boxes of %.1f to %.1f KiB, ", plan.tensors.size(),
                kMapsPerTensor * plan.tensors.size(), plan.num_tiles, min_box_cols * kTileRows * sizeof(float) / 1024.0,
                max_box_cols * kTileRows * sizeof(float) / 1024.0);
  return line + course::format_size(batch_bytes_moved(plan)) + " read plus written";
}

// The batch of `total_bytes`, one line per tensor, and the host check of its maps; then a batch
// the check refuses.
inline void print_batch_model(std::ostream& out, std::size_t total_bytes) {
  const BatchPlan plan = plan_batch(default_shapes(total_bytes));
  out << "batch of the default --size (" << course::format_size(total_bytes) << "): " << plan.tensors.size()
      << " float matrices in one allocation, " << plan.num_tiles << " tiles, one input and one output map each\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %6s %8s x %-6s %6s %10s %7s %10s\n", "tensor", "rows", "cols", "pitch", "box",
                "tiles", "offset");
  out << line;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorLayout& t = plan.tensors[i];
    const std::string box = std::to_string(kTileRows) + " x " + std::to_string(t.box_cols);
    std::snprintf(line, sizeof line, "  %6zu %8d x %-6d %6d %10s %7d %10lld\n", i, t.rows, t.cols, t.pitch_elems,
                  box.c_str(), t.tiles_x * ((t.rows + kTileRows - 1) / kTileRows),
                  static_cast<long long>(t.offset_elems));
    out << line;
  }
  const float* aligned = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);  // any 16-byte aligned address
  const std::vector<std::string> none = batch_problems(plan, aligned, aligned);
  out << "host check of every map before a kernel encodes it (tensormap.replace checks nothing): "
      << (none.empty() ? "all " + std::to_string(kMapsPerTensor * plan.tensors.size()) + " maps pass" : joined(none))
      << "\na batch it refuses:" << joined(batch_problems(plan_batch({{999, 1001, 1001}, {0, 64, 64}, {40, 100, 104}}),
                                                          aligned, aligned))
      << '\n';
}
