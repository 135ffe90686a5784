// 06_tma_1d, second lesson: three spellings from the guide's TMA section that tma_1d.cu only names.
//
// What you learn: expect-tx *without* arriving (cuda::device::barrier_expect_tx), then a plain
// arrival from every thread, and why the expect-tx must come before the phase could complete; the
// two waits for a bulk store: ".read" (the shared source may be reused) and the full one (the
// writes are done and visible to the issuing thread, which reads them back); and
// cp.async.bulk.prefetch.L2 one ring window ahead, measured on a stream already at cudaMemcpy's speed.
// What changed from tma_1d.cu: the same problem, tiles, write-back and in-order ring; arrive-with-
// bytes becomes expect-tx, then arrive; one kernel waits for its stores' writes; the ring prefetches.
// Hardware: compute capability 9.0+ (cp.async.bulk, mbarrier transaction counts, elect.sync).
// Run: build/06_tma_1d/bulk_spellings [--bench] [--variant=NAME] [--size=24M]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-tma-to-transfer-one-dimensional-arrays
// API: cuda::device::barrier_expect_tx: https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/barrier/barrier_expect_tx.html
//      cuda::ptx::cp_async_bulk_wait_group(_read): https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_wait_group.html
//      PTX mbarrier.expect_tx, cp.async.bulk.wait_group, cp.async.bulk.prefetch: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_1d_model.hpp"  // the problem (modify, reference), the rules of a bulk copy, tile and ring plans

namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;
#pragma nv_diag_suppress static_var_with_dynamic_init  // a __shared__ cuda::barrier is set up by init()

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 1024;  // single-stage kernels: the guide's 4 KiB buffer
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);
constexpr int kStages = 4;                      // the ring: four stages ...
constexpr std::size_t kStageBytes = 32 * 1024;  // ... of one 32 KiB tile each
constexpr std::size_t kStageElems = kStageBytes / sizeof(std::uint32_t);
constexpr std::size_t kRingSmemBytes = prefetch_smem_bytes(kStages, kStageBytes);  // tiles, then barriers
static_assert(is_legal_tile(kTileBytes) && is_legal_tile(kStageBytes), "a tile: 16-byte units, < 1 MiB per phase");
static_assert(kStages >= 2, "a stage's tile index is ordered by the block sync of the next stage's write-back");

/// [prefetch_ahead]
// The ring's loads sweep the array as one window of kStages tiles per block: prefetch_l2 asks L2 for the tile
// that the counter hands out one window later.
COURSE_HOST_DEVICE constexpr std::size_t prefetch_ahead_tiles(unsigned grid) { return std::size_t{kStages} * grid; }
/// [prefetch_ahead]

// ---- Device building blocks (as in tma_1d.cu) --------------------------------------------------
// One lane of warp 0, elected with elect.sync: tma_1d.cu teaches why; its test checks this copy elects alike.
__device__ inline bool is_elected_leader() { return course::elect_tma_leader(); }

// Every thread modifies 16-byte vectors of the tile in place, in shared memory.
__device__ void modify_tile(std::uint32_t* smem_tile, std::uint32_t tile_bytes) {
  uint4* smem_vecs = reinterpret_cast<uint4*>(smem_tile);
  for (unsigned v = threadIdx.x; v < tile_bytes / sizeof(uint4); v += blockDim.x) {
    const uint4 x = smem_vecs[v];
    smem_vecs[v] = {modify(x.x), modify(x.y), modify(x.z), modify(x.w)};
  }
}

/// [read_back]
// The words of a stored tile that differ between its global destination and its shared source.
__device__ std::uint32_t count_differing(const std::uint32_t* gmem, const std::uint32_t* smem, std::uint32_t bytes) {
  std::uint32_t differing = 0;
#pragma unroll 4
  for (std::uint32_t v = 0; v < bytes / sizeof(uint4); ++v) {
    const uint4 g = reinterpret_cast<const uint4*>(gmem)[v], s = reinterpret_cast<const uint4*>(smem)[v];
    differing += (g.x != s.x) + (g.y != s.y) + (g.z != s.z) + (g.w != s.w);
  }
  return differing;
}
/// [read_back]

/// [write_back]
// Shared -> global with one bulk store, as in tma_1d.cu; the issuing thread then waits in one of two ways.
template <bool kReadBack>
__device__ std::uint32_t write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile, std::uint32_t bytes) {
  ptx::fence_proxy_async(ptx::space_shared);  // my writes to the tile become visible to the async proxy
  __syncthreads();  // every thread has written and fenced its part before the store is issued
  std::uint32_t differing = 0;
  if (is_elected_leader()) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_dst, smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();  // the store becomes one bulk async-group of this thread
    if constexpr (!kReadBack) {
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // ".read": the tile has been read, may be refilled
    } else {
      // TUTORIAL: without ".read" the wait returns once the store's writes to global memory are
      // complete and visible to this thread (and the tile has been read). wait_group_read returns
      // once the tile has been read, the writes maybe still on their way: a read-back there could
      // see the old bytes. The guarantee is this thread's alone; others need more synchronisation.
      ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
      differing = count_differing(gmem_dst, smem_tile, bytes);  // the tile is intact: only I refill it
      ptx::fence_proxy_async(ptx::space_shared);  // my reads of the tile come before the next load writes it
    }
  }
  return differing;
}
/// [write_back]

/// [expect_tx_then_arrive]
__global__ void __launch_bounds__(kBlockThreads)
    expect_tx_then_arrive_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile, the leader too; the bytes come on top
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      // TUTORIAL: expect-tx alone raises the phase's transaction count by `bytes`, without arriving.
      // It must happen while the phase cannot complete yet: here this thread's own arrival, below,
      // is still missing, whatever the others have done. Were the leader to arrive first, the last
      // arrival could find the count at zero and complete the phase before a byte was announced:
      // the block would read a tile that is not there, and the bytes would count in the next phase.
      // A phase counts at most 2^20 - 1 bytes (a precondition here); the count may dip below
      // zero, to -(2^20 - 1), when bytes land before their expect-tx: "copy, then expect" is legal.
      cuda::device::barrier_expect_tx(full_bar, bytes);  // announce, without arriving
      cuda::device::memcpy_async_tx(smem_tile, gmem_in + tile * kTileElems, cuda::aligned_size_t<16>(bytes), full_bar);
    }
    // Every thread arrives plainly, the leader after its expect-tx; the phase needs all + the bytes.
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    write_back_tile<false>(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [expect_tx_then_arrive]

// What the issuing threads of wait_group read back, over the whole grid; zeroed before each verification.
struct ReadbackTally { unsigned long long words, mismatches; };  // words read back; of them, differing from the tile
__device__ ReadbackTally gmem_readback;

/// [wait_group]
__global__ void __launch_bounds__(kBlockThreads)
    wait_group_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;  // a raw mbarrier, as in tma_1d.cu's cp_async_bulk
  if (is_elected_leader()) {
    ptx::mbarrier_init(&full_bar, 1);  // one arrival per phase: the leader's, which carries the bytes
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  unsigned long long read_back = 0, differing = 0;  // this block's tally, kept by every thread, added by the leader
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {  // the phase's only arrival, carrying the tile's bytes; then the copy
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar, bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile, gmem_in + tile * kTileElems, bytes, &full_bar);
    }
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});  // the tile has landed
    modify_tile(smem_tile, bytes);
    differing += write_back_tile<true>(gmem_out + tile * kTileElems, smem_tile, bytes);  // 0 outside the leader
    read_back += bytes / sizeof(std::uint32_t);
  }
  if (is_elected_leader() && read_back > 0) {  // one update per block, not per tile
    atomicAdd(&gmem_readback.words, read_back);
    atomicAdd(&gmem_readback.mismatches, differing);
  }
}
/// [wait_group]

/// [prefetch_l2]
// cp.async.bulk.prefetch.L2: the TMA unit reads `bytes` of global memory into L2 (16-byte rules as for
// a copy). It completes no barrier or group: nothing can wait for it, and correctness never depends on it.
__device__ inline void prefetch_l2(const void* gmem_src, std::uint32_t bytes) {  // inline: not in CCCL 3.0's cuda::ptx
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" : : "l"(__cvta_generic_to_global(gmem_src)), "r"(bytes));
}
/// [prefetch_l2]

template <bool kPrefetchL2>
__global__ void __launch_bounds__(kBlockThreads)
    ring_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
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
      /// [prefetch_issue]
      if constexpr (kPrefetchL2) {
        // TUTORIAL: while tile `tile` is copied, ask L2 for the tile that some block will take one
        // window later; when that block loads it, its bytes should come from L2, not device memory.
        const unsigned long long ahead = tile + prefetch_ahead_tiles(gridDim.x);
        if (ahead < num_tiles) prefetch_l2(gmem_in + ahead * kStageElems, tile_bytes_of(ahead, num_bytes, kStageBytes));
      }
      /// [prefetch_issue]
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
    write_back_tile<false>(gmem_out + tile * kStageElems, smem_tile, bytes);  // its block sync frees the stage
    if (is_elected_leader()) take_and_load(cursor.stage);  // completes the stage's next phase
  }
}

// ---- Launchers and the variant table -------------------------------------------------------

// A persistent grid over the tiles (as in tma_1d.cu): as many blocks as are resident, never more than tiles.
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
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, smem_bytes));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  const unsigned grid = static_cast<unsigned>(std::min(resident, num_tiles_of(num_bytes, tile_bytes)));
  kernel<<<grid, kBlockThreads, smem_bytes>>>(gmem_in, gmem_out, num_bytes, extra...);
  COURSE_CHECK_LAUNCH();
}

template <auto kKernel>
void launch_single_stage(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  launch_resident(kKernel, 0, kTileBytes, gmem_in, gmem_out, num_elems);
}

// The count of taken tiles, reset to zero by a memset on the same stream before every launch.
__device__ unsigned long long gmem_next_tile;

template <bool kPrefetchL2>
void launch_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_tile));  // host code names a __device__ variable by symbol
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // ordered before the kernel
  launch_resident(ring_kernel<kPrefetchL2>, kRingSmemBytes, kStageBytes, gmem_in, gmem_out, num_elems,
                  static_cast<unsigned long long*>(counter));
}

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems);
  std::size_t tile_bytes;  // bytes per bulk copy (tests size their problems with it)
};
const Variant kVariants[] = {
    {"expect_tx_then_arrive", "leader: barrier_expect_tx (no arrival) + memcpy_async_tx; every thread: plain arrive()",
     &launch_single_stage<expect_tx_then_arrive_kernel>, kTileBytes},
    {"wait_group", "bulk store waited for without .read; the issuing thread reads its tile back from global memory",
     &launch_single_stage<wait_group_kernel>, kTileBytes},
    {"prefetch_in_order", "tma_1d's ring: 4 x 32 KiB, tiles in order from a counter (the baseline of prefetch_l2)",
     &launch_ring<false>, kStageBytes},
    {"prefetch_l2", "the same ring; each load also prefetches into L2 the tile one window (4 x grid tiles) ahead",
     &launch_ring<true>, kStageBytes},
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

// Poison, launch, synchronise, compare bit-exactly (guard bands, and wait_group's own read-back, included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  const ReadbackTally zero{};
  COURSE_CHECK(cudaMemcpyToSymbol(gmem_readback, &zero, sizeof zero));
  problem.gmem_out.poison();
  variant.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  course::Comparison result = problem.gmem_out.check(problem.expected);
  ReadbackTally tally{};
  COURSE_CHECK(cudaMemcpyFromSymbol(&tally, gmem_readback, sizeof tally));
  if (tally.mismatches > 0) {
    result.mismatches += tally.mismatches;
    result.first += "  read back after the full wait: " + std::to_string(tally.mismatches) + " words differ\n";
  }
  return result;
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
  info.program = "bulk_spellings";
  info.title = "06 bulk_spellings: expect-tx without arriving, the two waits of a bulk store, L2 prefetch";
  info.explanation =
      "tma_1d's x -> 3x + 1: bytes announced with barrier_expect_tx, then plain arrivals; a bulk store waited for\n"
      "without .read and read back by its issuing thread; the in-order ring with and without prefetch.L2.";
  info.requirement = {9, 0, false, "cp.async.bulk (TMA)"};
  info.verify_bytes = (24u << 20) + 3 * kBulkAlignBytes;  // past one prefetch window on an H100; a 48-byte last tile
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBulkAlignBytes, "--size must be a multiple of 16 bytes (bulk copies move 16-byte units)");
  info.host_model = [](std::ostream& out) {
    print_host_model<kStages>(out, kStageBytes);
    out << "expect-tx without arriving: before the issuing thread's own arrival, at most " << kMaxTxBytes
        << " bytes per phase\nprefetch_l2: " << kStages << " x grid tiles ahead; 132 blocks: "
        << prefetch_ahead_tiles(132) << " tiles, " << prefetch_ahead_tiles(132) * kStageBytes / 1024 << " KiB\n";
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
