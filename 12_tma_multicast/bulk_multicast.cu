// 12_tma_multicast, second lesson: multicast without a tensor map, with the 1D bulk copy.
//
// What you learn: cp.async.bulk with .multicast::cluster and a ctaMask copies contiguous bytes
// to the same offset in every block of the mask, signalling the mbarrier there; one copy per
// tile in a cluster of 2 (the minimal kernel), then a ring where each block copies one slice of
// every tile, every full barrier hears from every sender and every block releases each stage to
// every block; what a panel ending inside a tile does to a copy that fills nothing past the end.
// New since tma_multicast.cu: no tensor map: a global address and a byte count (a multiple of
// 16); slices are byte ranges of one panel that all blocks share.
// Hardware: compute capability 9.0 exactly, built for sm_90a; elsewhere it reports skipped.
// Run: build/12_tma_multicast/bulk_multicast [--bench] [--variant=NAME] [--size=BYTES_OF_OUTPUT]
// Guide ("Using TMA to transfer one-dimensional arrays"), cuda::ptx::cp_async_bulk, PTX:
//   https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//   https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk.html
//   https://docs.nvidia.com/cuda/parallel-thread-execution/ (cp.async.bulk)
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bulk_multicast_model.hpp"  // the panel; BulkShape, BulkPlan: slices, masks, counts
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"  // {stage, phase} of a ring: taught in chapter 03
#include "course/wait.cuh"

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kStages = kBroadcastRing;              // two 16 KiB stages
constexpr int kProducerWarp = kConsumerWarps;        // the last warp issues the copies
constexpr int kThreads = (kConsumerWarps + 1) * 32;  // 288
constexpr std::size_t kOutRowBytes = kFoldWords * sizeof(std::uint32_t);  // 4 KiB per block
constexpr std::uint32_t kDefaultPanelBytes = kPanelTiles * kPanelTileBytes;  // 2 MiB
static_assert(kStages * kPanelTileBytes <= 48 * 1024,
              "the ring fits in static shared memory (48 KiB)");
static_assert(kPanelTileBytes % sizeof(uint4) == 0, "consumers read a stage 16 bytes at a time");

// ---- The minimal kernel: one multicast copy per tile, a cluster of 2 ----------------------------

/// [minimal]
// Every block adds up the whole panel. Block 0 of each cluster of 2 copies each tile once, into
// the shared memory of both blocks; one stage, and a cluster barrier as the "slot is free" signal.
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kConsumerThreads)
    minimal_multicast_kernel(const std::uint32_t* gmem_panel, std::uint32_t* gmem_out,
                             BulkShape shape) {
  // Static shared memory: the same offsets in both blocks, where the multicast writes and signals.
  __shared__ alignas(128) std::uint32_t smem_tile[kPanelTileWords];  // one 16 KiB tile
  __shared__ alignas(8) std::uint64_t full_bar;                      // phase i: tile i landed here
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&full_bar, 1u);  // one arrival: this block's own arrive.expect_tx
    // Release the init at cluster scope: the peer's copy will signal this barrier.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();  // both barriers initialised before block 0 copies into either
  uint4 sum = make_uint4(0u, 0u, 0u, 0u);
  for (int tile = 0; tile < bulk_panel_tiles(shape.panel_bytes); ++tile) {
    const std::uint32_t tile_bytes = bulk_tile_bytes(shape.panel_bytes, tile);  // less at the end
    if (threadIdx.x == 0) {
      // Each block expects the bytes that land in IT, though only block 0 copies them.
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                           &full_bar, tile_bytes);
      if (cluster.block_rank() == 0) {  // one copy, ctaMask 0b11: into block 0 and block 1
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem_tile,
                           gmem_panel + std::size_t(tile) * kPanelTileWords, tile_bytes, &full_bar,
                           std::uint16_t{0b11});
      }
    }
    // The plain wait; acquire at cluster scope, since a peer's copy completes the phase.
    while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, &full_bar,
                                          std::uint32_t(tile % 2))) {
    }
    const uint4* chunks = reinterpret_cast<const uint4*>(smem_tile);
    for (int j = 0; j < kChunksPerThread; ++j) {
      const int c = static_cast<int>(threadIdx.x) + j * kConsumerThreads;
      if (c < static_cast<int>(tile_bytes / sizeof(uint4))) {
        const uint4 v = chunks[c];
        sum = make_uint4(sum.x + v.x, sum.y + v.y, sum.z + v.z, sum.w + v.w);
      }
    }
    // Both blocks have read the tile before block 0 copies the next one over it. After the last
    // tile, it keeps block 0 from exiting while its copy into block 1 may be in flight.
    cluster.sync();
  }
  const auto block = static_cast<std::uint32_t>(blockIdx.x);
  if (block < static_cast<std::uint32_t>(shape.blocks)) {  // the grid overhangs by up to one block
    reinterpret_cast<uint4*>(gmem_out + std::size_t(block) * kFoldWords)[threadIdx.x] =
        make_uint4(mix_with_block(sum.x, block), mix_with_block(sum.y, block),
                   mix_with_block(sum.z, block), mix_with_block(sum.w, block));
  }
}
/// [minimal]

void launch_minimal(const std::uint32_t* gmem_panel, std::uint32_t* gmem_out,
                    const BulkShape& shape) {
  const BulkShape s = checked(shape);  // a panel of 16-byte units: the copy's rule
  const unsigned grid = static_cast<unsigned>((s.blocks + 1) / 2 * 2);  // whole clusters of 2
  minimal_multicast_kernel<<<grid, kConsumerThreads>>>(gmem_panel, gmem_out, s);
  COURSE_CHECK_LAUNCH();
}

// ---- The ring: every block copies a slice, kStages stages, full and empty barriers -------------

/// [producer]
template <class Plan>
__device__ void produce(const std::uint32_t* gmem_panel,
                        std::uint32_t (*smem_tiles)[kPanelTileWords], std::uint64_t* full_bar,
                        std::uint64_t* empty_bar, int rank, int first_tile,
                        std::uint32_t panel_bytes) {
  constexpr BulkCluster kCluster = Plan::kCluster;
  const int num_tiles = bulk_panel_tiles(panel_bytes);
  const std::uint32_t slice_offset = bulk_slice_offset(kCluster, rank);  // into tile and stage
  course::StageCursor<kStages> cursor;
  for (int i = 0; i < num_tiles; ++i, cursor.advance()) {
    const int tile = (first_tile + i) % num_tiles;
    const std::uint32_t tile_bytes = bulk_tile_bytes(panel_bytes, tile);  // less at the end
    const std::uint32_t copy_bytes = bulk_copy_bytes(kCluster, rank, tile_bytes);  // clipped
    // Free in every block of the cluster: all their consumer warps arrived on OUR barrier.
    course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u,
                                {"empty", cursor.stage, cursor.phase ^ 1u}, ptx::scope_cluster);
    // Our one arrival, announcing the whole tile: our slice and every peer's land in our stage.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                         &full_bar[cursor.stage], tile_bytes);
    if (copy_bytes == 0) continue;  // our slice lies past the panel's end: the peers' complete it
    unsigned char* smem_slice =
        reinterpret_cast<unsigned char*>(smem_tiles[cursor.stage]) + slice_offset;
    const unsigned char* gmem_slice = reinterpret_cast<const unsigned char*>(gmem_panel) +
                                      std::size_t(tile) * kPanelTileBytes + slice_offset;
    if constexpr (kCluster.multicast) {
      // TUTORIAL: no tensor map: a global address, a byte count (a multiple of 16, both addresses
      // 16-byte aligned) and a ctaMask. Every block's barrier at full_bar's offset receives
      // complete-tx from every sender, n slices in all: so every block expects the whole tile.
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem_slice, gmem_slice,
                         copy_bytes, &full_bar[cursor.stage], Plan::multicast_mask(rank));
    } else {
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_slice, gmem_slice,
                         copy_bytes, &full_bar[cursor.stage]);
    }
  }
}
/// [producer]

/// [consumer]
// Consumer thread t adds uint4 number t, t + 256, t + 512, t + 768 of every tile.
template <class Plan>
__device__ uint4 consume(const std::uint32_t (*smem_tiles)[kPanelTileWords],
                         std::uint64_t* full_bar, std::uint64_t* empty_bar,
                         cg::cluster_group& cluster, int rank, int first_tile,
                         std::uint32_t panel_bytes, int warp_idx, int lane) {
  // TUTORIAL: every block copies into our stage, so lane i of each consumer warp releases it to
  // block i; each empty barrier counts n x kConsumerWarps. Releasing only our own block, as a
  // ring without multicast does, deadlocks or lets a peer overwrite a stage we still read.
  const bool is_signalling_lane = lane < Plan::kReleaseTargets;
  const int target = is_signalling_lane ? Plan::release_target(rank, lane) : rank;
  std::uint64_t* dsmem_target_empty = cluster.map_shared_rank(empty_bar, target);  // PTX mapa
  const int thread = warp_idx * 32 + lane, num_tiles = bulk_panel_tiles(panel_bytes);
  uint4 sum = make_uint4(0u, 0u, 0u, 0u);
  course::StageCursor<kStages> cursor;
  for (int i = 0; i < num_tiles; ++i, cursor.advance()) {
    const int tile = (first_tile + i) % num_tiles;
    // A 1D copy fills nothing past the panel's end: past the tile's bytes lies an older tile.
    const int num_chunks = static_cast<int>(bulk_tile_bytes(panel_bytes, tile) / sizeof(uint4));
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,  // every slice landed
                                {"full", cursor.stage, cursor.phase}, ptx::scope_cluster);
    const uint4* chunks = reinterpret_cast<const uint4*>(smem_tiles[cursor.stage]);
#pragma unroll
    for (int j = 0; j < kChunksPerThread; ++j) {
      const int c = thread + j * kConsumerThreads;
      if (c < num_chunks) {
        const uint4 v = chunks[c];
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      }
    }
    __syncwarp();  // every lane of this warp has finished reading the stage...
    if (is_signalling_lane) {
      // ...so its signalling lanes tell each sender, with release at cluster scope, to refill.
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster,
                           dsmem_target_empty + cursor.stage);
    }
  }
  return sum;
}
/// [consumer]

/// [kernel]
template <class Plan>
__global__ void __cluster_dims__(Plan::kCluster.blocks, 1, 1) __launch_bounds__(kThreads)
    bulk_broadcast_kernel(const std::uint32_t* gmem_panel, std::uint32_t* gmem_out,
                          BulkShape shape) {
  // Static shared memory: the same offsets in every block, where multicasts write and signal.
  __shared__ alignas(128) std::uint32_t smem_tiles[kStages][kPanelTileWords];  // [stage][words]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];   // phase r: every slice of round r here
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];  // phase r: our receivers read round r
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());  // a cluster along x: rank = x
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = static_cast<int>(threadIdx.x % 32);
  // The clusters start at different tiles; a cluster's blocks together, since they share each.
  const int first_tile = first_panel_tile(static_cast<int>(blockIdx.x) / Plan::kCluster.blocks,
                                          bulk_panel_tiles(shape.panel_bytes));

  if (warp_idx == kProducerWarp && course::elect_one_lane()) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // our producer's arrive.expect_tx
      ptx::mbarrier_init(&empty_bar[s], std::uint32_t{Plan::kEmptyArrivals});  // warps we feed
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible cluster-wide...
  }
  cluster.sync();  // ...before any block copies into or arrives on another

  if (warp_idx == kProducerWarp) {
    if (course::elect_one_lane()) {
      produce<Plan>(gmem_panel, smem_tiles, full_bar, empty_bar, rank, first_tile,
                    shape.panel_bytes);
    }
  } else {
    const uint4 sum = consume<Plan>(smem_tiles, full_bar, empty_bar, cluster, rank, first_tile,
                                    shape.panel_bytes, warp_idx, lane);
    const auto block = static_cast<std::uint32_t>(blockIdx.x);
    if (block < static_cast<std::uint32_t>(shape.blocks)) {  // the grid overhangs the output
      reinterpret_cast<uint4*>(gmem_out + std::size_t(block) * kFoldWords)[warp_idx * 32 + lane] =
          make_uint4(mix_with_block(sum.x, block), mix_with_block(sum.y, block),
                     mix_with_block(sum.z, block), mix_with_block(sum.w, block));
    }
  }
  // Peers' arrivals on our empty barriers, and our last copies into them, may still be in
  // flight: nobody leaves before all have arrived, as in the first lesson.
  cluster.sync();
}
/// [kernel]

// ---- Launchers and the variant table ------------------------------------------------------------

/// [launch]
template <class Plan>
void launch_bulk(const std::uint32_t* gmem_panel, std::uint32_t* gmem_out, const BulkShape& shape) {
  const BulkShape s = checked(shape);  // a panel of 16-byte units: refused before launching
  constexpr int kBlocks = Plan::kCluster.blocks;
  // __cluster_dims__ makes clusters of an ordinary launch; the grid counts blocks.
  const unsigned grid = static_cast<unsigned>((s.blocks + kBlocks - 1) / kBlocks * kBlocks);
  bulk_broadcast_kernel<Plan><<<grid, kThreads>>>(gmem_panel, gmem_out, s);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using NoMulticast = BulkPlan<1, false>;
using Multicast2 = BulkPlan<2, true>;
using Multicast4 = BulkPlan<4, true>;
using Launch = void (*)(const std::uint32_t* gmem_panel, std::uint32_t* gmem_out,
                        const BulkShape& shape);
struct Variant { const char* name; const char* summary; BulkCluster cluster; Launch launch; };
const Variant kVariants[] = {
    {"bulk_minimal", "clusters of 2, one stage: block 0 copies each whole tile into both blocks",
     Multicast2::kCluster, &launch_minimal},
    {"bulk_no_multicast",
     "clusters of 1: every block copies each whole 16 KiB tile itself (shared::cta)",
     NoMulticast::kCluster, &launch_bulk<NoMulticast>},
    {"bulk_multicast_2", "clusters of 2: each block copies 8 KiB of every tile, multicast to both",
     Multicast2::kCluster, &launch_bulk<Multicast2>},
    {"bulk_multicast_4", "clusters of 4: 4 KiB of every tile each, multicast to all four",
     Multicast4::kCluster, &launch_bulk<Multicast4>},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------------

struct Problem {
  explicit Problem(const BulkShape& s)
      : shape(checked(s)), host_panel(shape.panel_bytes / sizeof(std::uint32_t)),
        gmem_panel(host_panel.size()), gmem_out(std::size_t(shape.blocks) * kFoldWords) {
    for (std::size_t i = 0; i < host_panel.size(); ++i) host_panel[i] = panel_value(i);
    expected = broadcast_reference(host_panel, shape.blocks);
    gmem_panel.upload(host_panel.data());
  }
  // What one run moves: the panel into every block's shared memory, the output once.
  std::size_t moved_bytes(const BulkCluster& c) const {
    return bulk_landed_bytes(c, shape) + expected.size() * sizeof(std::uint32_t);
  }
  BulkShape shape;
  std::vector<std::uint32_t> host_panel, expected;
  course::DeviceBuffer<std::uint32_t> gmem_panel;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  p.gmem_out.poison();
  v.launch(p.gmem_panel.data(), p.gmem_out.data(), p.shape);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected, kFoldWords);
}

inline BulkShape bulk_shape(std::size_t size_bytes) {  // --size: 4 KiB of output per block
  return {static_cast<int>(size_bytes / kOutRowBytes), kDefaultPanelBytes};
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(bulk_shape(opts.size_bytes));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.gmem_panel.data(), problem.gmem_out.data(), problem.shape); },
        problem.moved_bytes(v.cluster));  // the bytes that land in the blocks, not the panel once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "bulk_multicast";
  info.title = "12 bulk_multicast: multicast without a tensor map, the 1D bulk copy";
  info.explanation =
      "A broadcast stream: every block adds up the same 2 MiB panel, 16 KiB tiles through a ring\n"
      "of two stages; in a cluster of n each block copies 1/n of every tile (cp.async.bulk) and\n"
      "multicasts it (ctaMask) to all n. --size: the output's bytes, 4 KiB per block (16M: 4096\n"
      "blocks); GB/s counts what lands in the blocks (blocks x 2 MiB) plus the output.";
  info.requirement = {9, 0, true, "multicast bulk copy (sm_90a)"};
  info.verify_bytes = 1u << 20;
  info.bench_bytes = 16u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kOutRowBytes != 0 ||
        bytes / kOutRowBytes > std::size_t{kMaxBulkBlocks}) {
      return "--size is the bytes of the output: a whole number of 4 KiB rows (one per block), at "
             "most 64 MiB (the reference is computed on the CPU)";
    }
    return std::nullopt;
  };
  info.host_model = [](std::ostream& out) {  // what runs without a GPU
    out << "panel of " << kPanelTiles << " tiles of " << kPanelTileBytes / 1024 << " KiB ("
        << kDefaultPanelBytes / (1024 * 1024) << " MiB) read by every block, " << kStages
        << " stages per block\n";
    for (const Variant& v : kVariants) print_bulk_plan(out, v.name, v.cluster);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
