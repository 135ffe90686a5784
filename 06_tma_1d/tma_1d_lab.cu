// 06_tma_1d lab: what cuda::memcpy_async becomes without a bulk copy, how many stages a ring
// needs, and why its tiles are taken in order.
//
// Each row changes one thing against the lesson, and is verified bit for bit before it is timed:
//   the fallbacks: memcpy_async (the lesson's kernel, for comparison), then the same call with the
//     barrier in global memory (16-byte LDGSTS, the copying thread blocks), with aligned_size_t<4>
//     (4-byte LDGSTS completing on the barrier) and with char pointers (a byte loop);
//   the guide's ring, tiles dealt out in advance: prefetch_1_stage .. prefetch_4_stages;
//   the same ring taking its tiles in order from a counter: in_order_2_stages, in_order_3_stages,
//     and in_order_4_stages (the lesson's prefetch_in_order, for comparison).
// --timeline=FILE runs in_order_4_stages once more with per-stage events recorded (issue, land,
// consume, release of blocks 0-3) and writes them as CSV; scripts/draw_timelines.py draws them.
// Hardware: compute capability 9.0, as the lesson.
// Run: build/06_tma_1d/tma_1d_lab [--bench] [--variant=NAME] [--size=N] [--timeline=FILE]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-tma-to-transfer-one-dimensional-arrays
//        (4.11.2.1.1: the prefetch ring with tiles dealt out in advance)
#include "tma_1d.cu"  // the lesson: the model, the device building blocks, launch_resident, Variant, Problem

#include <stdexcept>

#include "course/timeline.hpp"  // --timeline: the recorder and the CSV (measurement only)

namespace lab {

// ---- What cuda::memcpy_async falls back to -------------------------------------------------

/// [memcpy_async_load]
// kAlign is what the call tells the library: 16 or 4 (cuda::aligned_size_t<kAlign>), or 1: char
// pointers and a plain byte count, i.e. nothing. The call is the per-thread overload (no group):
// the calling thread alone copies all `bytes`.
template <std::size_t kAlign>
__device__ void load_tile(std::uint32_t* smem_tile, const std::uint32_t* gmem_src, std::uint32_t bytes,
                          block_barrier& full_bar) {
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
__device__ alignas(block_barrier) unsigned char gmem_barrier_storage[kMaxGlobalBarriers][sizeof(block_barrier)];

/// [fallback]
// The lesson's memcpy_async_kernel with what the call knows as parameters: the alignment it is
// told (kAlign) and where the barrier lives (kGlobalBarrier).
template <std::size_t kAlign, bool kGlobalBarrier>
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_fallback_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];  // bulk copies need 16-byte aligned shared memory
  __shared__ block_barrier smem_bar;
  block_barrier& full_bar =
      kGlobalBarrier ? *reinterpret_cast<block_barrier*>(gmem_barrier_storage[blockIdx.x]) : smem_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile; a bulk copy adds its bytes on top
    // The TMA completes bytes on the barrier through the async proxy: make the init visible to it.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // nobody arrives or copies before the barrier's initialisation is visible

  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    const std::size_t first = tile * kTileElems;
    if (is_elected_leader()) load_tile<kAlign>(smem_tile, gmem_in + first, bytes, full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // the tile has landed
    // A barrier in global memory is built from atomics (release/acquire): they order the copy
    // correctly, but racecheck does not recognise them as synchronisation; a block sync it does.
    if constexpr (kGlobalBarrier) __syncthreads();
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + first, smem_tile, bytes);
  }
}
/// [fallback]

// Enough resident blocks to fill every SM, never more than tiles, and never more than there are
// global-memory barriers.
template <std::size_t kAlign, bool kGlobalBarrier>
void launch_fallback(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  constexpr auto kernel = memcpy_async_fallback_kernel<kAlign, kGlobalBarrier>;
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);  // nothing that breaks a rule reaches the GPU
  if (num_bytes == 0) return;
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, 0));
  std::size_t grid = std::min<std::size_t>(static_cast<std::size_t>(num_sms) * blocks_per_sm,
                                           num_tiles_of(num_bytes, kTileBytes));
  grid = std::min<std::size_t>(grid, kMaxGlobalBarriers);  // one global-memory barrier per block at most
  kernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_bytes);
  COURSE_CHECK_LAUNCH();
}

// ---- The guide's ring: tiles dealt out in advance, 1 to 4 stages ---------------------------

/// [prefetch]
template <int kStages, std::size_t kStageTileBytes>
__global__ void __launch_bounds__(kBlockThreads)
    prefetch_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  static_assert(is_legal_tile(kStageTileBytes), "a stage's tile: whole 16-byte units, at most 2^20 - 1 bytes");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                    // [kStages][kStageTileBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageTileBytes);  // [kStages]
  constexpr std::size_t kTileElemsPerStage = kStageTileBytes / sizeof(std::uint32_t);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);

  // The leader announces the bytes and starts the load of `tile` into `stage`.
  auto load = [&](std::size_t tile, int stage) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage],
                                         bytes);  // the only arrival, with the tile's bytes
    ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageTileBytes,
                       gmem_in + tile * kTileElemsPerStage, bytes, &full_bar[stage]);
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);         // visible to the async proxy
    // Prime the ring: this block's first kStages tiles, one per stage.
    for (int s = 0; s < kStages; ++s) {
      if (blockIdx.x + s * gridDim.x < num_tiles) load(blockIdx.x + s * gridDim.x, s);
    }
  }
  __syncthreads();  // the initialised barriers are visible before anyone waits on them

  course::StageCursor<kStages> cursor;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageTileBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    modify_tile(smem_tile, bytes);
    // The block sync inside write_back_tile, and the leader's .read wait, free the stage (as in
    // the lesson's ring); meanwhile the tiles of the other kStages - 1 stages are in flight.
    write_back_tile(gmem_out + tile * kTileElemsPerStage, smem_tile, bytes);
    const std::size_t refill = tile + kStages * gridDim.x;
    if (refill < num_tiles && is_elected_leader()) load(refill, cursor.stage);  // completes the stage's next phase
  }
}
/// [prefetch]

template <int kStages, std::size_t kStageTileBytes>
void launch_prefetch(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  launch_resident(prefetch_kernel<kStages, kStageTileBytes>, prefetch_smem_bytes(kStages, kStageTileBytes),
                  kStageTileBytes, gmem_in, gmem_out, num_elems);
}

// ---- The same ring, tiles taken in order: any stage count from 2, any stage size ------------

/// [in_order]
// The lesson's prefetch_in_order_kernel with the stage count and the stage size as parameters.
template <int kStages, std::size_t kStageTileBytes>
__global__ void __launch_bounds__(kBlockThreads)
    in_order_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                    unsigned long long* next_tile) {
  // TUTORIAL: a stage's tile index is written by the leader after one block sync and read by
  // every thread after the stage's wait; with two stages or more, another block sync (the
  // next write-back's) lies between the two, so the plain shared variable is safe.
  static_assert(kStages >= 2, "the tile index of a stage is ordered by the block sync of the next stage");
  static_assert(is_legal_tile(kStageTileBytes), "a stage's tile: whole 16-byte units, at most 2^20 - 1 bytes");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                    // [kStages][kStageTileBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageTileBytes);  // [kStages]
  __shared__ unsigned long long stage_tile[kStages];  // which tile each stage holds (>= num_tiles: none left)
  constexpr std::size_t kTileElemsPerStage = kStageTileBytes / sizeof(std::uint32_t);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);

  // The leader takes the next tile and starts its load; when none is left it still completes
  // the stage's phase (a plain arrival), so that the block wakes up and sees the end.
  auto take_and_load = [&](int stage) {
    const unsigned long long tile = atomicAdd(next_tile, 1ull);
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage],
                                           bytes);  // the only arrival, with the tile's bytes
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageTileBytes,
                         gmem_in + tile * kTileElemsPerStage, bytes, &full_bar[stage]);
    } else {
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                 &full_bar[stage]);  // no bytes: completes the phase, which says "none left"
    }
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);         // visible to the async proxy
    for (int s = 0; s < kStages; ++s) take_and_load(s);                      // prime the ring
  }
  __syncthreads();  // barriers initialised, first tile indices written

  // Each block's tiles increase in ring order, so once a stage says "none left", every later
  // stage does too: no loaded tile is ever skipped.
  for (course::StageCursor<kStages> cursor;; cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // the same answer in every thread
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageTileBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + tile * kTileElemsPerStage, smem_tile, bytes);
    if (is_elected_leader()) take_and_load(cursor.stage);  // completes the stage's next phase
  }
}
/// [in_order]

// The lesson's counter of taken tiles (gmem_next_tile), reset before every launch.
template <int kStages, std::size_t kStageTileBytes>
void launch_in_order(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_tile));
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // ordered before the kernel
  launch_resident(in_order_kernel<kStages, kStageTileBytes>, prefetch_smem_bytes(kStages, kStageTileBytes),
                  kStageTileBytes, gmem_in, gmem_out, num_elems, static_cast<unsigned long long*>(counter));
}

// ---- Timeline: the in-order ring with its events recorded (--timeline=FILE) -----------------

/// [recorded_in_order]
// in_order_kernel line for line, plus the four recording points of course/timeline.hpp (blocks
// 0-3, their first 16 tiles). The elected leader records them all: it issues every load, and
// its .read wait in write_back_tile is what frees a stage. `fill` counts the block's tiles in
// ring order: tile number `fill` sits in stage fill % kStages.
template <int kStages, std::size_t kStageTileBytes>
__global__ void __launch_bounds__(kBlockThreads)
    recorded_in_order_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                             unsigned long long* next_tile, course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  static_assert(kStages >= 2, "the tile index of a stage is ordered by the block sync of the next stage");
  static_assert(is_legal_tile(kStageTileBytes), "a stage's tile: whole 16-byte units, at most 2^20 - 1 bytes");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                    // [kStages][kStageTileBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageTileBytes);  // [kStages]
  __shared__ unsigned long long stage_tile[kStages];  // which tile each stage holds (>= num_tiles: none left)
  constexpr std::size_t kTileElemsPerStage = kStageTileBytes / sizeof(std::uint32_t);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);
  const bool is_recorder = is_elected_leader();  // the same lane as every later election

  auto take_and_load = [&](int stage, std::uint32_t fill) {
    const unsigned long long tile = atomicAdd(next_tile, 1ull);
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      recorder.record(Kind::issue, Role::producer, stage, fill);
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage],
                                           bytes);  // the only arrival, with the tile's bytes
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageTileBytes,
                         gmem_in + tile * kTileElemsPerStage, bytes, &full_bar[stage]);
    } else {
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                 &full_bar[stage]);  // no bytes: completes the phase, which says "none left"
    }
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);         // visible to the async proxy
    for (int s = 0; s < kStages; ++s) take_and_load(s, s);                   // prime the ring
  }
  __syncthreads();  // barriers initialised, first tile indices written

  std::uint32_t fill = 0;
  for (course::StageCursor<kStages> cursor;; cursor.advance(), ++fill) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // the same answer in every thread
    if (is_recorder) recorder.record(Kind::land, Role::consumer, cursor.stage, fill);
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageTileBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    modify_tile(smem_tile, bytes);
    if (is_recorder) recorder.record(Kind::consume, Role::consumer, cursor.stage, fill);
    write_back_tile(gmem_out + tile * kTileElemsPerStage, smem_tile, bytes);
    if (is_elected_leader()) {
      recorder.record(Kind::release, Role::consumer, cursor.stage, fill);  // the store has read the stage
      take_and_load(cursor.stage, fill + kStages);                         // completes the stage's next phase
    }
  }
}
/// [recorded_in_order]

constexpr const char* kTimelineVariant = "in_order_4_stages";  // the lesson's ring, as the lab names it
constexpr std::size_t kTimelineBytes = 128u << 20;  // about 30 tiles per block on an H100: all blocks busy

struct TimelineRun {
  std::vector<course::timeline::Event> events;
  course::Comparison result;  // the recorded run's output against the reference
  unsigned grid = 0;
};

// One run of the 4 x 32 KiB in-order ring on `problem` with blocks 0 .. max_blocks - 1 recording
// their first max_iterations tiles; poisoned, launched, synchronised and compared like every row.
TimelineRun record_in_order_ring(Problem& problem, std::uint32_t max_blocks, std::uint32_t max_iterations) {
  constexpr auto kernel = recorded_in_order_kernel<kStages, kStageBytes>;
  course::timeline::Recording recording(max_blocks, max_iterations);
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_tile));
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // ordered before the kernel
  problem.gmem_out.poison();
  launch_resident(kernel, kRingSmemBytes, kStageBytes, problem.gmem_in.data(), problem.gmem_out.data(),
                  problem.num_elems, static_cast<unsigned long long*>(counter), recording.recorder());
  COURSE_CHECK(cudaDeviceSynchronize());
  TimelineRun run{recording.events(), problem.gmem_out.check(problem.expected)};
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, kRingSmemBytes));
  run.grid = static_cast<unsigned>(std::min<std::size_t>(std::size_t(num_sms) * blocks_per_sm,
                                                         num_tiles_of(problem.num_elems * sizeof(std::uint32_t), kStageBytes)));
  return run;
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  const TimelineRun run = record_in_order_ring(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("tma_1d_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"ring of " + std::to_string(kStages) + " stages x 32 KiB, tiles taken in order from a global counter; " +
                      std::to_string(run.grid) + " blocks of " + std::to_string(kBlockThreads) + " threads",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + ", their first " +
                      std::to_string(kDefaultIterations) + " tiles, all events by the elected leader thread",
                  "release = the leader's bulk store has read the stage (cp.async.bulk.wait_group.read)"};
  write_checked(opts.timeline, log, run.result, header, run.events, "ring");
}

// ---- The variant table and run() ------------------------------------------------------------

const Variant kVariants[] = {
    {"memcpy_async", "the lesson's cuda::memcpy_async: aligned_size_t<16>, shared-memory barrier, a bulk copy",
     &launch_single_stage<::memcpy_async_kernel>, kTileBytes},
    {"memcpy_async_global_barrier", "the same call, barrier in global memory: LDGSTS + cp.async.wait_all",
     &launch_fallback<16, true>, kTileBytes},
    {"memcpy_async_align4", "the same call with aligned_size_t<4>: one thread issues 4-byte LDGSTS",
     &launch_fallback<4, false>, kTileBytes},
    {"memcpy_async_bytes", "the same call with char pointers, plain size: one thread copies bytes",
     &launch_fallback<1, false>, kTileBytes},
    {"prefetch_1_stage", "ring of 1 x 32 KiB, tiles dealt: a block's next load waits for its store",
     &launch_prefetch<1, kStageBytes>, kStageBytes},
    {"prefetch_2_stages", "ring of 2 x 32 KiB, tiles dealt out in advance (the guide's ring)",
     &launch_prefetch<2, kStageBytes>, kStageBytes},
    {"prefetch_3_stages", "ring of 3 x 32 KiB, tiles dealt: two blocks per SM on an H100",
     &launch_prefetch<3, kStageBytes>, kStageBytes},
    {"prefetch_4_stages", "ring of 4 x 32 KiB, tiles dealt: 128 KiB of loads in flight, one block per SM",
     &launch_prefetch<4, kStageBytes>, kStageBytes},
    {"in_order_2_stages", "ring of 2 x 32 KiB, tiles taken in order from a global counter",
     &launch_in_order<2, kStageBytes>, kStageBytes},
    {"in_order_3_stages", "ring of 3 x 32 KiB, tiles taken in order from a global counter",
     &launch_in_order<3, kStageBytes>, kStageBytes},
    {"in_order_4_stages", "the lesson's prefetch_in_order: ring of 4 x 32 KiB, tiles taken in order",
     &launch_prefetch_in_order, kStageBytes},
};

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
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes, size rule and host model
  info.program = "tma_1d_lab";
  info.title = "06 tma_1d lab: memcpy_async fallbacks, ring stages, dealt versus in-order tiles";
  info.explanation =
      "The lesson's read-modify-write (every x becomes 3x + 1), varied one thing at a time: cuda::memcpy_async\n"
      "when a bulk copy is not allowed (barrier in global memory, 4-byte alignment, no alignment), a ring of\n"
      "1 to 4 stages of 32 KiB with tiles dealt out in advance, and rings of 2 to 4 stages taking tiles in order.";
  info.timeline = write_timeline;
  info.timeline_variant = kTimelineVariant;
  info.timeline_bytes = kTimelineBytes;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
