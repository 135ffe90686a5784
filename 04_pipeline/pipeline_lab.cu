// 04_pipeline lab: stage counts, the guide's thread-scope pipeline, the grid, and what diverged
// commits and arrive-ons cost.
//
// The lesson fixes kStages = 4 and chapter 01's grid. This program asks "what if", with the
// lesson's kernels instantiated with other template arguments or launched on another grid:
//   cuda_pipeline_s3, cg_memcpy_async_s1: the lesson's kernels with 3 and 1 stages;
//   cuda_pipeline_misaligned: the lesson's kernel with its stages off their 128-byte line;
//   thread_pipeline: the guide's own spelling, a thread-scope cuda::pipeline (4 stages);
//   pipeline_primitives_resident: the lesson's primitives kernel on one block per SM, each
//     looping over batches k, k + grid, ... for the whole input, so that the stages are its
//     only bytes in flight;
//   warp entanglement (CUDA 11.8 guide): the primitives pipeline and the block-scope
//     cuda::pipeline with every lane issuing its copies in its own turn, committing (or calling
//     producer_commit) inside its turn, diverged, or after __syncwarp(), converged.
// Every row is verified bit for bit before it is timed, as in the lesson.
// --timeline=FILE runs the lesson's cuda_pipeline_kernel<3> once more with its events recorded
// (issue, land, compute, release of blocks 0-3, one block per SM so that a ring turns many
// times) and writes them as CSV; scripts/draw_timelines.py draws them.
// Hardware: compute capability 8.0+ (LDGSTS), as the lesson.
// Run: build/04_pipeline/pipeline_lab [--bench] [--variant=NAME] [--size=N] [--timeline=FILE]
// Guide: https://docs.nvidia.com/cuda/archive/11.8.0/cuda-c-programming-guide/index.html
//        #warp-entanglement-commit, #keep-commit-and-arrive-on-operations-converged
#include "pipeline.cu"  // the lesson: the batch, its kernels, launch_batch_grid, Problem, verify

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

constexpr int kWarpThreads = 32;

// ---- The guide's spelling: cuda::pipeline at thread scope -----------------------------------

/// [thread_pipeline]
__global__ void __launch_bounds__(kBlockThreads)
    thread_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                           std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  cg::thread_block block = cg::this_thread_block();
  // No shared state: commit and wait are this thread's cp.async.commit_group and wait_group.
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    pipe.producer_acquire();  // nothing at thread scope
    if (k < num_mine) {
      cuda::memcpy_async(block, smem_stages + stage * kBatchElems,
                         gmem_in + block_batch(k) * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    }
    pipe.producer_commit();  // always, empty or not: the wait below counts groups
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    cuda::pipeline_consumer_wait_prior<kStages - 1>(pipe);  // this thread's copies of batch k
    __syncthreads();  // the other threads' chunks of batch k landed too
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // nothing at thread scope: the __syncthreads below does its job
    __syncthreads();          // nobody reads the stage any more when fetch() overwrites it
    fetch(k + kStages, cursor.stage);
  }
}
/// [thread_pipeline]

// ---- Warp entanglement: the same pipelines with diverged commits and arrive-ons -----------

/// [entangled_commit]
// The primitives pipeline, but each lane issues its copies in its own turn (a fully diverged
// warp). kSyncwarp = false commits inside the turn: 32 commits per warp per batch. true
// reconverges with __syncwarp() first: one commit per warp per batch, as in the plain kernel.
template <int kStages, bool kSyncwarp>
__global__ void __launch_bounds__(kBlockThreads)
    entangled_commit_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                            std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  const std::size_t num_mine = block_batch_count(num_batches);
  const int lane_idx = threadIdx.x % kWarpThreads;
  auto fetch = [&](std::size_t k, int stage) {
    for (int turn = 0; turn < kWarpThreads; ++turn) {
      if (lane_idx != turn) continue;
      if (k < num_mine)
        copy_my_chunks(smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems);
      if constexpr (!kSyncwarp) __pipeline_commit();  // diverged: a batch of its own in the warp's
    }
    if constexpr (kSyncwarp) {
      __syncwarp();         // reconverge the warp...
      __pipeline_commit();  // ...so that its 32 threads' copies form one batch
    }
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // Per thread, exactly kStages - 1 younger groups exist either way. The warp-shared sequence
    // of the diverged kernel holds 32 times as many, so this wait also waits for younger batches.
    __pipeline_wait_prior(kStages - 1);
    __syncthreads();  // every thread's chunks landed
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    __syncthreads();  // the stage is no longer read
    fetch(k + kStages, cursor.stage);
  }
}
/// [entangled_commit]

/// [entangled_arrive]
// The block-scope cuda::pipeline, each lane copying in its own turn. producer_commit() is an
// arrive-on (cp.async.mbarrier.arrive) plus an arrive on the stage's full barrier: diverged, the
// warp updates that barrier 2 x 32 times per batch; reconverged, twice.
template <int kStages, bool kSyncwarp>
__global__ void __launch_bounds__(kBlockThreads)
    entangled_arrive_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                            std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);
  const std::size_t num_mine = block_batch_count(num_batches);
  const int lane_idx = threadIdx.x % kWarpThreads;
  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // per-stage barriers: nothing to commit in the drain
    pipe.producer_acquire();    // stage released by every thread
    for (int turn = 0; turn < kWarpThreads; ++turn) {
      if (lane_idx != turn) continue;
      for (int c = 0; c < kChunksPerThread; ++c) {  // per-thread copies, 16 bytes each
        const std::size_t elem =
            (threadIdx.x + c * kBlockThreads) * (kChunkBytes / sizeof(std::uint32_t));
        const std::uint32_t* gmem_chunk = gmem_in + block_batch(k) * kBatchElems + elem;
        cuda::memcpy_async(smem_stages + stage * kBatchElems + elem, gmem_chunk,
                           cuda::aligned_size_t<kChunkBytes>(kChunkBytes), pipe);
      }
      if constexpr (!kSyncwarp) pipe.producer_commit();  // diverged: barrier updates per lane
    }
    if constexpr (kSyncwarp) {
      __syncwarp();            // reconverge the warp...
      pipe.producer_commit();  // ...so that its arrive-on and arrive update the barrier once each
    }
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // Every lane's copies landed (bounded: names the barrier, stage and phase on a timeout).
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // this thread no longer reads the stage
    fetch(k + kStages, cursor.stage);
  }
}
/// [entangled_arrive]

// ---- The resident grid and the variant table ---------------------------------------------

/// [resident]
// The lesson's grid before the batch grid: kBlocksPerSm blocks on every SM, fewer if there are
// fewer batches or max_blocks says so (0: no limit). One block per SM, so that the stages are a
// block's only bytes in flight; each block loops over batches k, k + gridDim.x, ... to the end.
constexpr int kBlocksPerSm = 1;
unsigned resident_grid(std::size_t num_batches, unsigned max_blocks) {
  int device = 0, num_sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  std::size_t grid = static_cast<std::size_t>(num_sms) * kBlocksPerSm;
  if (max_blocks > 0 && max_blocks < grid) grid = max_blocks;
  if (num_batches < grid) grid = num_batches;
  return static_cast<unsigned>(grid);
}

template <auto kKernel, int kKernelStages>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                     std::size_t num_batches, unsigned max_blocks) {
  constexpr int kSmemBytes = kKernelStages * kBatchBytes;
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kSmemBytes));
  const unsigned grid = resident_grid(num_batches, max_blocks);
  kKernel<<<grid, kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

// The lesson's kernel with its stages 80 bytes past a 128-byte line: where the 72 bytes of its
// static pipeline_shared_state<4> put them before the lesson aligned its dynamic shared memory.
constexpr int kMisalignBytes = 80;

using ::Variant;  // the lesson's: name, summary, launcher, stages

const Variant kVariants[] = {
    {"thread_pipeline", "cuda::pipeline, thread scope + wait_prior, 4 stages (the guide's)",
     &launch_batch_grid<thread_pipeline_kernel, 4>, 4},
    {"cuda_pipeline_s3", "the lesson's block-scope cuda::pipeline with 3 stages",
     &launch_batch_grid<cuda_pipeline_kernel<3>, 3>, 3},
    {"cuda_pipeline_misaligned", "the lesson's cuda_pipeline, stages 80 bytes off a 128-byte line",
     &launch_batch_grid<cuda_pipeline_kernel<kStages, NoEvents, kMisalignBytes>, kStages,
                        kMisalignBytes>,
     kStages},
    {"cg_memcpy_async_s1", "the lesson's cg::memcpy_async + wait_prior with 1 stage",
     &launch_batch_grid<cg_memcpy_async_kernel<1>, 1>, 1},
    {"pipeline_primitives_resident", "the lesson's primitives, one block per SM over all batches",
     &launch_resident<pipeline_primitives_kernel, kStages>, kStages},
    {"diverged_commit_s4", "primitives, lanes copy and commit one by one (diverged), 4 stages",
     &launch_batch_grid<entangled_commit_kernel<4, false>, 4>, 4},
    {"syncwarp_commit_s4", "the same copies, __syncwarp() then one converged commit, 4 stages",
     &launch_batch_grid<entangled_commit_kernel<4, true>, 4>, 4},
    {"diverged_arrive_s4", "cuda::pipeline, lanes copy and producer_commit one by one, 4 stages",
     &launch_batch_grid<entangled_arrive_kernel<4, false>, 4>, 4},
    {"syncwarp_arrive_s4", "the same copies, __syncwarp() then one converged producer_commit",
     &launch_batch_grid<entangled_arrive_kernel<4, true>, 4>, 4},
    {"no_sync", "the ceiling: the same smoothing from global memory, no shared memory or barrier",
     &course::launch_direct_smoothing<kBatchElems, Smooth>, 1},  // no ring: edge counts of 1
};

// ---- Timeline: the block-scope cuda::pipeline with its events recorded (--timeline=FILE) ----

/// [timeline_events]
// Where the recorded run keeps its slots: set before the launch (cudaMemcpyToSymbol).
__device__ course::timeline::Recorder g_recorder;

// The lesson's four moments, recorded by thread 0 (every thread produces and consumes): issue
// after its producer_acquire, land after its wait, computed, released.
struct Thread0Events {
  __device__ static void record(course::timeline::Kind kind, course::timeline::Role role,
                                int stage, std::size_t k) {
    if (threadIdx.x == 0) g_recorder.record(kind, role, stage, static_cast<std::uint32_t>(k));
  }
  __device__ static void issued(int stage, std::size_t k) {
    record(course::timeline::Kind::issue, course::timeline::Role::producer, stage, k);
  }
  __device__ static void landed(int stage, std::size_t k) {
    record(course::timeline::Kind::land, course::timeline::Role::consumer, stage, k);
  }
  __device__ static void computed(int stage, std::size_t k) {
    record(course::timeline::Kind::consume, course::timeline::Role::consumer, stage, k);
  }
  __device__ static void released(int stage, std::size_t k) {
    record(course::timeline::Kind::release, course::timeline::Role::consumer, stage, k);
  }
};
/// [timeline_events]

constexpr int kTimelineStages = 3;
constexpr const char* kTimelineVariant = "cuda_pipeline_s3";
constexpr std::size_t kTimelineBytes = 32u << 20;  // 4096 batches: about 31 per block on an H100

struct TimelineRun {
  std::vector<course::timeline::Event> events;
  course::Comparison result;  // the recorded run's output against the reference
  unsigned grid = 0;
};

// One run of the 3-stage block-scope pipeline on `problem` with blocks 0 .. max_blocks - 1
// recording their first max_iterations batches; poisoned, launched, synchronised and compared.
// On the resident grid (one block per SM), not the lesson's: a block of four batches would show
// its prime and drain only, never the ring turning.
TimelineRun record_cuda_pipeline(Problem& problem, std::uint32_t max_blocks,
                                 std::uint32_t max_iterations) {
  course::timeline::Recording recording(max_blocks, max_iterations);
  const course::timeline::Recorder recorder = recording.recorder();
  COURSE_CHECK(cudaMemcpyToSymbol(g_recorder, &recorder, sizeof recorder));
  const unsigned grid = resident_grid(problem.num_batches, 0);
  problem.gmem_out.poison();
  launch_resident<cuda_pipeline_kernel<kTimelineStages, Thread0Events>, kTimelineStages>(
      problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::timeline::Recorder none{};
  COURSE_CHECK(cudaMemcpyToSymbol(g_recorder, &none, sizeof none));  // the slots are freed next
  return {recording.events(), problem.gmem_out.check(problem.expected, kBatchElems), grid};
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  Problem problem(opts.size_bytes / kBatchBytes);
  const TimelineRun run = record_cuda_pipeline(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("pipeline_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"block-scope cuda::pipeline of " + std::to_string(kTimelineStages) +
                      " stages x 8 KiB (LDGSTS), " + std::to_string(run.grid) + " blocks of " +
                      std::to_string(kBlockThreads) + " threads, one per SM",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + ", their first " +
                      std::to_string(kDefaultIterations) +
                      " batches, all events by thread 0 (every thread produces and consumes)",
                  "issue = thread 0's producer_acquire returned; release = its consumer_release"};
  write_checked(opts.timeline, log, run.result, header, run.events, "pipeline");
}

// ---- run(): verify every row, then time the correct ones ----------------------------------

void run(const course::Options& opts, course::Report& report) { run_table(kVariants, opts, report); }

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "pipeline_lab";
  info.title = "04 pipeline lab: stage counts, the guide's spelling, the grid, warp entanglement";
  info.explanation =
      "The lesson's block-scope pipeline with 3 stages and its cooperative-groups one with 1, the\n"
      "guide's thread-scope cuda::pipeline, the primitives on one block per SM looping over the\n"
      "batches, and the warp-entanglement experiment: lanes that copy one by one and commit (or\n"
      "producer_commit) diverged, against the same copies committed after __syncwarp().";
  info.host_model = [](std::ostream& out) {  // one stage: nothing ahead; three: the timeline's
    print_pipeline_schedule<1>(out, 3);
    print_pipeline_schedule<3>(out, 5);
  };
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
