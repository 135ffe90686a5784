// 06_tma_1d: one-dimensional bulk copies (TMA): a whole tile per instruction, both ways.
//
// What you learn: one thread moves a tile global -> shared with one bulk copy that completes on
// an mbarrier by counting bytes (expect-tx), and back with a bulk store after a proxy fence; the
// library's call for the same copy; then the canonical ring: a `full` and an `empty` barrier per
// stage, an elected producer warp, consumer warps, a {stage, phase} cursor per role.
// What changed from 05: no thread copies data any more: the TMA moves each whole tile.
// Hardware: compute capability 9.0+ (cp.async.bulk, mbarrier transaction counts, elect.sync).
// Run: build/06_tma_1d/tma_1d [--bench] [--variant=NAME] [--size=64M]; the lab: tma_1d_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
// API: https://nvidia.github.io/cccl/libcudacxx/ptx/ (cuda::ptx), .../extended_api/ (memcpy_async)
//      PTX: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cuda/barrier>
#include <cuda/ptx>

#include <cstdint>
#include <vector>
#include "course/batch_grid.hpp"
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_1d_model.hpp"  // the problem (modify, reference), the bulk-copy rules, tile plans

namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

#pragma nv_diag_suppress static_var_with_dynamic_init  // a __shared__ cuda::barrier: init() sets it

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 1024;  // single-tile kernels: the guide's 4 KiB buffer
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);
constexpr int kStages = 4;                      // the ring: four stages ...
constexpr std::size_t kStageBytes = 32 * 1024;  // ... of one 32 KiB tile each
constexpr int kConsumerThreads = 256;           // the ring's consumer warps 1-8
constexpr int kRingThreads = 32 + kConsumerThreads;  // warp 0 is the producer
static_assert(is_legal_tile(kTileBytes) && is_legal_tile(kStageBytes),
              "a tile: whole 16-byte units, at most 2^20 - 1 bytes per barrier phase");

/// [minimal]
__global__ void minimal_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                               std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];  // bulk copies: 16-byte aligned
  __shared__ std::uint64_t bar;  // an mbarrier: 8 bytes of shared memory
  const std::size_t tile = blockIdx.x;  // one tile per block
  const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);  // one arrival per phase: thread 0's, which brings the bytes
    // The TMA unit updates the barrier through the async proxy: order the init before that.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // no thread waits on the barrier before it is initialised
  if (threadIdx.x == 0) {
    // Arrive, and expect `bytes` more: the phase completes when the copy has delivered them.
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                   bytes);
    ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile,
                       gmem_in + tile * kTileElems, bytes, &bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {}  // until phase 0 completes: tile landed
  for (unsigned i = threadIdx.x; i < bytes / sizeof(std::uint32_t); i += blockDim.x) {
    smem_tile[i] = modify(smem_tile[i]);
  }
  ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy's store
  __syncthreads();  // every thread has written and fenced before the store reads the tile
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_out + tile * kTileElems,
                       smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();  // the store becomes this thread's bulk async-group
    // The tile must stay until the store has read it: the block's shared memory ends with it.
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
  }
}
/// [minimal]

// ---- Device building blocks of the other kernels -------------------------------------------
/// [elect]
// TUTORIAL: a bulk copy takes its operands from uniform registers. Under `threadIdx.x == 0` the
// compiler may wrap it in a loop over the active lanes; elect.sync sets its predicate in exactly
// one lane (the same one every time). CCCL 3.0 has no cuda::ptx::elect_sync.
__device__ inline bool elect_one_lane() {
  std::uint32_t elected = 0;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}"
               : "=r"(elected));
  return elected != 0;
}
// The shuffle makes the warp index warp-uniform: the whole warp takes the same branch.
__device__ inline int warp_index() { return __shfl_sync(0xffffffffu, threadIdx.x / 32, 0); }
__device__ inline bool is_elected_leader() { return warp_index() == 0 && elect_one_lane(); }
/// [elect]

// Threads rank, rank + num_threads, ... modify 16-byte vectors of the tile in shared memory.
__device__ void modify_tile(std::uint32_t* smem_tile, std::uint32_t tile_bytes, unsigned rank,
                            unsigned num_threads) {
  uint4* smem_vecs = reinterpret_cast<uint4*>(smem_tile);
  for (unsigned v = rank; v < tile_bytes / sizeof(uint4); v += num_threads) {
    const uint4 x = smem_vecs[v];
    smem_vecs[v] = {modify(x.x), modify(x.y), modify(x.z), modify(x.w)};
  }
}

// Shared -> global with one bulk store, as in minimal_kernel; returns once it has read the tile.
__device__ void write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile,
                                std::uint32_t bytes) {
  ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy
  __syncthreads();  // every thread has written and fenced its part before the store
  if (is_elected_leader()) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_dst, smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();                     // one bulk async-group
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the store has read the tile
  }
}

// ---- The library's call for the same copy: a block loops over its tiles, one 4 KiB tile at a time
/// [memcpy_async]
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile; the copy adds its bytes
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();  // nobody arrives or copies before the barrier is initialised
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes);
       tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    // TUTORIAL: aligned_size_t<16> and a barrier in shared memory: one bulk copy, expect-tx
    // without arriving; the phase completes when all threads arrived and the bytes landed.
    if (is_elected_leader()) {
      cuda::memcpy_async(smem_tile, gmem_in + tile * kTileElems,
                         cuda::aligned_size_t<16>(bytes), full_bar);
    }
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // arrived, landed
    modify_tile(smem_tile, bytes, threadIdx.x, blockDim.x);
    write_back_tile(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [memcpy_async]

// ---- The ring: full and empty barriers, an elected producer, consumer warps ----------------

/// [consumers_sync]
// A sync of the consumer warps alone (named barrier 1; __syncthreads is barrier 0).
__device__ inline void consumers_sync() {
  asm volatile("bar.sync 1, %0;" : : "n"(kConsumerThreads) : "memory");
}
/// [consumers_sync]

/// [ring]
template <int kRingStages, std::size_t kRingStageBytes>
__global__ void __launch_bounds__(kRingThreads)
    ring_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  static_assert(kRingStages >= 2, "a stage is released one tile late: one stage never would be");
  static_assert(is_legal_tile(kRingStageBytes), "a stage: 16-byte units, < 1 MiB per phase");
  constexpr std::size_t kRingStageElems = kRingStageBytes / sizeof(std::uint32_t);
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;  // [kRingStages][kRingStageBytes]
  auto* full_bar = reinterpret_cast<std::uint64_t*>(smem + kRingStages * kRingStageBytes);
  std::uint64_t* empty_bar = full_bar + kRingStages;  // full_bar, empty_bar: [kRingStages] each
  const std::size_t num_tiles = num_tiles_of(num_bytes, kRingStageBytes);
  if (is_elected_leader()) {
    for (int s = 0; s < kRingStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], 1);   // the producer's arrival, with the tile's bytes
      ptx::mbarrier_init(&empty_bar[s], 1);  // the store thread's: the stage has been stored
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();  // no thread waits on a barrier before it is initialised

  // Both roles walk the same tiles (blockIdx.x, + gridDim.x, ...) with a cursor each.
  course::StageCursor<kRingStages> cursor;
  if (warp_index() == 0) {  // the producer warp: one elected lane issues every load
    if (!elect_one_lane()) return;
    for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
      // TUTORIAL: wait until the consumers have released this stage's previous tile. In the
      // first round there is none: parity phase ^ 1 names the phase before phase 0, which a
      // fresh barrier counts as complete, so the first kRingStages waits return at once.
      const std::uint32_t released = cursor.phase ^ 1u;
      course::bounded_wait_parity(&empty_bar[cursor.stage], released,
                                  {"empty", cursor.stage, released});
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kRingStageBytes);
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                     &full_bar[cursor.stage], bytes);  // arrive, expect bytes
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global,
                         smem_tiles + cursor.stage * kRingStageBytes,
                         gmem_in + tile * kRingStageElems, bytes, &full_bar[cursor.stage]);
    }
    return;
  }
  const bool is_store_thread = warp_index() == 1 && elect_one_lane();  // the same lane each time
  int stored_stage = -1;  // the store thread: the stage of the last store it issued
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});  // the tile has landed
    auto* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kRingStageBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kRingStageBytes);
    modify_tile(smem_tile, bytes, threadIdx.x - 32, kConsumerThreads);
    ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy
    consumers_sync();  // every consumer has written and fenced before the store
    if (is_store_thread) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_out + tile * kRingStageElems,
                         smem_tile, bytes);
      ptx::cp_async_bulk_commit_group();
      // TUTORIAL: wait for all but the newest store: free the previous stage, do not stall.
      if (stored_stage >= 0) {
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{});  // the previous store has read
        ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                             &empty_bar[stored_stage]);  // release that stage to the producer
      }
      stored_stage = cursor.stage;
    }
  }
  if (is_store_thread) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // before exiting
}
/// [ring]

// ---- Launchers and the variant table -------------------------------------------------------
// Refuses a request that breaks a rule or a shared-memory plan the device cannot hold, before
// anything runs; opts the kernel in to `smem_bytes`. False: no bytes, nothing to launch.
template <class Kernel>
bool prepare_launch(Kernel kernel, std::size_t smem_bytes, const std::uint32_t* gmem_in,
                    std::uint32_t* gmem_out, std::size_t num_bytes) {
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);
  if (num_bytes == 0) return false;
  int device = 0, optin = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (auto broken = smem_plan_problem(smem_bytes, optin)) throw course::UsageError(*broken);
  /// [opt_in]
  // Over 48 KiB of shared memory per block: dynamic, and only with this opt-in (chapter 11).
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem_bytes)));
  /// [opt_in]
  return true;
}

/// [launch_tiles]
// Chapter 01's grid rule: a block per `block_tiles` tiles, started in index order wherever an SM
// has room. They cannot drift apart as a persistent grid's blocks do (the lab's ring_resident).
constexpr int kTilesPerBlock = 4;
template <class Kernel>
void launch_tiles(Kernel kernel, int threads, std::size_t smem_bytes, std::size_t tile_bytes,
                  int block_tiles, const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                  std::size_t num_elems) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  if (!prepare_launch(kernel, smem_bytes, gmem_in, gmem_out, num_bytes)) return;
  kernel<<<course::batch_grid(num_tiles_of(num_bytes, tile_bytes), block_tiles), threads,
           smem_bytes>>>(gmem_in, gmem_out, num_bytes);
  COURSE_CHECK_LAUNCH();
}
/// [launch_tiles]

// The ring in dynamic shared memory. Tests pass a larger kBlockTiles: every stage goes round.
template <int kRingStages, std::size_t kRingStageBytes, int kBlockTiles = kTilesPerBlock>
void launch_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  launch_tiles(ring_kernel<kRingStages, kRingStageBytes>, kRingThreads,
               ring_smem_bytes(kRingStages, kRingStageBytes), kRingStageBytes, kBlockTiles, gmem_in,
               gmem_out, num_elems);
}

// The single-tile kernels, in static shared memory: minimal (a block per tile) and the library's.
template <auto kKernel, int kBlockTiles>
void launch_single_tile(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_elems) {
  launch_tiles(kKernel, kBlockThreads, 0, kTileBytes, kBlockTiles, gmem_in, gmem_out, num_elems);
}

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems);
  std::size_t tile_bytes;  // bytes per bulk copy (tests size their problems with it)
};

const Variant kVariants[] = {
    {"minimal", "cuda::ptx::cp_async_bulk, an mbarrier of count 1, a plain wait; a block per tile",
     &launch_single_tile<minimal_kernel, 1>, kTileBytes},
    {"memcpy_async", "cuda::memcpy_async(aligned_size_t<16>) on a cuda::barrier: the library's",
     &launch_single_tile<memcpy_async_kernel, kTilesPerBlock>, kTileBytes},
    {"ring", "4 x 32 KiB stages, full and empty barriers, a producer warp; a block per 4 tiles",
     &launch_ring<kStages, kStageBytes>, kStageBytes},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct Problem {  // input, expected output and device buffers for `num_elems` uint32 elements
  explicit Problem(std::size_t num_elems)
      : num_elems(num_elems), host_in(num_elems), gmem_in(num_elems), gmem_out(num_elems) {
    course::fill_pattern(host_in);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
  }
  std::size_t num_elems;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  variant.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected);
}

template <class Table>  // the lesson's variants, or the lab's
void run_variants(const Table& table, const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  for (const Variant& v : table) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}
void run(const course::Options& opts, course::Report& report) {
  run_variants(kVariants, opts, report);
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_1d";
  info.title = "06 tma_1d: one-dimensional bulk copies (TMA), read-modify-write";
  info.explanation =
      "Every element x of a uint32 array becomes 3x + 1. One thread loads each tile with one bulk\n"
      "copy (cuda::ptx::cp_async_bulk, cuda::memcpy_async) and stores it back with one; a ring of\n"
      "4 x 32 KiB stages with full and empty barriers keeps loads in flight while warps compute.";
  info.requirement = {9, 0, false, "cp.async.bulk (TMA)"};
  info.verify_bytes = (8u << 20) + 3 * kBulkAlignBytes;  // a ragged end: the last tile, 48 bytes
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kBulkAlignBytes, "--size must be a multiple of 16 bytes (bulk copies move 16-byte units)");
  info.host_model = [](std::ostream& out) { print_host_model<kStages>(out, kStageBytes); };
  info.in_flight = course::InFlightLaunch{"ring", (const void*)ring_kernel<kStages, kStageBytes>,
                                          kRingThreads, ring_smem_bytes(kStages, kStageBytes),
                                          kStages, kStageBytes};
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
