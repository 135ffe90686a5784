// 05_warp_specialized lab: how many buffers the ring needs, the grid, and who releases.
//
// The lesson's ring has two buffers, the guide's double buffering. This program runs the lesson's
// pipeline_kernel and mbarrier_kernel with 1 and 4 buffers (pipeline_1stage .. mbarrier_4stage):
// one buffer leaves no overlap inside a block, four let the producer run four batches ahead but
// take 32 KiB of shared memory, and with it resident blocks per SM. mbarrier_2stage_resident is
// the lesson's mbarrier kernel on a resident grid (as many blocks as fit at once, each looping over
// batches k, k + grid, ...); mbarrier_2stage_all_arrive is the lesson's ring with every consumer
// thread arriving on empty_bar instead of one lane per warp after __syncwarp (what racecheck makes
// of each: the reference page). Every row is verified bit for bit before it is timed.
// --timeline=FILE runs the resident row once more with per-stage events recorded (the producer's
// issues, the consumers' land, consume, release in blocks 0-3) and writes them as CSV;
// scripts/draw_timelines.py draws them.
// Hardware: compute capability 8.0+ (LDGSTS and mbarrier), as the lesson.
// Run: build/05_warp_specialized/warp_specialized_lab [--bench] [--variant=NAME] [--timeline=FILE]
#include "warp_specialized.cu"  // the lesson: the batch, the kernels, launch_batch_grid, Problem

#include <stdexcept>
#include <string>

#include "course/direct_smoothing.cuh"  // no_sync: the ceiling, no shared memory or barrier
#include "course/timeline.hpp"  // --timeline: the recorder and the CSV (measurement only)

namespace lab {

// The ceiling (row no_sync): the lesson's smoothing with no shared memory, no copy and no barrier.
struct Smooth {
  __device__ std::uint32_t operator()(std::uint32_t l, std::uint32_t c, std::uint32_t r) const {
    return smooth(l, c, r);
  }
};

// ---- Every consumer thread arrives: the release without __syncwarp ----------------------------

/// [all_arrive]
// mbarrier_kernel<2> with one change: empty_bar expects kConsumerThreads arrivals and every
// consumer thread releases the buffer for itself after its own reads, so no lane speaks for its
// warp and no __syncwarp stands between the reads and the release. The row that tells whether
// racecheck's report on the raw ring (one arrival per warp) is about that hand-off: compare the
// two under the tool. The steps are the lesson's.
__device__ void consume_batches_all_arrive(const std::uint32_t* smem_batches,
                                           std::uint32_t* gmem_out, std::uint64_t* full_bar,
                                           std::uint64_t* empty_bar, std::size_t num_batches,
                                           int consumer_idx) {
  constexpr int kRingStages = 2;
  course::StageCursor<kRingStages> cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, cursor.advance()) {
    wait_until_full(full_bar, cursor);
    consume_batch(smem_batches + cursor.stage * kBatchElems, gmem_out + batch * kBatchElems,
                  consumer_idx);
    release_buffer(&empty_bar[cursor.stage]);  // this thread's reads are done
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    all_arrive_kernel(const std::uint32_t* __restrict__ gmem_in,
                      std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  constexpr int kRingStages = 2;
  __shared__ alignas(16) std::uint32_t smem_batches[kRingStages * kBatchElems];
  __shared__ alignas(8) std::uint64_t full_bar[kRingStages];
  __shared__ alignas(8) std::uint64_t empty_bar[kRingStages];
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kRingStages; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kFullArrivals});
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kConsumerThreads});  // threads
    }
  }
  __syncthreads();  // every thread sees initialised barriers before anyone arrives or waits

  if (threadIdx.x / kWarpThreads == 0) {
    ::produce_batches<kRingStages>(gmem_in, smem_batches, full_bar, empty_bar, num_batches,
                                   threadIdx.x);
  } else {
    consume_batches_all_arrive(smem_batches, gmem_out, full_bar, empty_bar, num_batches,
                               threadIdx.x - kProducerThreads);
  }
}
/// [all_arrive]

// ---- Timeline: the raw-mbarrier ring with its events recorded (--timeline=FILE) -----------------

/// [recorded_mbarrier]
// The lesson's produce_batches, consume_batches and mbarrier_kernel, calling the lesson's steps
// in the lesson's order, with the four recording points of course/timeline.hpp between them
// (blocks 0-3, their first 16 batches): lane 0 of the producer warp records each issue, consumer
// thread 0 (lane 0 of warp 1) the land, consume and release. `iteration` counts the block's
// batches: batch number `iteration` sits in buffer iteration % kStages.
template <int kStages>
__device__ void recorded_produce_batches(const std::uint32_t* gmem_in,
                                         std::uint32_t* smem_batches, std::uint64_t* full_bar,
                                         std::uint64_t* empty_bar, std::size_t num_batches,
                                         int lane_idx, course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  course::StageCursor<kStages> cursor;
  std::uint32_t iteration = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches;
       batch += gridDim.x, cursor.advance(), ++iteration) {
    wait_until_free(empty_bar, cursor);
    if (lane_idx == 0) recorder.record(Kind::issue, Role::producer, cursor.stage, iteration);
    issue_copies(gmem_in, smem_batches, batch, cursor.stage, lane_idx);
    arrive_when_copies_land(&full_bar[cursor.stage]);
  }
}

template <int kStages>
__device__ void recorded_consume_batches(const std::uint32_t* smem_batches,
                                         std::uint32_t* gmem_out, std::uint64_t* full_bar,
                                         std::uint64_t* empty_bar, std::size_t num_batches,
                                         int consumer_idx, course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  const bool is_recorder = consumer_idx == 0;
  course::StageCursor<kStages> cursor;
  std::uint32_t iteration = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches;
       batch += gridDim.x, cursor.advance(), ++iteration) {
    wait_until_full(full_bar, cursor);
    if (is_recorder) recorder.record(Kind::land, Role::consumer, cursor.stage, iteration);
    consume_batch(smem_batches + cursor.stage * kBatchElems, gmem_out + batch * kBatchElems,
                  consumer_idx);
    if (is_recorder) recorder.record(Kind::consume, Role::consumer, cursor.stage, iteration);
    __syncwarp();  // the lesson's release: every lane of the warp is done, one lane arrives
    if (consumer_idx % kWarpThreads == 0) {
      if (is_recorder) recorder.record(Kind::release, Role::consumer, cursor.stage, iteration);
      release_buffer(&empty_bar[cursor.stage]);
    }
  }
}

template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    recorded_mbarrier_kernel(const std::uint32_t* __restrict__ gmem_in,
                             std::uint32_t* __restrict__ gmem_out, std::size_t num_batches,
                             course::timeline::Recorder recorder) {
  __shared__ alignas(16) std::uint32_t smem_batches[kStages * kBatchElems];  // [stage][elem]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kFullArrivals});
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kEmptyArrivals});
    }
  }
  __syncthreads();  // as the lesson: barriers initialised before anyone arrives or waits
  if (threadIdx.x / kWarpThreads == 0) {
    recorded_produce_batches<kStages>(gmem_in, smem_batches, full_bar, empty_bar, num_batches,
                                      threadIdx.x, recorder);
  } else {
    recorded_consume_batches<kStages>(smem_batches, gmem_out, full_bar, empty_bar, num_batches,
                                      threadIdx.x - kProducerThreads, recorder);
  }
}
/// [recorded_mbarrier]

constexpr int kTimelineStages = 2;
constexpr const char* kTimelineVariant = "mbarrier_2stage_resident";  // the grid it records on
constexpr std::size_t kTimelineBytes = 256u << 20;  // 32768 batches: about 20 per block on an H100

struct TimelineRun {
  std::vector<course::timeline::Event> events;
  course::Comparison result;  // the recorded run's output against the reference
  unsigned grid = 0;
};

// One run of the 2-buffer raw-mbarrier ring on `problem` (its max_blocks too) with blocks
// 0 .. max_recorded - 1 recording their first max_iterations batches; poisoned, launched,
// synchronised and compared like every row. On the resident grid, not the lesson's: a block of
// four batches would show its ring turning twice, not its steady state.
TimelineRun record_mbarrier_ring(Problem& problem, std::uint32_t max_recorded, std::uint32_t max_iterations) {
  constexpr auto kernel = recorded_mbarrier_kernel<kTimelineStages>;
  course::timeline::Recording recording(max_recorded, max_iterations);
  std::size_t grid = course::resident_blocks((const void*)kernel, kBlockThreads);  // as launch_resident
  if (problem.max_blocks != 0 && problem.max_blocks < grid) grid = problem.max_blocks;
  if (problem.num_batches < grid) grid = problem.num_batches;
  problem.gmem_out.poison();
  kernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(),
                                                         problem.num_batches, recording.recorder());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  return {recording.events(), problem.gmem_out.check(problem.expected, kBatchElems), static_cast<unsigned>(grid)};
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  Problem problem(opts.size_bytes / kBatchBytes);
  const TimelineRun run = record_mbarrier_ring(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("warp_specialized_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"ring of " + std::to_string(kTimelineStages) +
                      " buffers x 8 KiB, raw full/empty mbarriers, 1 producer warp (LDGSTS) + 4 consumer warps; " +
                      std::to_string(run.grid) + " blocks of " + std::to_string(kBlockThreads) + " threads",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + ", their first " +
                      std::to_string(kDefaultIterations) + " batches; issue by producer lane 0 after its empty wait, " +
                      "land, consume, release by consumer thread 0",
                  "release = consumer warp 1's arrival on empty_bar; the buffer is free once all 4 consumer warps "
                  "arrived"};
  write_checked(opts.timeline, log, run.result, header, run.events, "ring");
}

// ---- The variant table: the lesson's Variant, launched by the lesson's launch_batch_grid ------

/// [resident]
// The lesson's launch before the batch grid: as many blocks as fit on the GPU at once, never
// more than batches or max_blocks (if not 0); each block loops over batches k, k + gridDim.x, ...
template <auto kKernel>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                     unsigned max_blocks) {
  // Asked once per kernel (--bench would time the queries): course/in_flight.hpp.
  static const std::size_t resident = course::resident_blocks((const void*)kKernel, kBlockThreads);
  std::size_t grid = resident;
  if (max_blocks != 0 && max_blocks < grid) grid = max_blocks;
  if (num_batches < grid) grid = num_batches;
  kKernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

const Variant kVariants[] = {
    {"pipeline_1stage", "partitioned cuda::pipeline, 1 buffer", &launch_batch_grid<pipeline_kernel<1>>},
    {"pipeline_4stage", "partitioned cuda::pipeline, 4 buffers", &launch_batch_grid<pipeline_kernel<4>>},
    {"mbarrier_1stage", "raw full_bar/empty_bar, 1 buffer", &launch_batch_grid<mbarrier_kernel<1>>},
    {"mbarrier_4stage", "raw full_bar/empty_bar, 4 buffers", &launch_batch_grid<mbarrier_kernel<4>>},
    {"mbarrier_2stage_resident", "the lesson's mbarrier on a resident grid: blocks loop over batches",
     &launch_resident<mbarrier_kernel<2>>},
    {"mbarrier_2stage_all_arrive", "the lesson's mbarrier, every consumer thread arrives on empty_bar",
     &launch_batch_grid<all_arrive_kernel>},
    {"no_sync", "the ceiling: the same smoothing from global memory, no shared memory or barrier",
     &course::launch_direct_smoothing<kBatchElems, Smooth>},
};

// ---- run(): verify every row, then time the correct ones ------------------------------------

void run(const course::Options& opts, course::Report& report) { ::run_table(kVariants, opts, report); }

// What runs without a GPU: the block, then the ring's walk and order for each number of buffers.
void print_lab_model(std::ostream& out) {
  print_block_model(out);
  print_ring_walk<1>(out);
  print_ring_walk<2>(out);
  print_ring_walk<4>(out);
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "warp_specialized_lab";
  info.title = "05 warp_specialized lab: 1 and 4 buffers, the resident grid, every consumer arriving";
  info.explanation =
      "The lesson's partitioned cuda::pipeline and raw full/empty mbarriers with a ring of 1 and 4\n"
      "buffers of 8 KiB per block (the lesson has 2); the raw ring of 2 on a resident grid whose blocks\n"
      "loop over the batches, and with every consumer thread releasing the buffer itself.";
  info.host_model = print_lab_model;
  info.timeline = write_timeline;
  info.timeline_variant = kTimelineVariant;
  info.timeline_bytes = kTimelineBytes;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
