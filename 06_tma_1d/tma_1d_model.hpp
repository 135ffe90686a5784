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
#include <cstdio>
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
// Dynamic shared memory of a ring: `stages` tiles, then its 8-byte barriers (the tiles are whole
// 16-byte units, so the barriers after them are 8-byte aligned). The lesson's ring has two per
// stage (full, empty); the lab's rings freed by a block sync have one (full).
constexpr std::size_t ring_smem_bytes(int stages, std::size_t stage_bytes, int barriers = 2) {
  return stages * stage_bytes + stages * barriers * sizeof(std::uint64_t);
}
constexpr std::size_t prefetch_smem_bytes(int stages, std::size_t stage_bytes) {
  return ring_smem_bytes(stages, stage_bytes, 1);
}

// The ring's dynamic shared memory must fit the per-block opt-in maximum.
inline std::optional<std::string> smem_plan_problem(std::size_t smem_bytes, std::size_t optin_bytes) {
  if (smem_bytes <= optin_bytes) return std::nullopt;
  return "the ring needs " + std::to_string(smem_bytes) +
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
      << "ring of " << kRingStages << " stages, stage/parity of a block's waits for its tiles 0..9: ";
  course::StageCursor<kRingStages> cursor;
  for (int k = 0; k < 10; ++k, cursor.advance()) out << cursor.stage << '/' << cursor.phase << ' ';
  out << '\n';
  for (int stages = 2; stages <= 4; ++stages) {  // the ring releases a stage one tile late: 2 at least
    const std::size_t smem = ring_smem_bytes(stages, stage_bytes);
    const std::size_t blocks = ring_blocks_per_sm_90(smem);
    out << "  ring of " << stages << " x " << stage_bytes / 1024 << " KiB: " << smem << " bytes per block, " << blocks
        << (blocks == 1 ? " block" : " blocks") << " per SM on 9.0, up to " << blocks * stages * stage_bytes / 1024
        << " KiB of loads in flight per SM\n";
  }
}

// ---- The data path of a bulk copy and its two proxies ------------------------------------------

/// [data_path]
// Threads reach memory through the generic proxy; the TMA unit reaches it through the async
// proxy. Between two accesses to the same object from different proxies something must order
// them: a proxy fence (generic -> async) or the mbarrier's completion (async -> generic). The
// minimal kernel, step by step, as the figure draws it and proxy_order_problems() checks it.
enum class Proxy { generic, async, fence, sync };  // who acts; fence and sync order, not access
enum class Object { none, barrier, tile, gmem_out };
struct PathStep {
  const char* code;  // what the kernel writes
  const char* what;  // who does it, and what it achieves (the figure's second line)
  Proxy proxy;
  Object writes;  // the object this step writes (through `proxy`), or none
  Object reads;   // the object this step reads, or none
  Object orders;  // a fence or wait: whose earlier accesses it makes visible to the other proxy
};
inline const std::vector<PathStep>& minimal_path() {
  static const std::vector<PathStep> steps = {
      {"mbarrier_init(&bar, 1)", "thread 0 writes the barrier", Proxy::generic, Object::barrier, Object::none,
       Object::none},
      {"fence_mbarrier_init(release, cluster)", "thread 0: the init, visible to the async proxy", Proxy::fence, Object::none,
       Object::none, Object::barrier},
      {"__syncthreads()", "all threads: the barrier is initialised", Proxy::sync, Object::none,
       Object::none, Object::none},
      // An mbarrier operation, not a plain write: after the fenced init it needs no other fence.
      {"mbarrier_arrive_expect_tx(&bar, bytes)", "thread 0 arrives; the phase now waits for bytes", Proxy::generic, Object::none,
       Object::barrier, Object::none},
      {"cp_async_bulk: global -> tile", "TMA writes the tile, completes bytes on bar", Proxy::async, Object::tile,
       Object::barrier, Object::none},
      {"mbarrier_try_wait_parity(&bar, 0) until true", "all threads: phase 0 complete, the TMA's writes visible", Proxy::sync, Object::none,
       Object::barrier, Object::tile},
      {"tile[i] = 3 * tile[i] + 1", "all threads read and write the tile", Proxy::generic, Object::tile, Object::tile,
       Object::none},
      {"fence_proxy_async(shared)", "each thread: its writes, visible to the async proxy", Proxy::fence, Object::none, Object::none,
       Object::tile},
      {"__syncthreads()", "all threads have written and fenced", Proxy::sync, Object::none,
       Object::none, Object::none},
      {"cp_async_bulk: tile -> global", "TMA reads the tile, writes global memory", Proxy::async, Object::gmem_out,
       Object::tile, Object::none},
      {"commit_group; wait_group_read<0>", "thread 0: the store has read the tile", Proxy::sync, Object::none, Object::none,
       Object::none},
  };
  return steps;
}

inline const char* object_name(Object object) {
  switch (object) {
    case Object::barrier: return "the barrier";
    case Object::tile: return "the tile";
    case Object::gmem_out: return "the output";
    default: return "nothing";
  }
}

// Every access by one proxy to an object last written by the other, with no step in between
// that orders that object: one line each ("" when the path is sound).
inline std::string proxy_order_problems(const std::vector<PathStep>& steps) {
  std::string problems;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PathStep& use = steps[i];
    if (use.proxy != Proxy::generic && use.proxy != Proxy::async) continue;
    for (const Object object : {use.reads, use.writes}) {
      if (object == Object::none) continue;
      bool ordered = false;
      for (std::size_t j = i; j-- > 0;) {  // back to the last write of `object`
        if (steps[j].orders == object) ordered = true;
        if (steps[j].writes != object) continue;
        if (steps[j].proxy != use.proxy && !ordered) {
          problems += std::string(use.code) + " (" + (use.proxy == Proxy::async ? "async" : "generic") +
                      " proxy) accesses " + object_name(object) + " written by " + steps[j].code +
                      " with nothing ordering it in between\n";
        }
        break;
      }
    }
  }
  return problems;
}

// Text for an SVG element: &, < and > written as entities.
inline std::string xml_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c == '&' ? std::string("&amp;") : c == '<' ? std::string("&lt;")
           : c == '>' ? std::string("&gt;") : std::string(1, c);
  }
  return out;
}

// The figure: the steps top to bottom, threads on the left (generic proxy), the TMA unit on the
// right (async proxy), fences and waits across both, each with the object it orders.
inline std::string data_path_svg(const std::vector<PathStep>& steps) {
  constexpr int kWidth = 720, kTop = 70, kRow = 46, kLane = 340, kGap = 20, kLeft = 10;
  const int height = kTop + static_cast<int>(steps.size()) * kRow + 40;
  std::string svg;
  char text[640];
  auto put = [&](const char* format, auto... args) {
    std::snprintf(text, sizeof text, format, args...);
    svg += text;
  };
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n", kWidth, height);
  put("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", kWidth, height);
  put("<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">One tile through the "
      "TMA: who touches what, through which proxy</text>\n", kLeft);
  put("<text x=\"%d\" y=\"54\" font-size=\"14\" font-weight=\"bold\">threads: generic proxy"
      "</text>\n", kLeft);
  put("<text x=\"%d\" y=\"54\" font-size=\"14\" font-weight=\"bold\">TMA unit: async proxy"
      "</text>\n", kLeft + kLane + kGap);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PathStep& step = steps[i];
    const int y = kTop + static_cast<int>(i) * kRow;
    const bool across = step.proxy == Proxy::fence || step.proxy == Proxy::sync;
    const int x = step.proxy == Proxy::async ? kLeft + kLane + kGap : kLeft;
    const int w = across ? 2 * kLane + kGap : kLane;
    const char* fill = step.proxy == Proxy::async    ? "#fdd9a0"
                       : step.proxy == Proxy::fence ? "#f4b6b6"
                       : step.proxy == Proxy::sync  ? "#e4e4e4"
                                                    : "#bcd7f0";
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\" fill=\"%s\" "
        "stroke=\"#333333\"%s/>\n", x, y, w, kRow - 8, fill,
        step.proxy == Proxy::fence ? " stroke-dasharray=\"6 3\"" : "");
    put("<text x=\"%d\" y=\"%d\" font-size=\"13\" font-family=\"DejaVu Sans Mono, monospace\">"
        "%s</text>\n", x + 8, y + 16, xml_text(step.code).c_str());
    const std::string note = step.what;
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333333\">%s</text>\n", x + 8,
        y + 32, xml_text(note).c_str());
  }
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">blue: generic proxy; orange: async proxy; red, "
      "dashed: proxy fence; grey: sync or wait</text>\n", kLeft, height - 14);
  svg += "</svg>\n";
  return svg;
}
/// [data_path]
