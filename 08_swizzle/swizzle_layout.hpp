// 08_swizzle: where TMA puts each 16-byte chunk in shared memory, as one function, and what
// that does to the 32 shared-memory banks.
//
// This header holds the swizzle function and everything computed from it on the host: the
// printed pattern tables, the SVG figures in figures/, and the bank model that counts how
// many times a warp's shared-memory instruction is replayed. The kernels in swizzle.cu
// index shared memory through the same function, the figure tool (swizzle_figures.cpp)
// writes the figures from it, and swizzle_test.cu checks it against the hardware.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#shared-memory-bank-swizzling
// Driver: CUtensorMapSwizzle
//   https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
// PTX: tensor swizzling modes
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensor-swizzling-modes
#pragma once

#include <cuda_runtime.h>  // __host__ __device__ (empty for a host-only compiler)

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <set>
#include <string>
#include <vector>

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

/// [swizzled_chunk]
// THE swizzle. Read a shared-memory buffer as 128-byte rows of eight 16-byte chunks: the chunk
// that would sit at (row, chunk) without a swizzle is stored at (row, swizzled_chunk(...)).
// The XOR takes the row's place in the pattern, (row + offset) % pattern_rows, which is smaller
// than the number of chunks in a span, so a chunk never leaves its span. XOR is its own
// inverse: the same call maps a stored position back to the logical chunk.
// `offset` is the row of the pattern the buffer starts on (swizzle_offset below): TMA applies
// the pattern to shared-memory addresses, not to positions inside the buffer.
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

// ---- Host side: names, the printed table, the figures -----------------------------------------

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
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
      width, height, width, height);
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
    put("<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">banks</text>\n", kLeft + p * kCell + kCell / 2,
        kTop - 20);
    put("<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%d-%d</text>\n", kLeft + p * kCell + kCell / 2,
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
  put("<text x=\"%d\" y=\"%d\" font-size=\"11\">Each cell: the logical 16-byte chunk stored in that bank group "
      "of that 128-byte row.</text>\n",
      12, kTop + kRows * kCell + 26);
  put("<text x=\"%d\" y=\"%d\" font-size=\"11\">Drawn from swizzled_chunk() (swizzle_layout.hpp) by "
      "swizzle_figures.</text>\n",
      12, kTop + kRows * kCell + 44);
  svg += "</svg>\n";
  return svg;
}

// ---- The bank model ----------------------------------------------------------------------------

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
