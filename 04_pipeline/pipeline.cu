// 04_pipeline: multi-stage prefetching, the copy of batch k + S overlapping the compute of batch k.
//
// What you learn: how a block keeps kStages batches in flight (prime, steady state, drain) with
// cuda::pipeline at block scope and at thread scope, cooperative_groups::memcpy_async +
// wait_prior, and the __pipeline_* primitives; and why the count-based waits need a commit
// even when nothing is left to fetch.
// What changed from 03: two buffers with a barrier each become a pipeline of kStages = 4 stages
// (8 KiB batches, dynamic shared memory) that is primed, refilled and drained.
// Hardware: compute capability 8.0+ (LDGSTS). cuda::pipeline stays LDGSTS on 9.0 as well.
// Run: build/04_pipeline/pipeline [--bench] [--variant=NAME]; stage counts 1-4 and the warp-
//      entanglement experiments are in build/04_pipeline/pipeline_lab.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#prefetching-data
//        (4.11.1.2); https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/pipelines.html
// API: cuda::pipeline, make_pipeline, pipeline_shared_state, pipeline_consumer_wait_prior
//        https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/pipeline.html
//      cooperative_groups::wait_prior
//        https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
//      __pipeline_commit / __pipeline_wait_prior
//        https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/device-callable-apis.html
//      PTX cp.async.commit_group / wait_group / cp.async.mbarrier.arrive
//        https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async
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

// __shared__ pipeline_shared_state has a constructor that must not run (shared memory is not
// initialised at launch); make_pipeline() initialises it. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kStages = 4;  // batches in flight per block: 4 x 8 KiB covers the memory latency (the lab sweeps 1-4)
constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 2048;  // one batch fills one pipeline stage
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 8 KiB
constexpr int kChunkBytes = 16;                                            // the widest LDGSTS
constexpr int kChunksPerThread = kBatchBytes / kChunkBytes / kBlockThreads;  // 2
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index below wraps with a mask");
static_assert(kBatchBytes % (kChunkBytes * kBlockThreads) == 0, "every thread copies whole 16-byte chunks");

// ---- The problem: chapter 01's ring smoothing, on 8 KiB batches --------------------------

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
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
    gmem_vecs[v] = make_uint4(smooth(left, c.x, c.y), smooth(c.x, c.y, c.z), smooth(c.y, c.z, c.w),
                              smooth(c.z, c.w, right));
  }
}
/// [compute]

// Block b handles batches b, b + gridDim.x, ... (never more blocks than batches): how many, and its k-th.
__device__ std::size_t block_batch_count(std::size_t num_batches) {
  return (num_batches - blockIdx.x + gridDim.x - 1) / gridDim.x;
}
__device__ std::size_t block_batch(std::size_t k) { return blockIdx.x + k * gridDim.x; }

// ---- Flavour 1: cuda::pipeline at block scope ---------------------------------------------

/// [cuda_pipeline]
__global__ void __launch_bounds__(kBlockThreads)
    cuda_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];  // [kStages][kBatchElems] uint32
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;  // full + empty per stage
  cg::thread_block block = cg::this_thread_block();
  // Unified pipeline: every thread produces and consumes. make_pipeline initialises each stage's
  // two barriers to block.size() arrivals and syncs the block before anyone uses them.
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);
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
    // Waits on the stage's full barrier: every thread committed and its copies landed, so the
    // whole batch is visible without a __syncthreads.
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();           // arrive on the stage's empty barrier: this thread is done reading it
    fetch(k + kStages, cursor.stage);  // steady state: refill the stage; drain: nothing
  }
}
/// [cuda_pipeline]

// ---- Flavour 2: cuda::pipeline at thread scope (the guide's choice) ----------------------

/// [thread_pipeline]
__global__ void __launch_bounds__(kBlockThreads)
    thread_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  cg::thread_block block = cg::this_thread_block();
  // No shared state: commit and wait are this thread's cp.async.commit_group and wait_group.
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    pipe.producer_acquire();  // nothing at thread scope
    if (k < num_mine) {
      cuda::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    }
    pipe.producer_commit();  // ALWAYS, empty or not: the wait below counts groups (TUTORIAL)
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    // TUTORIAL: wait_prior<kStages - 1> lets this thread's kStages - 1 newest groups stay in
    // flight and waits for everything older, i.e. for batch k. That is only right if exactly
    // kStages - 1 groups were committed after batch k, which is why fetch() commits in the
    // drain too: without the empty commits, the last batches would not be waited for at all.
    // cp.async.wait_group waits for this thread's own copies, which always complete: it cannot hang.
    cuda::pipeline_consumer_wait_prior<kStages - 1>(pipe);
    __syncthreads();  // the other threads' chunks of batch k landed too
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // nothing at thread scope: the __syncthreads below does its job
    __syncthreads();          // nobody reads the stage any more when fetch() overwrites it
    fetch(k + kStages, cursor.stage);
  }
}
/// [thread_pipeline]

// ---- Flavour 3: cooperative_groups::memcpy_async + wait_prior ------------------------------

// cg::wait_prior<N> takes N as a template argument; the drain needs it at run time.
template <int kMax>
__device__ void cg_wait_prior(const cg::thread_block& block, int pending) {
  if constexpr (kMax == 0) {
    cg::wait_prior<0>(block);
  } else {
    if (pending == kMax) return cg::wait_prior<kMax>(block);
    cg_wait_prior<kMax - 1>(block, pending);
  }
}

/// [cg_pipeline]
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
    // Fewer younger groups exist in the drain and when the block has fewer batches than stages.
    // wait_prior = cp.async.wait_group (cannot hang) + block.sync().
    cg_wait_prior<kStages - 1>(block, pending_batches(k, num_mine, kStages));
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    block.sync();  // the stage is no longer read
    if (k + kStages < num_mine) fetch(k + kStages, cursor.stage);
  }
}
/// [cg_pipeline]

// ---- Flavour 4: the __pipeline_* primitives -----------------------------------------------

// This thread's chunks of a batch: consecutive threads copy consecutive 16-byte chunks.
__device__ void copy_my_chunks(std::uint32_t* smem_stage, const std::uint32_t* gmem_batch) {
  for (int c = 0; c < kChunksPerThread; ++c) {
    const int elem = (threadIdx.x + c * kBlockThreads) * (kChunkBytes / sizeof(std::uint32_t));
    __pipeline_memcpy_async(smem_stage + elem, gmem_batch + elem, kChunkBytes);
  }
}

/// [primitives]
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
/// [primitives]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// Chapter 01's grid rule: short-lived blocks, started in index order, keep the batches in flight
// neighbours in memory (the lab's pipeline_primitives_resident row runs one block per SM instead).
// Four batches, as many as stages, so that a block still overlaps: its prime starts all four copies
// and it computes each batch while the later ones land; the refill runs when a block has more
// (max_blocks caps the grid: the tests send every batch through one block).
constexpr int kBatchesPerBlock = 4;

// kStages stages of kBatchBytes in dynamic shared memory; max_blocks (0: none) caps the grid.
template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                       unsigned max_blocks) {
  constexpr int kSmemBytes = kStages * kBatchBytes;
  // Above 48 KiB of dynamic shared memory a kernel must opt in (4 x 8 KiB need not; 4 x 16 KiB would).
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  kKernel<<<batch_grid(num_batches, kBatchesPerBlock, max_blocks), kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out,
                                                                                               num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                        unsigned max_blocks);

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"cuda_pipeline", "cuda::pipeline, block scope: a full and an empty barrier per stage",
     &launch_batch_grid<cuda_pipeline_kernel>},
    {"thread_pipeline", "cuda::pipeline, thread scope + wait_prior (the guide's)",
     &launch_batch_grid<thread_pipeline_kernel>},
    {"cg_memcpy_async", "cg::memcpy_async + cg::wait_prior, counted in the drain",
     &launch_batch_grid<cg_memcpy_async_kernel>},
    {"pipeline_primitives", "__pipeline_memcpy_async / commit / wait_prior",
     &launch_batch_grid<pipeline_primitives_kernel>},
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

// Poison, launch (on at most max_blocks blocks; 0: the full grid), synchronise, compare bit-exactly.
course::Comparison verify(Launch launch, Problem& problem, unsigned max_blocks = 0) {
  problem.gmem_out.poison();
  launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

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
  course::ChapterInfo info;
  info.program = "pipeline";
  info.title = "04 pipeline: multi-stage prefetching with memcpy_async";
  info.explanation =
      "Each block keeps up to 4 batches of 8 KiB in flight (4 stages in shared memory): while it computes\n"
      "batch k, the copies of batches k+1 .. k+3 are under way. The same pipeline in four spellings:\n"
      "cuda::pipeline at block and at thread scope, cooperative_groups::memcpy_async + wait_prior, and\n"
      "the __pipeline_* primitives.";
  info.requirement = {8, 0, false, "cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBatchBytes, "--size must be a whole number of 8 KiB batches (2048 uint32 elements)");
  info.host_model = [](std::ostream& out) { print_pipeline_schedule<kStages>(out, kStages + 2); };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
