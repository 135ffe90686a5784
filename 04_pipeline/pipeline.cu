// 04_pipeline: multi-stage prefetching, the copy of batch k + S overlapping the compute of batch k.
//
// What you learn: how a block keeps S batches in flight (prime, steady state, drain) with a
// block-scope cuda::pipeline (acquire / commit / wait / release on a full and an empty barrier
// per stage): two stages and plain waits (minimal_pipeline), then four stages, a cursor and the
// course's bounded wait (cuda_pipeline); then the ring counted in commit groups
// (cooperative_groups wait_prior, __pipeline_* primitives), where a wrong count is a race.
// What changed from 03: two buffers with a barrier each become a ring of stages that is primed,
// refilled and drained (8 KiB batches, dynamic shared memory).
// Hardware: compute capability 8.0+ (LDGSTS). cuda::pipeline stays LDGSTS on 9.0 as well.
// Run: build/04_pipeline/pipeline [--bench] [--variant=NAME]; stage counts, the guide's
//      thread-scope pipeline and warp entanglement: build/04_pipeline/pipeline_lab.
// Guide: 4.11.1.2 Prefetching data and 4.10 Pipelines; the API pages (cuda::pipeline,
//      make_pipeline, cooperative_groups::wait_prior, the __pipeline_* primitives, PTX cp.async
//      commit_group / wait_group / mbarrier.arrive): REFERENCE.md, "What the guide says".
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/pipeline>
#include <cuda_pipeline.h>

#include <cstdint>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "pipeline_model.hpp"  // pending_batches(), the schedule the program prints, the grid rule

namespace cg = cooperative_groups;

// make_pipeline() initialises a __shared__ pipeline_shared_state: silence the warning about its
// constructor, which does not run (shared memory is not initialised at launch).
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kStages = 4;  // the lesson's batches in flight per block (the lab tries 1 and 3)
constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 2048;  // one batch fills one pipeline stage
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 8 KiB
constexpr int kChunkBytes = 16;  // the widest LDGSTS
constexpr int kChunksPerThread = kBatchBytes / kChunkBytes / kBlockThreads;  // 2
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index below wraps with a mask");
static_assert(kBatchBytes % (kChunkBytes * kBlockThreads) == 0, "whole 16-byte chunks per thread");

// ---- The problem: chapter 01's ring smoothing, on 8 KiB batches --------------------------
__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}

std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      out[base + i] = smooth(in[base + ((i - 1) & (kBatchElems - 1))], in[base + i],
                             in[base + ((i + 1) & (kBatchElems - 1))]);
    }
  }
  return out;
}

/// [compute]
// Each thread turns 4 staged elements into 4 outputs and stores them as one uint4:
// 16-byte coalesced stores keep the write half of the traffic as wide as the copies.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  const uint4* smem_vecs = reinterpret_cast<const uint4*>(smem_batch);
  uint4* gmem_vecs = reinterpret_cast<uint4*>(gmem_out_batch);
  for (int v = threadIdx.x; v < kBatchElems / 4; v += blockDim.x) {
    const uint4 c = smem_vecs[v];
    const std::uint32_t left = smem_batch[(4 * v - 1) & (kBatchElems - 1)];
    const std::uint32_t right = smem_batch[(4 * v + 4) & (kBatchElems - 1)];
    gmem_vecs[v] = make_uint4(smooth(left, c.x, c.y), smooth(c.x, c.y, c.z),
                              smooth(c.y, c.z, c.w), smooth(c.z, c.w, right));
  }
}
/// [compute]

// Block b handles batches b, b + gridDim.x, ... (never more blocks than batches).
__device__ std::size_t block_batch_count(std::size_t num_batches) {
  return (num_batches - blockIdx.x + gridDim.x - 1) / gridDim.x;
}
__device__ std::size_t block_batch(std::size_t k) { return blockIdx.x + k * gridDim.x; }

// ---- The minimal kernel: two stages, block scope, the standard API only ---------------------
/// [minimal]
constexpr int kMinimalStages = 2;
__global__ void __launch_bounds__(kBlockThreads)
    minimal_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                            std::size_t num_batches) {
  // TUTORIAL: stages on a 128-byte line. After the static pipe_state below, 16-byte alignment puts
  // them 48 bytes past one: each 32-byte input sector is read twice (the lab's *_misaligned).
  extern __shared__ __align__(128) uint4 smem_dynamic[];  // [kMinimalStages][kBatchElems] uint32
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  // A full and an empty barrier per stage (block scope: shared by the block's threads).
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kMinimalStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  // Every thread produces and consumes: make_pipeline sets each barrier to block.size()
  // arrivals, and syncs the block so that nobody uses a barrier before it is initialised.
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k) {  // batch k goes to stage k % 2
    pipe.producer_acquire();  // the stage is free: every thread released its previous batch
    cuda::memcpy_async(block, smem_stages + (k % kMinimalStages) * kBatchElems,
                       gmem_in + block_batch(k) * kBatchElems,
                       cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    pipe.producer_commit();  // the stage's full barrier completes when this thread's copies land
  };

  for (std::size_t k = 0; k < kMinimalStages && k < num_mine; ++k) fetch(k);  // prime
  for (std::size_t k = 0; k < num_mine; ++k) {
    pipe.consumer_wait();  // batch k landed: every thread committed, every copy arrived
    compute_batch(smem_stages + (k % kMinimalStages) * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // this thread no longer reads the stage
    if (k + kMinimalStages < num_mine) fetch(k + kMinimalStages);  // refill it
  }
}
/// [minimal]

// ---- The lesson's kernel: four stages, a cursor, a bounded wait -----------------------------
// The lab's --timeline records four moments of the kernel below; the lesson, none.
struct NoEvents {  // empty calls: the kernel compiles to the same instructions without them
  __device__ static void issued(int, std::size_t) {}
  __device__ static void landed(int, std::size_t) {}
  __device__ static void computed(int, std::size_t) {}
  __device__ static void released(int, std::size_t) {}
};

/// [cuda_pipeline]
template <int kStages, class Events = NoEvents, int kStageOffset = 0>  // offset: a lab row's
__global__ void __launch_bounds__(kBlockThreads)
    cuda_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                         std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];  // [kStages][kBatchElems] uint32
  auto* smem_base = reinterpret_cast<unsigned char*>(smem_dynamic);
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_base + kStageOffset);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  // Every thread produces and consumes; make_pipeline initialises and syncs the block.
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // each stage has its own barrier: nothing to commit in the drain
    pipe.producer_acquire();    // stage free: every thread released it last round
    Events::issued(stage, k);
    cuda::memcpy_async(block, smem_stages + stage * kBatchElems,
                       gmem_in + block_batch(k) * kBatchElems,
                       cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    pipe.producer_commit();  // arrive-on + arrive on the stage's full barrier
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);  // prime: up to kStages batches in flight
  course::StageCursor<kStages> cursor;            // batch k: stage k % kStages, round k / kStages
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // The full barrier of the stage, by the parity of its round: every thread committed and its
    // copies landed. Bounded: on a timeout it names the barrier, stage and phase, and traps.
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});
    Events::landed(cursor.stage, k);
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    Events::computed(cursor.stage, k);
    pipe.consumer_release();  // arrive on the stage's empty barrier: done reading it
    Events::released(cursor.stage, k);
    fetch(k + kStages, cursor.stage);  // steady state: refill the stage; drain: nothing
  }
}
/// [cuda_pipeline]

// ---- Counting groups instead of barriers: cooperative_groups::memcpy_async + wait_prior -------
// cg::wait_prior<N> takes N as a template argument; the drain needs it at run time.
template <int kMax>
__device__ void cg_wait_prior(const cg::thread_block& block, int pending) {
  if constexpr (kMax > 0) {
    if (pending != kMax) return cg_wait_prior<kMax - 1>(block, pending);
  }
  cg::wait_prior<kMax>(block);  // pending == kMax
}
/// [cg_pipeline]
template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    cg_memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                           std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  cg::thread_block block = cg::this_thread_block();
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {  // commits one group per thread, never an empty one
    cg::memcpy_async(block, smem_stages + stage * kBatchElems,
                     gmem_in + block_batch(k) * kBatchElems,
                     cuda::aligned_size_t<kChunkBytes>(kBatchBytes));
  };

  for (int s = 0; s < kStages && std::size_t(s) < num_mine; ++s) fetch(s, s);  // not past the end
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // Fewer younger groups exist in the drain and when the block has fewer batches than stages.
    // wait_prior = cp.async.wait_group (this thread's own copies: cannot hang) + block.sync().
    cg_wait_prior<kStages - 1>(block, pending_batches(k, num_mine, kStages));
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    block.sync();  // the stage is no longer read
    if (k + kStages < num_mine) fetch(k + kStages, cursor.stage);
  }
}
/// [cg_pipeline]

// ---- The same count with the __pipeline_* primitives, and empty commits ---------------------
// This thread's chunks of a batch: consecutive threads copy consecutive 16-byte chunks.
__device__ void copy_my_chunks(std::uint32_t* smem_stage, const std::uint32_t* gmem_batch) {
  for (int c = 0; c < kChunksPerThread; ++c) {
    const int elem = (threadIdx.x + c * kBlockThreads) * (kChunkBytes / sizeof(std::uint32_t));
    __pipeline_memcpy_async(smem_stage + elem, gmem_batch + elem, kChunkBytes);
  }
}

/// [primitives]
__global__ void __launch_bounds__(kBlockThreads)
    pipeline_primitives_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                               std::size_t num_batches) {
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    if (k < num_mine)
      copy_my_chunks(smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems);
    // TUTORIAL: commit ALWAYS, empty or not. wait_prior(kStages - 1) below leaves this thread's
    // kStages - 1 newest groups in flight and waits for the older ones, i.e. for batch k, only
    // if exactly kStages - 1 groups were committed after batch k's. Without the empty commits
    // of the drain, the last batches would not be waited for at all: a race, not a hang.
    __pipeline_commit();
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    __pipeline_wait_prior(kStages - 1);  // this thread's copies of batch k landed (cannot hang)
    __syncthreads();                     // and every other thread's
    compute_batch(smem_stages + cursor.stage * kBatchElems,
                  gmem_out + block_batch(k) * kBatchElems);
    __syncthreads();  // the stage is no longer read
    fetch(k + kStages, cursor.stage);
  }
}
/// [primitives]

// ---- Launchers and the variant table -------------------------------------------------------
/// [launch]
// Chapter 01's grid rule, four batches per block: as many as the lesson's stages, so that a
// block's prime starts all its copies and it computes each batch while the later ones land.
constexpr int kBatchesPerBlock = 4;

// kKernelStages stages of 8 KiB in dynamic shared memory (after kOffsetBytes: the lab's misaligned
// row); max_blocks (0: none) caps the grid (the tests send every batch through one block).
template <auto kKernel, int kKernelStages, int kOffsetBytes = 0>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_batches, unsigned max_blocks) {
  constexpr int kSmemBytes = kKernelStages * kBatchBytes + kOffsetBytes;
  // Above 48 KiB of dynamic shared memory a kernel must opt in (4 x 8 KiB need not).
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kSmemBytes));
  const unsigned grid = batch_grid(num_batches, kBatchesPerBlock, max_blocks);
  kKernel<<<grid, kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_batches, unsigned max_blocks);

struct Variant { const char* name; const char* summary; Launch launch; int stages; };
const Variant kVariants[] = {
    {"minimal_pipeline", "cuda::pipeline, block scope, 2 stages, plain waits (the minimal kernel)",
     &launch_batch_grid<minimal_pipeline_kernel, kMinimalStages>, kMinimalStages},
    {"cuda_pipeline", "cuda::pipeline, block scope, 4 stages, a cursor and a bounded wait",
     &launch_batch_grid<cuda_pipeline_kernel<kStages>, kStages>, kStages},
    {"cg_memcpy_async", "cg::memcpy_async + cg::wait_prior, counted in the drain",
     &launch_batch_grid<cg_memcpy_async_kernel<kStages>, kStages>, kStages},
    {"pipeline_primitives", "__pipeline_memcpy_async / commit (always) / wait_prior",
     &launch_batch_grid<pipeline_primitives_kernel, kStages>, kStages},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------
struct Problem {
  explicit Problem(std::size_t num_batches)
      : num_batches(num_batches), host_in(num_batches * kBatchElems), gmem_in(host_in.size()),
        gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
  }
  std::size_t num_batches;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch (on at most max_blocks blocks; 0: the full grid), synchronise, compare.
course::Comparison verify(Launch launch, Problem& problem, unsigned max_blocks = 0) {
  problem.gmem_out.poison();
  launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

template <std::size_t kRows>  // the lesson's table, or the lab's
void run_table(const Variant (&rows)[kRows], const course::Options& opts,
               course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : rows) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches, 0); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}
void run(const course::Options& opts, course::Report& report) {
  run_table(kVariants, opts, report);
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "pipeline";
  info.title = "04 pipeline: multi-stage prefetching with memcpy_async";
  info.explanation =
      "Each block keeps up to 4 batches of 8 KiB in flight (4 stages in shared memory): while it\n"
      "computes batch k, the copies of batches k+1 .. k+3 are under way. A block-scope\n"
      "cuda::pipeline of two stages with plain waits (the minimal kernel), then of four with a\n"
      "bounded wait; the same ring counted in commit groups (cooperative_groups, primitives).";
  info.requirement = {8, 0, false, "cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kBatchBytes, "--size must be a whole number of 8 KiB batches (2048 uint32 elements)");
  info.in_flight = course::InFlightLaunch{
      "cuda_pipeline", (const void*)cuda_pipeline_kernel<kStages>, kBlockThreads,
      kStages * kBatchBytes, kStages, kBatchBytes};
  info.host_model = [](std::ostream& out) {
    print_pipeline_schedule<kStages>(out, kStages + 2);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
