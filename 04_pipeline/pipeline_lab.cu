// 04_pipeline lab: how many stages each spelling needs, and what diverged commits and arrive-ons cost.
//
// The lesson fixes kStages = 4. This program asks "what if":
//   stage sweeps: the lesson's four kernels with the stage count as a template parameter, each at
//     1, 2, 3 and 4 stages (<flavour>_s1 .. _s4; _s4 is the lesson's kernel), so a block keeps
//     from one batch (8 KiB: nothing overlaps its compute) to four (32 KiB) in flight;
//   warp entanglement (CUDA 11.8 guide): the primitives pipeline and the block-scope
//     cuda::pipeline with every lane issuing its copies in its own turn, committing (or calling
//     producer_commit) inside its turn, diverged, or after __syncwarp(), converged;
//   pipeline_primitives_resident: the lesson's pipeline_primitives on the grid the lesson had
//     before it took chapter 01's batch grid: one block per SM, each looping over batches k,
//     k + grid, ... for the whole input, so that the stages are its only bytes in flight.
// Every other row runs on the lesson's grid (four batches per block).
// Every row is verified bit for bit before it is timed, as in the lesson.
// --timeline=FILE runs cuda_pipeline_s3 once more, on one block per SM so that a block's ring
// turns many times, with per-stage events recorded (issue, land, consume, release of blocks 0-3)
// and writes them as CSV; scripts/draw_timelines.py draws them.
// Hardware: compute capability 8.0+ (LDGSTS), as the lesson.
// Run: build/04_pipeline/pipeline_lab [--bench] [--variant=NAME] [--size=N] [--timeline=FILE]
// Guide: https://docs.nvidia.com/cuda/archive/11.8.0/cuda-c-programming-guide/index.html#warp-entanglement-commit
//        https://docs.nvidia.com/cuda/archive/11.8.0/cuda-c-programming-guide/index.html#keep-commit-and-arrive-on-operations-converged
#include "pipeline.cu"  // the lesson: the batch, compute_batch, the four kernels, launch_batch_grid, Problem, verify

#include <stdexcept>
#include <string>

#include "course/timeline.hpp"  // --timeline: the recorder and the CSV (measurement only)

namespace lab {

constexpr int kWarpThreads = 32;

// ---- The lesson's kernels with the stage count as a template parameter --------------------
// Line for line the lesson's, with kStages a template parameter instead of the lesson's constant.

template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    cuda_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];  // [kStages][kBatchElems] uint32
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;  // full + empty per stage
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);  // inits + block sync
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // each stage has its own barrier: nothing to commit in the drain
    pipe.producer_acquire();    // stage free: every thread released what it read from it last round
    cuda::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                       cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    pipe.producer_commit();  // arrive-on + arrive on the stage's full barrier
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);  // prime: up to kStages batches in flight
  course::StageCursor<kStages> cursor;            // batch k is in stage k % kStages, round k / kStages
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // every thread's copies landed
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();           // arrive on the stage's empty barrier: this thread is done reading it
    fetch(k + kStages, cursor.stage);  // steady state: refill the stage; drain: nothing
  }
}

template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    thread_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();  // commit/wait groups of this thread
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    pipe.producer_acquire();  // nothing at thread scope
    if (k < num_mine) {
      cuda::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    }
    pipe.producer_commit();  // ALWAYS, empty or not: the wait below counts groups
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    cuda::pipeline_consumer_wait_prior<kStages - 1>(pipe);  // this thread's copies of batch k landed (cannot hang)
    __syncthreads();                                        // the other threads' chunks of batch k landed too
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // nothing at thread scope: the __syncthreads below does its job
    __syncthreads();          // nobody reads the stage any more when fetch() overwrites it
    fetch(k + kStages, cursor.stage);
  }
}

template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    cg_memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  cg::thread_block block = cg::this_thread_block();
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {  // every call commits one group per thread: no empty ones possible
    cg::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                     cuda::aligned_size_t<kChunkBytes>(kBatchBytes));
  };

  for (int s = 0; s < kStages && std::size_t(s) < num_mine; ++s) fetch(s, s);  // never past the end
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // wait_prior = cp.async.wait_group (cannot hang) + block.sync(), counted in the drain.
    cg_wait_prior<kStages - 1>(block, pending_batches(k, num_mine, kStages));
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    block.sync();  // the stage is no longer read
    if (k + kStages < num_mine) fetch(k + kStages, cursor.stage);
  }
}

template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    pipeline_primitives_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    if (k < num_mine) copy_my_chunks(smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems);
    __pipeline_commit();  // always: keeps exactly kStages - 1 groups younger than the one waited for
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    __pipeline_wait_prior(kStages - 1);  // this thread's copies of batch k landed (cannot hang)
    __syncthreads();                     // and every other thread's
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    __syncthreads();  // the stage is no longer read
    fetch(k + kStages, cursor.stage);
  }
}

// ---- Warp entanglement: the same pipelines with diverged commits and arrive-ons -----------

/// [entangled_commit]
// The primitives pipeline, but each lane issues its copies in its own turn (a fully diverged
// warp). kSyncwarp = false commits inside the turn: 32 commits per warp per batch. true
// reconverges with __syncwarp() first: one commit per warp per batch, as in the plain kernel.
template <int kStages, bool kSyncwarp>
__global__ void __launch_bounds__(kBlockThreads)
    entangled_commit_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  const std::size_t num_mine = block_batch_count(num_batches);
  const int lane_idx = threadIdx.x % kWarpThreads;
  auto fetch = [&](std::size_t k, int stage) {
    for (int turn = 0; turn < kWarpThreads; ++turn) {
      if (lane_idx != turn) continue;
      if (k < num_mine) copy_my_chunks(smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems);
      if constexpr (!kSyncwarp) __pipeline_commit();  // diverged: a batch of its own in the warp's sequence
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
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
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
    entangled_arrive_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);  // inits + block sync
  const std::size_t num_mine = block_batch_count(num_batches);
  const int lane_idx = threadIdx.x % kWarpThreads;
  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // per-stage barriers: nothing to commit in the drain
    pipe.producer_acquire();    // stage released by every thread
    for (int turn = 0; turn < kWarpThreads; ++turn) {
      if (lane_idx != turn) continue;
      for (int c = 0; c < kChunksPerThread; ++c) {  // per-thread copies, 16 bytes each
        const std::size_t elem = (threadIdx.x + c * kBlockThreads) * (kChunkBytes / sizeof(std::uint32_t));
        const std::uint32_t* gmem_chunk = gmem_in + block_batch(k) * kBatchElems + elem;
        cuda::memcpy_async(smem_stages + stage * kBatchElems + elem, gmem_chunk,
                           cuda::aligned_size_t<kChunkBytes>(kChunkBytes), pipe);
      }
      if constexpr (!kSyncwarp) pipe.producer_commit();  // diverged: separate barrier updates per lane
    }
    if constexpr (kSyncwarp) {
      __syncwarp();            // reconverge the warp...
      pipe.producer_commit();  // ...so that its arrive-on and arrive update the barrier once each
    }
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // every lane's copies landed
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // this thread no longer reads the stage
    fetch(k + kStages, cursor.stage);
  }
}
/// [entangled_arrive]

// ---- Launcher and the variant table ---------------------------------------------------------

// The lesson's launch_batch_grid with kStages stages of dynamic shared memory instead of the lesson's 4.
template <auto kKernel, int kStages>
void launch_stages(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                   unsigned max_blocks) {
  constexpr int kSmemBytes = kStages * kBatchBytes;
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  kKernel<<<batch_grid(num_batches, kBatchesPerBlock, max_blocks), kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out,
                                                                                               num_batches);
  COURSE_CHECK_LAUNCH();
}

/// [resident]
// The lesson's grid before the batch grid: kBlocksPerSm blocks on every SM, fewer if there are
// fewer batches or max_blocks says so (0: no limit). One block per SM, so that the stages are a
// block's only bytes in flight; each block loops over batches k, k + gridDim.x, ... for the whole run.
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

template <auto kKernel, int kStages>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                     unsigned max_blocks) {
  constexpr int kSmemBytes = kStages * kBatchBytes;
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  kKernel<<<resident_grid(num_batches, max_blocks), kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  int stages;
};

#define STAGE_SWEEP(name, kernel, summary)                                     \
  {name "_s1", summary ", 1 stage", &launch_stages<kernel<1>, 1>, 1},         \
      {name "_s2", summary ", 2 stages", &launch_stages<kernel<2>, 2>, 2},    \
      {name "_s3", summary ", 3 stages", &launch_stages<kernel<3>, 3>, 3},    \
      {name "_s4", summary ", 4 stages", &launch_stages<kernel<4>, 4>, 4}
const Variant kVariants[] = {
    STAGE_SWEEP("cuda_pipeline", cuda_pipeline_kernel, "cuda::pipeline, block scope"),
    STAGE_SWEEP("thread_pipeline", thread_pipeline_kernel, "cuda::pipeline, thread scope + wait_prior"),
    STAGE_SWEEP("cg_memcpy_async", cg_memcpy_async_kernel, "cg::memcpy_async + cg::wait_prior"),
    STAGE_SWEEP("pipeline_primitives", pipeline_primitives_kernel, "__pipeline_* primitives"),
    {"diverged_commit_s1", "primitives, lanes copy and commit one by one (diverged), 1 stage",
     &launch_stages<entangled_commit_kernel<1, false>, 1>, 1},
    {"syncwarp_commit_s1", "the same copies, __syncwarp() then one converged commit, 1 stage",
     &launch_stages<entangled_commit_kernel<1, true>, 1>, 1},
    {"diverged_commit_s4", "primitives, lanes copy and commit one by one (diverged), 4 stages",
     &launch_stages<entangled_commit_kernel<4, false>, 4>, 4},
    {"syncwarp_commit_s4", "the same copies, __syncwarp() then one converged commit, 4 stages",
     &launch_stages<entangled_commit_kernel<4, true>, 4>, 4},
    {"diverged_arrive_s4", "cuda::pipeline, lanes copy and producer_commit one by one, 4 stages",
     &launch_stages<entangled_arrive_kernel<4, false>, 4>, 4},
    {"syncwarp_arrive_s4", "the same copies, __syncwarp() then one converged producer_commit",
     &launch_stages<entangled_arrive_kernel<4, true>, 4>, 4},
    {"pipeline_primitives_resident", "__pipeline_* primitives, 4 stages, one block per SM looping over the batches",
     &launch_resident<pipeline_primitives_kernel<4>, 4>, 4},
};
#undef STAGE_SWEEP

// ---- Timeline: the block-scope cuda::pipeline with its events recorded (--timeline=FILE) ----

/// [recorded_cuda_pipeline]
// cuda_pipeline_kernel<kStages> line for line, plus the four recording points of
// course/timeline.hpp (blocks 0-3, their first 16 batches). Every thread produces and consumes;
// thread 0 records both roles: issue after its producer_acquire, then land, consume, release.
template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    recorded_cuda_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                                  course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  extern __shared__ uint4 smem_dynamic[];  // [kStages][kBatchElems] uint32
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;  // full + empty per stage
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);  // inits + block sync
  const std::size_t num_mine = block_batch_count(num_batches);
  const bool is_recorder = threadIdx.x == 0;
  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // each stage has its own barrier: nothing to commit in the drain
    pipe.producer_acquire();    // stage free: every thread released what it read from it last round
    if (is_recorder) recorder.record(Kind::issue, Role::producer, stage, static_cast<std::uint32_t>(k));
    cuda::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                       cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    pipe.producer_commit();  // arrive-on + arrive on the stage's full barrier
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);  // prime: up to kStages batches in flight
  course::StageCursor<kStages> cursor;            // batch k is in stage k % kStages, round k / kStages
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    const auto iteration = static_cast<std::uint32_t>(k);
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // every thread's copies landed
    if (is_recorder) recorder.record(Kind::land, Role::consumer, cursor.stage, iteration);
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    if (is_recorder) recorder.record(Kind::consume, Role::consumer, cursor.stage, iteration);
    pipe.consumer_release();  // arrive on the stage's empty barrier: this thread is done reading it
    if (is_recorder) recorder.record(Kind::release, Role::consumer, cursor.stage, iteration);
    fetch(k + kStages, cursor.stage);  // steady state: refill the stage; drain: nothing
  }
}
/// [recorded_cuda_pipeline]

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
TimelineRun record_cuda_pipeline(Problem& problem, std::uint32_t max_blocks, std::uint32_t max_iterations) {
  constexpr auto kernel = recorded_cuda_pipeline_kernel<kTimelineStages>;
  constexpr int kSmemBytes = kTimelineStages * kBatchBytes;
  course::timeline::Recording recording(max_blocks, max_iterations);
  const unsigned grid = resident_grid(problem.num_batches, 0);
  problem.gmem_out.poison();
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  kernel<<<grid, kBlockThreads, kSmemBytes>>>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches,
                                             recording.recorder());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  return {recording.events(), problem.gmem_out.check(problem.expected, kBatchElems), grid};
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  Problem problem(opts.size_bytes / kBatchBytes);
  const TimelineRun run = record_cuda_pipeline(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("pipeline_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"block-scope cuda::pipeline of " + std::to_string(kTimelineStages) + " stages x 8 KiB (LDGSTS), " +
                      std::to_string(run.grid) + " blocks of " + std::to_string(kBlockThreads) + " threads, one per SM",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + ", their first " +
                      std::to_string(kDefaultIterations) +
                      " batches, all events by thread 0 (every thread produces and consumes)",
                  "issue = thread 0's producer_acquire returned; release = its consumer_release"};
  write_checked(opts.timeline, log, run.result, header, run.events, "pipeline");
}

// ---- run(): verify every row, then time the correct ones ----------------------------------

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches, 0); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "pipeline_lab";
  info.title = "04 pipeline lab: stage counts and warp entanglement";
  info.explanation =
      "The lesson's four pipelines at 1, 2, 3 and 4 stages of 8 KiB on the lesson's grid (four batches per\n"
      "block), the warp-entanglement experiment: lanes that copy one by one and commit (or producer_commit)\n"
      "diverged, against the same copies committed after __syncwarp(); and the primitives pipeline on one\n"
      "block per SM that loops over the batches, the lesson's grid before.";
  info.host_model = [](std::ostream& out) {  // the shallow ends of the sweep: nothing, or one batch, ahead
    print_pipeline_schedule<1>(out, 3);
    print_pipeline_schedule<2>(out, 4);
  };
  info.timeline = write_timeline;
  info.timeline_variant = kTimelineVariant;
  info.timeline_bytes = kTimelineBytes;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
