/// @file
/// @brief 06_tma_1d, the model: the problem, the rules of a one-dimensional bulk copy and the
/// plan of a prefetch ring, checked and printed on the host.
///
/// cp.async.bulk moves whole 16-byte units between 16-byte aligned addresses, and one mbarrier
/// phase counts at most 2^20 - 1 transaction bytes. A copy that breaks a rule is undefined
/// behaviour, not a slower fallback, so the lesson (tma_1d.cu) and the lab (tma_1d_lab.cu) check
/// every request here before anything reaches the GPU. The tile plan (how many tiles, how many
/// bytes the last one holds) and the ring's shared-memory plan (bytes per block, blocks per SM,
/// bytes in flight) are host arithmetic too; tma_1d_test.cu tests all of it on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/cli.hpp"           // course::UsageError
#include "course/stage_cursor.hpp"  // course::StageCursor, COURSE_HOST_DEVICE

// ---- The problem: read, modify, write back -------------------------------------------------

/// [modify]
// Every element is replaced by a function of itself (the guide adds 1). 3x + 1 modulo 2^32 is
// a bijection, so a tile copied from or to the wrong place cannot produce the right bits.
COURSE_HOST_DEVICE inline std::uint32_t modify(std::uint32_t x) { return 3u * x + 1u; }
/// [modify]

// What every variant must write: the input, modified element by element.
inline std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = modify(in[i]);
  return out;
}

// ---- The rules of a bulk copy -----------------------------------------------------------------

constexpr std::size_t kBulkAlignBytes = 16;          // cp.async.bulk: addresses and sizes in 16-byte units
constexpr std::size_t kMaxTxBytes = (1u << 20) - 1;  // an mbarrier phase counts at most this many bytes

/// [tiles]
// An array of num_bytes is cut into tiles of tile_bytes; the last tile holds what is left.
// With num_bytes a multiple of 16 (a rule below), every tile is a legal bulk copy.
COURSE_HOST_DEVICE constexpr std::size_t num_tiles_of(std::size_t num_bytes, std::size_t tile_bytes) {
  return (num_bytes + tile_bytes - 1) / tile_bytes;
}
COURSE_HOST_DEVICE constexpr std::uint32_t tile_bytes_of(std::size_t tile, std::size_t num_bytes,
                                                         std::size_t tile_bytes) {
  const std::size_t left = num_bytes - tile * tile_bytes;
  return static_cast<std::uint32_t>(left < tile_bytes ? left : tile_bytes);
}
/// [tiles]

/// [tx_rule]
// A tile is one bulk copy completing on one barrier phase: its size must be whole 16-byte units
// and fit the phase's transaction count. Checked by static_assert on every tile size.
COURSE_HOST_DEVICE constexpr bool is_legal_tile(std::size_t tile_bytes) {
  return tile_bytes > 0 && tile_bytes % kBulkAlignBytes == 0 && tile_bytes <= kMaxTxBytes;
}
/// [tx_rule]

/// [rules]
// The rules of cp.async.bulk that depend on run-time values, checked before anything reaches
// the GPU. The shared-memory side (16-byte aligned buffers, 8-byte aligned barriers) is fixed at
// compile time.
inline std::optional<std::string> bulk_copy_problem(const void* gmem_in, const void* gmem_out,
                                                    std::size_t num_bytes) {
  const auto in = reinterpret_cast<std::uintptr_t>(gmem_in), out = reinterpret_cast<std::uintptr_t>(gmem_out);
  if (num_bytes % kBulkAlignBytes != 0) {
    return "bulk copies move whole 16-byte units: the array must hold a multiple of 4 uint32 elements (got " +
           std::to_string(num_bytes / sizeof(std::uint32_t)) + " elements, " + std::to_string(num_bytes) + " bytes)";
  }
  if (in % kBulkAlignBytes != 0) {
    return "bulk copies need 16-byte aligned global addresses: the input is " + std::to_string(in % kBulkAlignBytes) +
           " bytes past a 16-byte boundary";
  }
  if (out % kBulkAlignBytes != 0) {
    return "bulk copies need 16-byte aligned global addresses: the output is " +
           std::to_string(out % kBulkAlignBytes) + " bytes past a 16-byte boundary";
  }
  if (in != out && in < out + num_bytes && out < in + num_bytes) {
    return "the output may be the input itself (in place) but must not partly overlap it: one block's store "
           "could overwrite a tile that another block has not loaded yet";
  }
  return std::nullopt;
}

inline void require_bulk_copy_rules(const void* gmem_in, const void* gmem_out, std::size_t num_bytes) {
  if (std::optional<std::string> broken = bulk_copy_problem(gmem_in, gmem_out, num_bytes)) {
    throw course::UsageError(*broken);
  }
}
/// [rules]

// ---- The plan of a prefetch ring --------------------------------------------------------------

/// [smem_plan]
// Dynamic shared memory of a ring: `stages` tiles, then one 8-byte barrier per stage (the tiles
// are whole 16-byte units, so the barriers after them are 8-byte aligned).
constexpr std::size_t prefetch_smem_bytes(int stages, std::size_t stage_bytes) {
  return stages * stage_bytes + stages * sizeof(std::uint64_t);
}

// The ring's dynamic shared memory must fit the per-block opt-in maximum.
inline std::optional<std::string> smem_plan_problem(std::size_t smem_bytes, std::size_t optin_bytes) {
  if (smem_bytes <= optin_bytes) return std::nullopt;
  return "the prefetch ring needs " + std::to_string(smem_bytes) +
         " bytes of shared memory per block; this GPU allows " + std::to_string(optin_bytes) +
         " (cudaDevAttrMaxSharedMemoryPerBlockOptin): use fewer or smaller stages";
}

// Compute capability 9.0 has 228 KiB of shared memory per SM and reserves 1 KiB of it per block:
// how many blocks of a ring share an SM (shared memory being the limit).
constexpr std::size_t kSmemPerSm90 = 228 * 1024, kSmemReservedPerBlock = 1024;
constexpr std::size_t ring_blocks_per_sm_90(std::size_t smem_bytes) {
  return kSmemPerSm90 / (smem_bytes + kSmemReservedPerBlock);
}
/// [smem_plan]

// What the host checks and how the waits of a ring of kRingStages go, printed before the GPU is needed.
template <int kRingStages>
void print_host_model(std::ostream& out, std::size_t stage_bytes) {
  out << "bulk-copy rules checked on the host (each breach is one line, nothing is launched):\n"
      << "  global addresses 16-byte aligned, sizes a multiple of 16 bytes, output = input or disjoint;\n"
      << "  shared buffers 16-byte aligned and barriers 8-byte aligned (compile time), at most " << kMaxTxBytes
      << " bytes per barrier phase\n"
      << "  example: " << *bulk_copy_problem(nullptr, nullptr, 4100) << '\n'
      << "prefetch ring of " << kRingStages << " stages, stage/parity of a block's waits for its tiles 0..9: ";
  course::StageCursor<kRingStages> cursor;
  for (int k = 0; k < 10; ++k, cursor.advance()) out << cursor.stage << '/' << cursor.phase << ' ';
  out << '\n';
  for (int stages = 1; stages <= 4; ++stages) {
    const std::size_t smem = prefetch_smem_bytes(stages, stage_bytes);
    const std::size_t blocks = ring_blocks_per_sm_90(smem);
    out << "  ring of " << stages << " x " << stage_bytes / 1024 << " KiB: " << smem << " bytes per block, " << blocks
        << (blocks == 1 ? " block" : " blocks") << " per SM on 9.0, up to " << blocks * stages * stage_bytes / 1024
        << " KiB of loads in flight per SM\n";
  }
}
