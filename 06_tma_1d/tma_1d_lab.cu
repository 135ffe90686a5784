// 06_tma_1d lab: what cuda::memcpy_async becomes without a bulk copy, and the rings the lesson's
// ring is measured against.
//
// Each row changes one thing against the lesson, and is verified bit for bit before it is timed:
//   the fallbacks of the lesson's cuda::memcpy_async: the barrier in global memory (16-byte
//     LDGSTS, the copying thread blocks), aligned_size_t<4> (4-byte LDGSTS completing on the
//     barrier), char pointers (a byte loop);
//   rings without an `empty` barrier, where a block sync and the store's .read wait free a stage:
//     tiles dealt out in advance (the guide's ring), tiles taken in order from a global atomic
//     counter (a per-stage tile record, a zero-byte phase at the end), the same with an L2
//     prefetch one window ahead; the lesson's ring on a persistent grid, and with two stages.
//   the library ceiling: the same read-modify-write by CUB's DeviceTransform and by
//     thrust::transform, NVIDIA's tuned code, for what a kernel of this course can aim at.
// --timeline=FILE runs counter_sync_ring once more with per-stage events recorded (issue, land,
// consume, release of blocks 0-3) and writes them as CSV; scripts/draw_timelines.py draws them.
// Hardware: compute capability 9.0, as the lesson.
// Run: build/06_tma_1d/tma_1d_lab [--bench] [--variant=NAME] [--size=N] [--timeline=FILE]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//        (4.11.2.1.1: the prefetch ring with tiles dealt out in advance)
#include "tma_1d.cu"  // the lesson: model, device building blocks, launchers, Variant, Problem

#include <algorithm>

#include <cub/device/device_transform.cuh>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include "course/timeline.hpp"  // --timeline: the recorder and the CSV (measurement only)

namespace lab {

// ---- Grids: the persistent grid of the lab's rings ---------------------------------------

// A persistent grid: as many blocks of `kernel` as are resident at once, never more than tiles,
// each striding over the tiles. `extra`: further kernel arguments.
template <class Kernel, class... Extra>
void launch_resident(Kernel kernel, int threads, std::size_t smem_bytes, std::size_t tile_bytes,
                     const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems,
                     Extra... extra) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  if (!prepare_launch(kernel, smem_bytes, gmem_in, gmem_out, num_bytes)) return;
  const std::size_t resident = course::resident_blocks((const void*)kernel, threads, smem_bytes);
  const auto grid = static_cast<unsigned>(std::min(resident, num_tiles_of(num_bytes, tile_bytes)));
  kernel<<<grid, threads, smem_bytes>>>(gmem_in, gmem_out, num_bytes, extra...);
  COURSE_CHECK_LAUNCH();
}

/// [ring_resident]
// The lesson's ring, unchanged, on a persistent grid instead of a block per four tiles.
void launch_ring_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                          std::size_t num_elems) {
  constexpr auto kernel = ring_kernel<kStages, kStageBytes>;
  launch_resident(kernel, kRingThreads, ring_smem_bytes(kStages, kStageBytes), kStageBytes,
                  gmem_in, gmem_out, num_elems);
}
/// [ring_resident]

// ---- What cuda::memcpy_async falls back to -------------------------------------------------

/// [memcpy_async_load]
// kAlign is what the call tells the library: 16 or 4 (cuda::aligned_size_t<kAlign>), or 1: char
// pointers and a plain byte count, i.e. nothing. The call is the per-thread overload (no
// group): the calling thread alone copies all `bytes`.
template <std::size_t kAlign>
__device__ void load_tile(std::uint32_t* smem_tile, const std::uint32_t* gmem_src,
                          std::uint32_t bytes, block_barrier& full_bar) {
  if constexpr (kAlign == 16 || kAlign == 4) {
    cuda::memcpy_async(smem_tile, gmem_src, cuda::aligned_size_t<kAlign>(bytes), full_bar);
  } else {
    cuda::memcpy_async(reinterpret_cast<char*>(smem_tile), reinterpret_cast<const char*>(gmem_src),
                       std::size_t{bytes}, full_bar);
  }
}
/// [memcpy_async_load]

// One block-scope barrier per block in global memory, for the variant that shows what the
// library does when the barrier is not in shared memory (a cuda::barrier has no constexpr
// constructor, so this is raw storage that init() turns into a barrier).
constexpr unsigned kMaxGlobalBarriers = 4096;
__device__ alignas(block_barrier) unsigned char
    gmem_barrier_storage[kMaxGlobalBarriers][sizeof(block_barrier)];

/// [fallback]
// The lesson's memcpy_async_kernel with what the call knows as parameters: the alignment it is
// told (kAlign) and where the barrier lives (kGlobalBarrier).
template <std::size_t kAlign, bool kGlobalBarrier>
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_fallback_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                 std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier smem_bar;
  block_barrier& full_bar =
      kGlobalBarrier ? *reinterpret_cast<block_barrier*>(gmem_barrier_storage[blockIdx.x]) : smem_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();  // nobody arrives or copies before the barrier is initialised
  const std::size_t num_tiles = num_tiles_of(num_bytes, kTileBytes);
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    const std::size_t first = tile * kTileElems;
    if (is_elected_leader()) load_tile<kAlign>(smem_tile, gmem_in + first, bytes, full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // landed
    // A barrier in global memory is built from atomics (release/acquire): they order the copy,
    // but racecheck does not recognise them as synchronisation; a block sync it does.
    if constexpr (kGlobalBarrier) __syncthreads();
    modify_tile(smem_tile, bytes, threadIdx.x, blockDim.x);
    write_back_tile(gmem_out + first, smem_tile, bytes);
  }
}
/// [fallback]

// Enough resident blocks to fill every SM, never more than tiles, and never more than there
// are global-memory barriers.
template <std::size_t kAlign, bool kGlobalBarrier>
void launch_fallback(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  constexpr auto kernel = memcpy_async_fallback_kernel<kAlign, kGlobalBarrier>;
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);  // nothing that breaks a rule runs
  if (num_bytes == 0) return;
  std::size_t grid = std::min<std::size_t>(course::resident_blocks((const void*)kernel, kBlockThreads),
                                           num_tiles_of(num_bytes, kTileBytes));
  grid = std::min<std::size_t>(grid, kMaxGlobalBarriers);  // one global barrier per block at most
  kernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_bytes);
  COURSE_CHECK_LAUNCH();
}

// ---- Rings without an empty barrier: a block sync frees the stage ----------------------------

/// [prefetch_l2]
// cp.async.bulk.prefetch.L2: the TMA unit reads `bytes` of global memory into L2 (16-byte rules
// as for a copy). It completes no barrier or group: nothing waits for it, nothing depends on it.
__device__ inline void prefetch_l2(const void* gmem_src, std::uint32_t bytes) {  // not in CCCL 3.0
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
               : : "l"(__cvta_generic_to_global(gmem_src)), "r"(bytes));
}
/// [prefetch_l2]

enum class TileOrder { dealt, counter };  // blockIdx.x + k * gridDim.x, or the next untaken tile

/// [sync_ring]
// TUTORIAL: the ring this chapter taught before the full/empty ring, kept for the comparison.
// One barrier per stage (full); a stage is free again once every thread has passed the block
// sync of write_back_tile and the leader's .read wait has returned, so the leader refills it
// right there. The leader writes each stage's tile index beside it (stage_tile); every thread
// reads it after the stage's wait (the next write-back's block sync lies between). When no tile
// is left, the leader completes the stage's phase with a plain arrival, no bytes: the block
// wakes, reads "none left" and stops. With kOrder == counter the tiles come from a global atomic
// counter, so the tiles in flight form one compact window sweeping through the array.
template <int kRingStages, TileOrder kOrder, bool kPrefetchL2 = false, bool kRecord = false>
__global__ void __launch_bounds__(kBlockThreads)
    sync_ring_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                     unsigned long long* gmem_next_tile, course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  static_assert(kRingStages >= 2, "a stage's tile index is ordered by the next stage's block sync");
  constexpr std::size_t kStageElems = kStageBytes / sizeof(std::uint32_t);
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;  // [kRingStages][kStageBytes]
  auto* full_bar = reinterpret_cast<std::uint64_t*>(smem + kRingStages * kStageBytes);  // [kRingStages]
  __shared__ unsigned long long stage_tile[kRingStages];  // >= num_tiles: none left
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageBytes);
  const bool is_leader = is_elected_leader();  // the same lane as every later election
  std::uint32_t fills = 0;  // the leader's count of its fills: tile number `fills` of this block

  auto take_and_load = [&](int stage) {
    const unsigned long long tile = kOrder == TileOrder::counter
                                        ? atomicAdd(gmem_next_tile, 1ull)
                                        : blockIdx.x + std::size_t{fills} * gridDim.x;
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      if constexpr (kRecord) recorder.record(Kind::issue, Role::producer, stage, fills);
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                     &full_bar[stage], bytes);  // the only arrival, with bytes
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageBytes,
                         gmem_in + tile * kStageElems, bytes, &full_bar[stage]);
      const unsigned long long ahead = tile + std::size_t{kRingStages} * gridDim.x;
      if (kPrefetchL2 && ahead < num_tiles) {  // the tile some block loads one window later
        prefetch_l2(gmem_in + ahead * kStageElems, tile_bytes_of(ahead, num_bytes, kStageBytes));
      }
    } else {  // no bytes: the arrival alone completes the phase, which says "none left"
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
    }
    ++fills;
  };

  if (is_leader) {
    for (int s = 0; s < kRingStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
    for (int s = 0; s < kRingStages; ++s) take_and_load(s);  // prime: one tile per stage
  }
  __syncthreads();  // barriers initialised, first tile indices written
  std::uint32_t fill = 0;
  for (course::StageCursor<kRingStages> cursor;; cursor.advance(), ++fill) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // the same answer in every thread; tiles grow in ring order
    if (kRecord && is_leader) recorder.record(Kind::land, Role::consumer, cursor.stage, fill);
    auto* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
    modify_tile(smem_tile, bytes, threadIdx.x, blockDim.x);
    if (kRecord && is_leader) recorder.record(Kind::consume, Role::consumer, cursor.stage, fill);
    write_back_tile(gmem_out + tile * kStageElems, smem_tile, bytes);  // its block sync frees it
    if (is_leader) {
      if constexpr (kRecord) recorder.record(Kind::release, Role::consumer, cursor.stage, fill);
      take_and_load(cursor.stage);  // completes the stage's next phase
    }
  }
}
/// [sync_ring]

// The count of taken tiles, reset to zero by a memset on the same stream before every launch.
// (Two launches running at once would share it: each would need its own counter.)
__device__ unsigned long long gmem_next_tile;

unsigned long long* reset_tile_counter() {
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_tile));  // a __device__ variable's address
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // before the kernel
  return static_cast<unsigned long long*>(counter);
}

template <int kRingStages, TileOrder kOrder, bool kPrefetchL2 = false>
void launch_sync_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  launch_resident(sync_ring_kernel<kRingStages, kOrder, kPrefetchL2>, kBlockThreads,
                  prefetch_smem_bytes(kRingStages, kStageBytes), kStageBytes, gmem_in, gmem_out,
                  num_elems, reset_tile_counter(), course::timeline::Recorder{});
}

// ---- Timeline: the counter ring with its events recorded (--timeline=FILE) --------------------

constexpr const char* kTimelineVariant = "counter_sync_ring";
constexpr std::size_t kTimelineBytes = 128u << 20;  // about 30 tiles per block on an H100

struct TimelineRun {
  std::vector<course::timeline::Event> events;
  course::Comparison result;  // the recorded run's output against the reference
  unsigned grid = 0;
};

// One run of the 4 x 32 KiB counter ring on `problem` with blocks 0 .. max_blocks - 1 recording
// their first max_iterations tiles; poisoned, launched, synchronised and compared like every row.
TimelineRun record_counter_ring(Problem& problem, std::uint32_t max_blocks,
                                std::uint32_t max_iterations) {
  constexpr auto kernel = sync_ring_kernel<kStages, TileOrder::counter, false, true>;
  constexpr std::size_t smem = prefetch_smem_bytes(kStages, kStageBytes);
  course::timeline::Recording recording(max_blocks, max_iterations);
  problem.gmem_out.poison();
  launch_resident(kernel, kBlockThreads, smem, kStageBytes, problem.gmem_in.data(),
                  problem.gmem_out.data(), problem.num_elems, reset_tile_counter(),
                  recording.recorder());
  COURSE_CHECK(cudaDeviceSynchronize());
  TimelineRun run{recording.events(), problem.gmem_out.check(problem.expected)};
  const std::size_t num_tiles = num_tiles_of(problem.num_elems * sizeof(std::uint32_t), kStageBytes);
  const std::size_t resident = course::resident_blocks((const void*)kernel, kBlockThreads, smem);
  run.grid = static_cast<unsigned>(std::min(resident, num_tiles));
  return run;
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  const TimelineRun run = record_counter_ring(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("tma_1d_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"ring of " + std::to_string(kStages) +
                      " stages x 32 KiB, tiles taken in order from a global counter; " +
                      std::to_string(run.grid) + " blocks of " + std::to_string(kBlockThreads) +
                      " threads",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + ", their first " +
                      std::to_string(kDefaultIterations) +
                      " tiles, all events by the elected leader thread",
                  "release = the leader's bulk store has read the stage "
                  "(cp.async.bulk.wait_group.read)"};
  write_checked(opts.timeline, log, run.result, header, run.events, "ring");
}

// ---- The library ceiling: the same work by CUB and Thrust -------------------------------------

/// [library]
// The lesson's element function as a function object the libraries call on the device.
struct Modify {
  __device__ std::uint32_t operator()(std::uint32_t x) const { return modify(x); }
};

// CUB picks its own kernel, grid and tile for the GPU it runs on (on 9.0, bulk copies too).
// The libraries need no 16-byte rule; the lab's rows all refuse the same requests all the same.
void launch_cub_transform(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                          std::size_t num_elems) {
  require_bulk_copy_rules(gmem_in, gmem_out, num_elems * sizeof(std::uint32_t));
  COURSE_CHECK(cub::DeviceTransform::Transform(gmem_in, gmem_out, num_elems, Modify{}));
}

// thrust::transform on raw device pointers; par_nosync: no synchronisation after the launch.
void launch_thrust_transform(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                             std::size_t num_elems) {
  require_bulk_copy_rules(gmem_in, gmem_out, num_elems * sizeof(std::uint32_t));
  thrust::transform(thrust::cuda::par_nosync, gmem_in, gmem_in + num_elems, gmem_out, Modify{});
  COURSE_CHECK_LAUNCH();
}
/// [library]

// ---- The variant table and run() ------------------------------------------------------------

const Variant kVariants[] = {
    {"memcpy_async_global_barrier", "cuda::memcpy_async, barrier in global memory: blocking LDGSTS",
     &launch_fallback<16, true>, kTileBytes},
    {"memcpy_async_align4", "cuda::memcpy_async with aligned_size_t<4>: one thread's 4-byte LDGSTS",
     &launch_fallback<4, false>, kTileBytes},
    {"memcpy_async_bytes", "cuda::memcpy_async with char pointers: one thread copies bytes",
     &launch_fallback<1, false>, kTileBytes},
    {"dealt_sync_ring", "4 x 32 KiB, a block sync frees a stage, tiles dealt out (the guide's ring)",
     &launch_sync_ring<kStages, TileOrder::dealt>, kStageBytes},
    {"counter_sync_ring", "4 x 32 KiB, a block sync frees a stage, tiles from an atomic counter",
     &launch_sync_ring<kStages, TileOrder::counter>, kStageBytes},
    {"counter_sync_ring_prefetch_l2", "counter_sync_ring, each load also prefetches one window ahead",
     &launch_sync_ring<kStages, TileOrder::counter, true>, kStageBytes},
    {"ring_resident", "the lesson's ring on a persistent grid, each block striding over tiles",
     &launch_ring_resident, kStageBytes},
    {"ring_2_stages", "the lesson's ring with 2 x 32 KiB stages: three blocks per SM",
     &launch_ring<2, kStageBytes>, kStageBytes},
    {"cub_transform", "cub::DeviceTransform::Transform: the library's kernel for the same work",
     &launch_cub_transform, kTileBytes},
    {"thrust_transform", "thrust::transform on device pointers: the same work through Thrust",
     &launch_thrust_transform, kTileBytes},
};

void run(const course::Options& opts, course::Report& report) { run_variants(kVariants, opts, report); }

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes, rule and model
  info.program = "tma_1d_lab";
  info.title =
      "06 tma_1d lab: memcpy_async fallbacks, rings freed by a block sync, ring stages, libraries";
  info.explanation =
      "The lesson's read-modify-write (every x becomes 3x + 1), varied one thing at a time:\n"
      "cuda::memcpy_async when a bulk copy is not allowed (barrier in global memory, 4-byte\n"
      "alignment, no alignment); rings whose stages a block sync frees, tiles dealt out or taken\n"
      "from an atomic counter (with and without an L2 prefetch); the lesson's ring on a\n"
      "persistent grid and with 2 stages;\n"
      "and the same work by CUB's DeviceTransform and thrust::transform (the library ceiling).";
  info.timeline = write_timeline;
  info.timeline_variant = kTimelineVariant;
  info.timeline_bytes = kTimelineBytes;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
