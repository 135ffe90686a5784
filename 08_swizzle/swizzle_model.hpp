/// @file
/// @brief 08_swizzle, the model: where TMA puts each 16-byte chunk of a box in shared memory, as
/// one function, and what that does to the 32 shared-memory banks, all on the host.
///
/// Part 1 is the swizzle: the four modes, swizzled_chunk() (the XOR), the guide's offset formula,
/// and where every byte of a box of any legal shape and element size lands (box_smem_byte(),
/// box_elem_smem_byte(), box_footprint()), its footprint and the bytes its barrier expects.
/// Part 2 is who moves which chunk in the chapter's kernels: the fp32 tile and its 4 x 4 quads
/// (swizzle.cu, swizzle_lab.cu), the guide's 8 x 8 int4 tile (transpose_guide.cu), the classic
/// padded tile. Part 3 is the bank model, which counts the replays of a warp's shared-memory
/// instruction from those addresses, and its table for every variant. Part 4 prints the pattern
/// tables and draws the SVG figures in figures/ (swizzle_figures.cpp writes them). Part 5 is the
/// problem: the reference transpose, the size rule, the tensor-map request of a matrix.
/// The kernels index shared memory through the same functions; swizzle_test.cu checks them against
/// the hardware (a TMA load of every legal box is the oracle).
/// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#shared-memory-bank-swizzling
/// PTX: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensor-swizzling-modes
#pragma once

#include <cuda.h>          // CUtensorMapSwizzle, CUtensorMapDataType (types only)
#include <cuda_runtime.h>  // __host__ __device__ (empty for a host-only compiler)

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "course/tensor_map.hpp"  // course::TensorMapRequest: the one encoder and rule check

// ==== Part 1: the swizzle ==========================================================================

/// [swizzle_modes]
// The swizzle modes of a tensor map on compute capability 9.0, numbered like CUtensorMapSwizzle.
enum class Swizzle : int { none = 0, b32 = 1, b64 = 2, b128 = 3 };

constexpr int kChunkBytes = 16;  // the unit a swizzle moves: four banks wide
constexpr int kRowBytes = 128;   // one row of the pattern: 8 chunks, all 32 banks once
constexpr int kRowChunks = kRowBytes / kChunkBytes;
constexpr int kBankCount = 32;
constexpr int kBankBytes = 4;

// The span inside which chunks move: 32, 64 or 128 bytes (none: a chunk stays where it is).
__host__ __device__ constexpr int span_bytes(Swizzle mode) {
  return mode == Swizzle::none ? kChunkBytes : kChunkBytes << static_cast<int>(mode);
}
// Chunks per span, which is also the number of 128-byte rows after which the pattern repeats.
__host__ __device__ constexpr int pattern_rows(Swizzle mode) { return span_bytes(mode) / kChunkBytes; }
// Bytes after which the pattern repeats: 256, 512, 1024 (none: every row looks the same).
__host__ __device__ constexpr int repeat_bytes(Swizzle mode) { return pattern_rows(mode) * kRowBytes; }
/// [swizzle_modes]

inline CUtensorMapSwizzle tensor_map_swizzle(Swizzle mode) { return static_cast<CUtensorMapSwizzle>(mode); }

/// [swizzled_chunk]
// THE swizzle. Read shared memory as 128-byte rows of eight 16-byte chunks: the chunk that would
// sit at (row, chunk) without a swizzle is stored at (row, swizzled_chunk(...)). The XOR takes the
// row's place in the pattern, (row + offset) % pattern_rows, which is smaller than the number of
// chunks in a span, so a chunk never leaves its span. XOR is its own inverse: the same call maps a
// stored position back to the logical chunk.
// `offset` is the row of the pattern the buffer starts on (swizzle_offset below): TMA applies the
// pattern to shared-memory addresses, not to positions inside the buffer.
__host__ __device__ constexpr int swizzled_chunk(Swizzle mode, int row, int chunk, int offset = 0) {
  return chunk ^ ((row + offset) % pattern_rows(mode));
}

// The guide's offset formula, on the shared-memory address (what __cvta_generic_to_shared gives)
// of a buffer's first byte: 0 when the buffer is aligned to repeat_bytes(mode).
__host__ __device__ constexpr int swizzle_offset(Swizzle mode, std::uint32_t smem_addr) {
  return static_cast<int>(smem_addr / kRowBytes) % pattern_rows(mode);
}

// The same map for a byte: where byte `logical` of a buffer (counted without the swizzle) is stored.
__host__ __device__ constexpr std::uint32_t swizzled_byte(Swizzle mode, std::uint32_t logical, int offset = 0) {
  const int row = static_cast<int>(logical / kRowBytes);
  const int chunk = static_cast<int>(logical % kRowBytes) / kChunkBytes;
  return row * kRowBytes + swizzled_chunk(mode, row, chunk, offset) * kChunkBytes + logical % kChunkBytes;
}
/// [swizzled_chunk]

/// [box_layout]
// Where a TMA load puts a box in shared memory. Without a swizzle the box's rows follow each other,
// `inner_bytes` apart. With a swizzle every box row takes a whole span, however narrow the box's
// inner dimension (the guide asks for an allocation that holds the full swizzle width), and the
// swizzle then moves each chunk inside the 128-byte row of shared memory it lies in: with a 64B
// span two box rows share one, with a 32B span four do.
__host__ __device__ constexpr int box_row_pitch(Swizzle mode, int inner_bytes) {
  return mode == Swizzle::none ? inner_bytes : span_bytes(mode);
}
// Where byte `byte` of box row `row` lands, counted from the box's first byte in shared memory.
__host__ __device__ constexpr std::uint32_t box_smem_byte(Swizzle mode, int inner_bytes, int row, int byte,
                                                          int offset = 0) {
  return swizzled_byte(mode, static_cast<std::uint32_t>(row * box_row_pitch(mode, inner_bytes) + byte), offset);
}
// The same place for byte `byte` of element `col` of box row `row`, in a box `box_cols` elements of
// `elem_bytes` bytes wide. TMA moves bytes: the element size counts only through the row's bytes and
// the element's first byte, and an element never straddles a chunk (16 is a multiple of 1, 2, 4, 8).
__host__ __device__ constexpr std::uint32_t box_elem_smem_byte(Swizzle mode, int elem_bytes, int box_cols, int row,
                                                               int col, int byte, int offset = 0) {
  return box_smem_byte(mode, box_cols * elem_bytes, row, col * elem_bytes + byte, offset);
}
// The shared memory a box of `rows` rows occupies: what to allocate, and where the next box may start.
__host__ __device__ constexpr std::uint32_t box_smem_bytes(Swizzle mode, int inner_bytes, int rows) {
  return static_cast<std::uint32_t>(rows * box_row_pitch(mode, inner_bytes));
}
// The bytes a load of the box delivers, which its barrier's expect-tx must announce: rows x inner
// bytes, whatever the swizzle. For a swizzled box narrower than the span this is less than the
// footprint: the rest of each span is allocated but never written.
__host__ __device__ constexpr std::uint32_t box_tx_bytes(int inner_bytes, int rows) {
  return static_cast<std::uint32_t>(rows * inner_bytes);
}
// The layout above holds for boxes whose rows are whole chunks, no wider than the span (the guide's
// Table 25; course::broken_tensor_map_rule checks it with every other rule before a map is encoded).
constexpr bool box_fits_span(Swizzle mode, int inner_bytes) {
  const bool whole_chunks = inner_bytes > 0 && inner_bytes % kChunkBytes == 0;
  return whole_chunks && (mode == Swizzle::none || inner_bytes <= span_bytes(mode));
}
/// [box_layout]

/// [box_footprint]
// The footprint of a box after a TMA load, byte by byte: entry i is the number of the box byte
// stored at byte i of the footprint (counted row by row, row * inner_bytes + byte, as the box lies
// in global memory), or kUntouched where the load writes nothing and whatever was there stays.
constexpr int kUntouched = -1;
inline std::vector<int> box_footprint(Swizzle mode, int elem_bytes, int box_cols, int rows, int offset = 0) {
  const int inner_bytes = box_cols * elem_bytes;
  std::vector<int> source(box_smem_bytes(mode, inner_bytes, rows), kUntouched);
  for (int row = 0; row < rows; ++row) {
    for (int col = 0; col < box_cols; ++col) {
      for (int byte = 0; byte < elem_bytes; ++byte) {
        source[box_elem_smem_byte(mode, elem_bytes, box_cols, row, col, byte, offset)] =
            row * inner_bytes + col * elem_bytes + byte;
      }
    }
  }
  return source;
}
/// [box_footprint]

// The guide's index relation for a buffer of 128-byte rows, smem[y][((y + offset) % n) ^ x] with n
// = 8, 4, 2 for the 128B, 64B and 32B modes: `y` counts 128-byte rows of shared memory. Used with
// the row of a box whose rows are narrower than 128 bytes (64B or 32B spans), it is wrong.
constexpr int guide_relation_chunk(Swizzle mode, int y, int x, int offset = 0) {
  return ((y + offset) % pattern_rows(mode)) ^ x;
}

// ==== Part 2: who moves what in the chapter's kernels ==============================================

// The fp32 transpose: a tile is 32 x 32 floats, so one tile row is one 128-byte pattern row.
constexpr int kTileDim = 32;
constexpr int kTileBytes = kTileDim * kTileDim * sizeof(float);  // 4 KiB
constexpr int kQuadDim = 4;                                      // a thread moves a 4 x 4 quad: a chunk per row
constexpr int kQuadsPerSide = kTileDim / kQuadDim;               // 8
constexpr int kTileThreads = kQuadsPerSide * kQuadsPerSide;      // 64: one quad per thread
static_assert(kTileDim * sizeof(float) == kRowBytes, "a tile row must be one 128-byte row of the pattern");
static_assert(kQuadDim * sizeof(float) == kChunkBytes, "a quad row must be one 16-byte chunk");
static_assert(kTileBytes % 1024 == 0, "tiles laid end to end must each start where the 128B pattern starts");

/// [quad_plan]
// Thread t owns the 4 x 4 quad in quad column qc = t / 8 and quad row qr = t % 8, so the 8 lanes
// of a quarter-warp own one quad column, top to bottom. A quad's four rows are four 16-byte chunks
// of one chunk column: with a plain layout all eight lanes hit the same four banks. The 128B
// swizzle spreads chunk column qc over the eight bank groups, but only across eight consecutive
// rows, and rows 4 qr + k (same k) are four apart. So each lane starts at another row of its quad:
// its k-th load takes row k ^ rotation, and at every step the quarter-warp reads eight rows that
// differ in row % 8.
struct QuadOwner {
  int qr, qc, rotation;
};
__host__ __device__ constexpr QuadOwner quad_owner(int thread) {
  return {thread % kQuadsPerSide, thread / kQuadsPerSide, (thread % kQuadsPerSide >> 1) & 3};
}
// Byte of chunk `chunk` of tile row `row`, in a tile whose first row is pattern row `offset`.
__host__ __device__ constexpr std::uint32_t tile_chunk_byte(Swizzle mode, int row, int chunk, int offset) {
  return row * kRowBytes + swizzled_chunk(mode, row, chunk, offset) * kChunkBytes;
}
// Byte of the k-th 16-byte load of `thread` in the input tile: quad row k ^ rotation.
__host__ __device__ constexpr std::uint32_t quad_load_byte(Swizzle mode, int thread, int k, int offset) {
  const QuadOwner q = quad_owner(thread);
  return tile_chunk_byte(mode, kQuadDim * q.qr + (k ^ q.rotation), q.qc, offset);
}
// Byte of the n-th 16-byte store: row n of the transposed quad goes to output row 4 qc + n, chunk qr.
__host__ __device__ constexpr std::uint32_t quad_store_byte(Swizzle mode, int thread, int n, int offset) {
  const QuadOwner q = quad_owner(thread);
  return tile_chunk_byte(mode, kQuadDim * q.qc + n, q.qr, offset);
}
/// [quad_plan]

// Swaps a and b where `swap` holds, in registers: the quad transpose undoes its rotation with it.
__host__ __device__ __forceinline__ void swap_if(bool swap, float4& a, float4& b) {
  const float4 old_a = a;
  a = make_float4(swap ? b.x : a.x, swap ? b.y : a.y, swap ? b.z : a.z, swap ? b.w : a.w);
  b = make_float4(swap ? old_a.x : b.x, swap ? old_a.y : b.y, swap ? old_a.z : b.z, swap ? old_a.w : b.w);
}

// The guide's example: an 8 x 8 tile of int4 (16-byte) elements, one 128-byte row per tile row,
// transposed by 8 threads.
constexpr int kGuideDim = 8;
constexpr int kGuideThreads = 8;
static_assert(kGuideDim * 16 == kRowBytes, "a guide tile row must be one 128-byte pattern row");

/// [guide_indexing]
// Thread j, step i of the guide's loop moves element (i, j) of the tile to element (j, i) of the
// transposed tile. Both live in 128-byte rows, so a swizzle only changes the column.
__host__ __device__ constexpr int guide_load_index(Swizzle mode, int i, int j, int offset) {
  return i * kGuideDim + swizzled_chunk(mode, i, j, offset);
}
__host__ __device__ constexpr int guide_store_index(Swizzle mode, int i, int j, int offset) {
  return j * kGuideDim + swizzled_chunk(mode, j, i, offset);
}
/// [guide_indexing]

// The classic transpose: 32 x 8 threads, each moving 4 floats of a 32 x 32 tile through a tile
// padded to 33 floats per row.
constexpr int kClassicRows = 8;
constexpr int kClassicPad = 1;  // one extra float per shared-memory row

// ==== Part 3: the bank model =======================================================================

/// [bank_model]
// How one warp-wide shared-memory instruction is served. Shared memory has 32 banks of 4 bytes;
// per pass (a wavefront) each bank delivers one 4-byte word, to any number of lanes that want
// that same word. An instruction moves 128 bytes per pass at most, so the hardware takes the
// lanes in groups: all 32 for 4-byte accesses, 16 for 8 bytes, 8 (a quarter-warp) for 16 bytes.
// A group needs as many wavefronts as the bank that is asked for the most different words.
struct BankCount {
  int wavefronts = 0;  // passes for the whole instruction
  int ideal = 0;       // passes without conflicts: one per lane group
  int ways = 0;        // worst lane group: 1 = conflict-free, 8 = eight-way conflict
};

// `lane_bytes[l]` is lane l's shared-memory byte address (lanes that do not take part are left
// out: pass fewer than 32); every lane accesses `access_bytes` (4, 8 or 16) bytes.
inline BankCount count_bank_conflicts(const std::vector<std::uint32_t>& lane_bytes, int access_bytes) {
  const int lanes_per_group = kBankCount * kBankBytes / access_bytes;
  BankCount count;
  for (std::size_t first = 0; first < lane_bytes.size(); first += lanes_per_group) {
    std::set<std::uint32_t> words[kBankCount];  // distinct words asked of each bank
    const std::size_t last = std::min(lane_bytes.size(), first + lanes_per_group);
    for (std::size_t lane = first; lane < last; ++lane) {
      for (int w = 0; w < access_bytes / kBankBytes; ++w) {
        const std::uint32_t word = lane_bytes[lane] / kBankBytes + w;
        words[word % kBankCount].insert(word);
      }
    }
    int group_ways = 0;
    for (const auto& bank : words) group_ways = std::max(group_ways, static_cast<int>(bank.size()));
    count.wavefronts += group_ways;
    count.ideal += 1;
    count.ways = std::max(count.ways, group_ways);
  }
  return count;
}
/// [bank_model]

// Lane addresses of one warp instruction of each kernel, from the functions the kernels use.
// The guide's kernel: step i of its 8 threads (16-byte int4 accesses).
inline std::vector<std::uint32_t> guide_lanes(Swizzle mode, bool store, int i) {
  std::vector<std::uint32_t> lanes;
  for (int j = 0; j < kGuideThreads; ++j) {
    lanes.push_back((store ? guide_store_index(mode, i, j, 0) : guide_load_index(mode, i, j, 0)) * 16);
  }
  return lanes;
}
// The quad transpose: step k of warp `warp` of a tile's 64 threads. rows_in_order: every lane
// reads quad row k (no rotation), to show what the rotation buys.
inline std::vector<std::uint32_t> quad_lanes(Swizzle mode, bool store, int warp, int k, bool rows_in_order = false) {
  std::vector<std::uint32_t> lanes;
  for (int lane = 0; lane < 32; ++lane) {
    const int t = warp * 32 + lane;
    const QuadOwner q = quad_owner(t);
    lanes.push_back(store           ? quad_store_byte(mode, t, k, 0)
                    : rows_in_order ? tile_chunk_byte(mode, kQuadDim * q.qr + k, q.qc, 0)
                                    : quad_load_byte(mode, t, k, 0));
  }
  return lanes;
}
// The classic kernel: thread (tx, ty) at step r stores tile[ty + r][tx] and loads tile[tx][ty + r].
inline std::vector<std::uint32_t> classic_lanes(int pad, bool load, int ty, int r) {
  std::vector<std::uint32_t> lanes;
  for (int tx = 0; tx < 32; ++tx) {
    const int row = load ? tx : ty + r, col = load ? ty + r : tx;
    lanes.push_back((row * (kTileDim + pad) + col) * sizeof(float));
  }
  return lanes;
}

// The worst instruction of a kernel's loads or stores, in conflict ways.
template <class Lanes>
int worst_ways(int instructions, int access_bytes, Lanes&& lanes) {
  int ways = 0;
  for (int n = 0; n < instructions; ++n) ways = std::max(ways, count_bank_conflicts(lanes(n), access_bytes).ways);
  return ways;
}

struct ModelRow {
  const char* what;
  int load_ways, store_ways;
};
// Every variant's shared-memory loads and stores, and two layouts the kernels avoid.
inline std::vector<ModelRow> bank_model() {
  const auto guide = [](Swizzle m, bool store) {
    return worst_ways(kGuideDim, 16, [&](int i) { return guide_lanes(m, store, i); });
  };
  // The two warps of one tile (every tile of a slab is transposed the same way), four steps each.
  const auto quad = [](Swizzle m, bool store, bool in_order) {
    return worst_ways(kTileThreads / 32 * kQuadDim, 16,
                      [&](int n) { return quad_lanes(m, store, n / kQuadDim, n % kQuadDim, in_order); });
  };
  const auto classic = [](int pad, bool load) {
    return worst_ways(kTileDim, 4, [&](int n) {  // ty = 0..7, then the next 8 rows: 32 instructions per tile
      return classic_lanes(pad, load, n % kClassicRows, n / kClassicRows * kClassicRows);
    });
  };
  return {
      {"guide_int4_unswizzled", guide(Swizzle::none, false), guide(Swizzle::none, true)},
      {"guide_int4_swizzled", guide(Swizzle::b128, false), guide(Swizzle::b128, true)},
      {"classic_padded", classic(kClassicPad, true), classic(kClassicPad, false)},
      {"(classic without the pad)", classic(0, true), classic(0, false)},
      {"tma_unswizzled", quad(Swizzle::none, false, false), quad(Swizzle::none, true, false)},
      {"tma_swizzled", quad(Swizzle::b128, false, false), quad(Swizzle::b128, true, false)},
      {"(tma_swizzled, rows in order)", quad(Swizzle::b128, false, true), quad(Swizzle::b128, true, true)},
  };
}

// ==== Part 4: names, the printed tables, the figures ===============================================

inline const char* swizzle_name(Swizzle mode) {
  switch (mode) {
    case Swizzle::b32: return "CU_TENSOR_MAP_SWIZZLE_32B";
    case Swizzle::b64: return "CU_TENSOR_MAP_SWIZZLE_64B";
    case Swizzle::b128: return "CU_TENSOR_MAP_SWIZZLE_128B";
    default: return "CU_TENSOR_MAP_SWIZZLE_NONE";
  }
}
// File-name part of a mode: none, 32B, 64B, 128B.
inline std::string swizzle_tag(Swizzle mode) {
  return mode == Swizzle::none ? "none" : std::to_string(span_bytes(mode)) + "B";
}
constexpr Swizzle kAllSwizzles[] = {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128};

/// [pattern_table]
// One line per 128-byte row: column p is bank group p (banks 4p..4p+3), and the number in it
// is the logical chunk stored there (the same XOR maps both ways).
inline void print_pattern(std::ostream& out, Swizzle mode, int offset = 0, int rows = 8) {
  for (int row = 0; row < rows; ++row) {
    char line[96];
    int length = std::snprintf(line, sizeof line, "  row %d (bytes %4d-%4d): ", row, row * kRowBytes,
                               row * kRowBytes + kRowBytes - 1);
    for (int p = 0; p < kRowChunks; ++p) {
      length += std::snprintf(line + length, sizeof line - length, " %d", swizzled_chunk(mode, row, p, offset));
    }
    out << line << '\n';
  }
}
/// [pattern_table]

// What the programs print before they look for a GPU: the patterns, the offset, the bank model.
inline void print_swizzle_model(std::ostream& out) {
  out << "\nWhere each 16-byte chunk of a 128-byte row is stored (swizzled_chunk): column p = banks 4p..4p+3,\n"
         "number = the logical chunk stored there.\n";
  for (Swizzle mode : kAllSwizzles) {
    out << swizzle_name(mode) << ": span " << span_bytes(mode) << " B, repeats every " << repeat_bytes(mode) << " B\n";
    print_pattern(out, mode);
  }
  out << "A 128B-swizzled buffer 384 bytes past a 1024-byte boundary has offset (384 / 128) % 8 = "
      << swizzle_offset(Swizzle::b128, 384) << ":\nits rows start at pattern row 3.\n";
  print_pattern(out, Swizzle::b128, swizzle_offset(Swizzle::b128, 384), 2);
  out << "\nBank model: replays of the worst warp instruction (1 = conflict-free)\n";
  char line[96];
  std::snprintf(line, sizeof line, "  %-30s %6s %6s\n", "variant", "loads", "stores");
  out << line;
  for (const ModelRow& row : bank_model()) {
    std::snprintf(line, sizeof line, "  %-30s %5d%s %5d%s\n", row.what, row.load_ways, "x", row.store_ways, "x");
    out << line;
  }
  out << '\n';
}

// The figure of one mode as an SVG document: 8 rows of 8 bank groups, each cell coloured and
// numbered by the logical chunk stored there. Deterministic, so figures/ can be compared with
// it byte for byte.
inline std::string swizzle_svg(Swizzle mode) {
  static const char* const kColours[kRowChunks] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                                   "#80b1d3", "#fdb462", "#b3de69", "#fccde5"};
  constexpr int kCell = 52, kLeft = 118, kTop = 74, kRows = 8;
  const int width = kLeft + kRowChunks * kCell + 16;
  const int height = kTop + kRows * kCell + 62;
  std::string svg;
  char text[512];
  auto put = [&](const char* format, auto... args) {
    std::snprintf(text, sizeof text, format, args...);
    svg += text;
  };
  // A viewBox and a relative width: the figure scales to its column (readable on a phone).
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
      "style=\"max-width:%dpx\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
      width, height, width);
  put("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
  put("<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">%s</text>\n", 12, swizzle_name(mode));
  if (mode == Swizzle::none) {
    put("<text x=\"%d\" y=\"44\" font-size=\"12\">no swizzle: every chunk stays where it is</text>\n", 12);
  } else {
    put("<text x=\"%d\" y=\"44\" font-size=\"12\">chunks move inside %d-byte spans; the pattern repeats every %d "
        "bytes</text>\n",
        12, span_bytes(mode), repeat_bytes(mode));
  }
  for (int p = 0; p < kRowChunks; ++p) {
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">banks</text>\n", kLeft + p * kCell + kCell / 2,
        kTop - 20);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%d-%d</text>\n", kLeft + p * kCell + kCell / 2,
        kTop - 7, 4 * p, 4 * p + 3);
  }
  for (int row = 0; row < kRows; ++row) {
    const int y = kTop + row * kCell;
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">row %d, byte %d</text>\n", kLeft - 8,
        y + kCell / 2 + 4, row, row * kRowBytes);
    for (int p = 0; p < kRowChunks; ++p) {
      const int chunk = swizzled_chunk(mode, row, p);
      const int x = kLeft + p * kCell;
      put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#333333\"/>\n", x, y, kCell, kCell,
          kColours[chunk]);
      put("<text x=\"%d\" y=\"%d\" font-size=\"18\" text-anchor=\"middle\">%d</text>\n", x + kCell / 2,
          y + kCell / 2 + 6, chunk);
    }
  }
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">Each cell: the logical 16-byte chunk stored in that "
      "bank group.</text>\n",
      12, kTop + kRows * kCell + 26);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">Drawn from swizzled_chunk() (swizzle_model.hpp).</text>\n",
      12, kTop + kRows * kCell + 44);
  svg += "</svg>\n";
  return svg;
}

// ==== Part 5: the problem ==========================================================================

// in: rows x cols, row-major; out: cols x rows.
template <class T>
std::vector<T> reference_transpose(const std::vector<T>& in, int rows, int cols) {
  std::vector<T> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
  return out;
}

// --size is an N x N fp32 matrix: 4 N^2 bytes, N a multiple of the 128-float slab width (swizzle.cu),
// at most 32768. Both lessons and the lab take the same sizes.
constexpr int kSideMultiple = 128;
inline std::optional<int> square_side(std::size_t bytes) {
  const auto side = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(bytes / 4))));
  if (bytes % 4 != 0 || side * side * 4 != bytes || side == 0 || side % kSideMultiple != 0 || side > 32768) {
    return std::nullopt;
  }
  return static_cast<int>(side);
}
inline std::optional<std::string> size_problem(std::size_t bytes) {
  if (square_side(bytes)) return std::nullopt;
  return "--size must be an N x N fp32 matrix, 4 N^2 bytes with N a multiple of 128 up to 32768: e.g. 4M "
         "(N = 1024), 64M (4096), 1G (16384)";
}

/// [matrix_request]
// A rows x cols row-major matrix of elements of `type`, moved in boxes of box_rows x box_cols.
// course::encode_tiled checks every rule (the box's inner bytes against the span among them)
// before the driver sees it.
inline course::TensorMapRequest matrix_request(CUtensorMapDataType type, const void* gmem, int rows, int cols,
                                               int box_rows, int box_cols, Swizzle mode) {
  course::TensorMapRequest r;
  r.data_type = type;  // FLOAT32 in the kernels; the tests also use 1-, 2-, 4- and 8-byte UINT types
  r.rank = 2;
  r.global_address = gmem;
  r.global_dim[0] = static_cast<std::uint64_t>(cols);  // innermost first
  r.global_dim[1] = static_cast<std::uint64_t>(rows);
  r.global_strides[0] = static_cast<std::uint64_t>(cols) * course::element_bytes(type);  // bytes from row to row
  r.box_dim[0] = static_cast<std::uint32_t>(box_cols);
  r.box_dim[1] = static_cast<std::uint32_t>(box_rows);
  r.swizzle = tensor_map_swizzle(mode);
  r.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  return r;
}
/// [matrix_request]
