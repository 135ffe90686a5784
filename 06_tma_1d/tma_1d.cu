// 06_tma_1d: one-dimensional bulk copies (TMA): a whole tile per instruction, both ways.
//
// What you learn: one elected thread (elect.sync) moves a whole tile global -> shared with one bulk
// copy that completes on a barrier by counting bytes; three APIs issue it, with different arrivals;
// the tile goes back by proxy fence, block sync, bulk store and bulk async-group; a 4-stage
// prefetch ring that takes its tiles in order from a counter matches cudaMemcpy. Rules: the model
// (tma_1d_model.hpp); fallbacks, stage sweep and dealt tiles: the lab (tma_1d_lab.cu).
// What changed from 05: no thread copies data any more: the TMA moves each whole tile, in and out.
// Hardware: compute capability 9.0+ (cp.async.bulk, mbarrier transaction counts, elect.sync).
// Run: build/06_tma_1d/tma_1d [--bench] [--variant=NAME] [--size=64M]; the lab: build/06_tma_1d/tma_1d_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-tma-to-transfer-one-dimensional-arrays
// API: cuda::memcpy_async, cuda::device::memcpy_async_tx and barrier_arrive_tx: https://nvidia.github.io/cccl/libcudacxx/extended_api/
//      cuda::ptx::cp_async_bulk, mbarrier_arrive_expect_tx, fence_*: https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/
//      PTX cp.async.bulk, mbarrier (expect-tx, transaction count), elect.sync: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_1d_model.hpp"  // the problem (modify, reference), the rules of a bulk copy, tile and ring plans

namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier's constructor must not run (init() does its work): silence the warning.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 1024;  // single-stage kernels: the guide's 4 KiB buffer
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);
constexpr int kStages = 4;                      // the prefetch ring: four stages ...
constexpr std::size_t kStageBytes = 32 * 1024;  // ... of one 32 KiB tile each
constexpr std::size_t kStageElems = kStageBytes / sizeof(std::uint32_t);
constexpr std::size_t kRingSmemBytes = prefetch_smem_bytes(kStages, kStageBytes);  // tiles, then barriers
static_assert(is_legal_tile(kTileBytes) && is_legal_tile(kStageBytes), "a tile: 16-byte units, < 1 MiB per phase");
static_assert(kStages >= 2, "a stage's tile index is ordered by the block sync of the next stage's write-back");

// ---- Device building blocks ------------------------------------------------------------------

/// [elect]
// TUTORIAL: a bulk copy moves a whole tile, so exactly one thread of the block issues it.
// `threadIdx.x == 0` selects one thread, but the compiler cannot tell that only one lane of
// the warp is active inside the branch; the bulk-copy instruction takes its operands from the
// warp's uniform registers, so it may wrap the instruction in a loop over the active lanes.
// elect.sync makes the choice a warp-wide instruction whose result is known to pick one lane
// (the same one every time). The shuffle gives a warp index that is uniform by construction.
__device__ inline bool is_elected_leader() {
  const unsigned warp_idx = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  if (warp_idx != 0) return false;
  std::uint32_t elected = 0;  // written inline: CCCL 3.0 has no cuda::ptx::elect_sync
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(elected));
  return elected != 0;
}
/// [elect]

// Every thread modifies 16-byte vectors of the tile in place, in shared memory.
__device__ void modify_tile(std::uint32_t* smem_tile, std::uint32_t tile_bytes) {
  uint4* smem_vecs = reinterpret_cast<uint4*>(smem_tile);
  for (unsigned v = threadIdx.x; v < tile_bytes / sizeof(uint4); v += blockDim.x) {
    const uint4 x = smem_vecs[v];
    smem_vecs[v] = {modify(x.x), modify(x.y), modify(x.z), modify(x.w)};
  }
}

/// [write_back]
// Shared -> global with one bulk store. Returns once the store has *read* the tile: it may be refilled.
__device__ void write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile, std::uint32_t bytes) {
  // TUTORIAL: the tile was written with ordinary stores (the generic proxy); the bulk store
  // reads it through the async proxy. Each writing thread orders its own writes before later
  // async-proxy accesses with a proxy fence, and the block sync then orders every thread's
  // fence before the leader issues the store.
  ptx::fence_proxy_async(ptx::space_shared);  // my writes to the tile become visible to the async proxy
  __syncthreads();  // every thread has written and fenced its part before the store is issued
  if (is_elected_leader()) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_dst, smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();  // the store becomes one bulk async-group of this thread
    // Only the issuing thread can wait for its bulk groups. ".read": the store has read the tile
    // (it may be reused); its global writes may be in flight, visible to all once the kernel ends.
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
  }
}
/// [write_back]

// ---- Single-stage kernels: load a tile, modify it, write it back --------------------------

/// [memcpy_async]
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];  // bulk copies need 16-byte aligned shared memory
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile; the copy adds its bytes on top
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // TMA completes bytes on it: make the init visible
  }
  __syncthreads();  // nobody arrives or copies before the barrier's initialisation is visible
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    // TUTORIAL: with aligned_size_t<16> and this barrier in shared memory, the library issues one
    // bulk copy for all `bytes` (the per-thread overload) and adds them to the barrier's expected
    // transactions (expect-tx), without arriving. The phase completes when all blockDim.x threads
    // have arrived *and* the bytes have landed: the leader's own arrival cannot come too early.
    if (is_elected_leader()) {
      cuda::memcpy_async(smem_tile, gmem_in + tile * kTileElems, cuda::aligned_size_t<16>(bytes), full_bar);
    }
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // all arrived, all bytes landed
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [memcpy_async]

/// [memcpy_async_tx]
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_tx_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    block_barrier::arrival_token token;
    if (is_elected_leader()) {
      // Always a bulk copy (alignment below 16 does not compile); it does not tell the barrier
      // how many bytes to expect: the leader's arrival does, in the same instruction.
      cuda::device::memcpy_async_tx(smem_tile, gmem_in + tile * kTileElems, cuda::aligned_size_t<16>(bytes), full_bar);
      token = cuda::device::barrier_arrive_tx(full_bar, 1, bytes);  // arrive once and expect `bytes` more
    } else {
      token = full_bar.arrive();  // an arrival without bytes
    }
    course::bounded_wait(full_bar, std::move(token), {"full", 0, phase});  // all arrived, all bytes landed
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [memcpy_async_tx]

/// [cp_async_bulk]
__global__ void __launch_bounds__(kBlockThreads)
    cp_async_bulk_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;  // a raw mbarrier: 8 bytes of shared memory, 8-byte aligned
  if (is_elected_leader()) {
    ptx::mbarrier_init(&full_bar, 1);  // one arrival per phase: the leader's, which carries the bytes
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      // TUTORIAL: announce first, then copy. The phase completes when the pending arrival
      // count and the transaction count are both zero; arriving with expect-tx leaves the
      // arrivals at zero and the transactions at +bytes, and the copy counts them down.
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar, bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile, gmem_in + tile * kTileElems, bytes, &full_bar);
    }
    // The other threads never arrive: they only wait for the phase by its parity.
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [cp_async_bulk]

/// [prefetch_in_order]
// TUTORIAL: up to kStages tiles in flight per block, one `full` barrier per stage, a {stage, phase}
// cursor for the next wait. The guide deals the tiles out in advance (block b takes b, b + grid,
// ...); blocks drift apart, and their tiles in flight spread ever wider. Here the leader takes the
// next untaken tile from a global counter each time it fills a stage: the tiles in flight stay one
// compact window sweeping through the array. It writes the tile's index beside the stage; all read
// it after the stage's wait (the next write-back's block sync lies between). A block's tiles grow
// in ring order, so after the first stage that says "none left" every later one does too.
__global__ void __launch_bounds__(kBlockThreads)
    prefetch_in_order_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                             unsigned long long* gmem_next_tile) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                          // [kStages][kStageBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageBytes);  // [kStages]
  __shared__ unsigned long long stage_tile[kStages];  // which tile each stage holds (>= num_tiles: none left)
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageBytes);

  // The leader takes the next tile and loads it; with none left it still completes the phase.
  auto take_and_load = [&](int stage) {
    const unsigned long long tile = atomicAdd(gmem_next_tile, 1ull);
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
      // The only arrival of the phase, carrying the tile's bytes; then the copy that delivers them.
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage], bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageBytes,
                         gmem_in + tile * kStageElems, bytes, &full_bar[stage]);
    } else {  // no bytes: the arrival alone completes the phase, which then says "none left"
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
    }
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
    for (int s = 0; s < kStages; ++s) take_and_load(s);  // prime the ring: one tile per stage
  }
  __syncthreads();  // barriers initialised, first tile indices written

  for (course::StageCursor<kStages> cursor;; cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // the same answer in every thread; no loaded tile is left behind
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
    modify_tile(smem_tile, bytes);
    // TUTORIAL: every thread reaches write_back_tile's block sync after modifying the stage, and
    // the leader returns from it once the store has read the stage. So when the leader refills it
    // below, everyone is done with it and past its wait: that sync does the job of an "empty" barrier.
    write_back_tile(gmem_out + tile * kStageElems, smem_tile, bytes);
    if (is_elected_leader()) take_and_load(cursor.stage);  // completes the stage's next phase
  }
}
/// [prefetch_in_order]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// A persistent grid over the tiles: as many blocks of `kernel` as are resident at once, never more
// than tiles. Over 48 KiB of shared memory per block must be dynamic, with an opt-in.
template <class Kernel, class... Extra>
void launch_resident(Kernel kernel, std::size_t smem_bytes, std::size_t tile_bytes, const std::uint32_t* gmem_in,
                     std::uint32_t* gmem_out, std::size_t num_elems, Extra... extra) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);  // nothing that breaks a rule reaches the GPU
  if (num_bytes == 0) return;
  int device = 0, num_sms = 0, optin = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (std::optional<std::string> broken = smem_plan_problem(smem_bytes, optin)) throw course::UsageError(*broken);
  if (smem_bytes > 0) {
    COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  }
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, smem_bytes));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  const unsigned grid = static_cast<unsigned>(std::min(resident, num_tiles_of(num_bytes, tile_bytes)));
  kernel<<<grid, kBlockThreads, smem_bytes>>>(gmem_in, gmem_out, num_bytes, extra...);
  COURSE_CHECK_LAUNCH();
}

// The single-stage kernels: one 4 KiB tile per block at a time, in static shared memory.
template <auto kKernel>
void launch_single_stage(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  launch_resident(kKernel, 0, kTileBytes, gmem_in, gmem_out, num_elems);
}

// The count of taken tiles, reset to zero by a memset on the same stream before every launch.
// (Two launches running at once would share it: each would need its own counter.)
__device__ unsigned long long gmem_next_tile;

void launch_prefetch_in_order(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_tile));  // host code names a __device__ variable by symbol
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // ordered before the kernel
  launch_resident(prefetch_in_order_kernel, kRingSmemBytes, kStageBytes, gmem_in, gmem_out, num_elems,
                  static_cast<unsigned long long*>(counter));
}
/// [launch]

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems);
  std::size_t tile_bytes;  // bytes per bulk copy (tests size their problems with it)
};
const Variant kVariants[] = {
    {"memcpy_async", "cuda::memcpy_async(aligned_size_t<16>), shared-memory barrier: the library's bulk copy",
     &launch_single_stage<memcpy_async_kernel>, kTileBytes},
    {"memcpy_async_tx", "cuda::device::memcpy_async_tx + barrier_arrive_tx: the leader arrives with the bytes",
     &launch_single_stage<memcpy_async_tx_kernel>, kTileBytes},
    {"cp_async_bulk", "cuda::ptx::cp_async_bulk, raw mbarrier of count 1, arrive_expect_tx, parity wait",
     &launch_single_stage<cp_async_bulk_kernel>, kTileBytes},
    {"prefetch_in_order", "ring of 4 x 32 KiB, one barrier per stage, tiles taken in order from a counter",
     &launch_prefetch_in_order, kStageBytes},
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

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_1d";
  info.title = "06 tma_1d: one-dimensional bulk copies (TMA), read-modify-write";
  info.explanation =
      "Every element x of a uint32 array becomes 3x + 1. One elected thread loads each tile with one bulk copy\n"
      "(cuda::memcpy_async, cuda::device::memcpy_async_tx, cuda::ptx::cp_async_bulk) and stores it back with one;\n"
      "a ring of 4 x 32 KiB stages prefetches tiles taken in order from a counter.";
  info.requirement = {9, 0, false, "cp.async.bulk (TMA)"};
  info.verify_bytes = (8u << 20) + 3 * kBulkAlignBytes;  // a ragged end: the last tile holds 48 bytes
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBulkAlignBytes, "--size must be a multiple of 16 bytes (bulk copies move 16-byte units)");
  info.host_model = [](std::ostream& out) { print_host_model<kStages>(out, kStageBytes); };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
