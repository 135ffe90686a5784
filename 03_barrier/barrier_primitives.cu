// 03_barrier, second lesson: the guide's lower-level spellings of the chapter's barrier, running.
//
// What you learn: the memory barrier primitives (__mbarrier_init/arrive/test_wait/try_wait/inval,
// __mbarrier_token_pending_count) with __pipeline_arrive_on and what it does to the pending count;
// cuda::barrier's arrive_and_drop, for threads that leave early; a completion function.
// What changed from barrier.cu: the same batches and compute, but --size may end in a partial
// batch (whole 16-byte chunks, a ring of its own), which the threads past its end sit out.
// Hardware: compute capability 8.0+ (mbarrier, LDGSTS); __mbarrier_try_wait is 9.0 only.
// Run: build/03_barrier/barrier_primitives [--bench] [--variant=NAME] [--size=BYTES]
// Guide: 4.11.1.3 ("CUDA C primitives"), https://docs.nvidia.com/cuda/cuda-programming-guide/
// API: cuda::barrier https://nvidia.github.io/cccl/libcudacxx/; PTX mbarrier (arrive_drop,
//      pending_count): https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda_awbarrier_primitives.h>
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "barrier_model.hpp"  // BarrierModel (what an mbarrier counts), model_trace, batch_grid
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"  // barrier.cu's StageCursor: {stage, parity}
#include "course/wait.cuh"

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier's constructor must not run (nothing initialises shared memory).
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kChunkBytes = 16;                                            // one LDGSTS, one uint4
constexpr int kChunkElems = kChunkBytes / sizeof(std::uint32_t);
constexpr int kStages = 2;  // double buffering, as in barrier.cu
static_assert(kBatchBytes == kBlockThreads * kChunkBytes,
              "every thread copies and computes one 16-byte chunk");

// 9.0: arrive_and_drop's aligned copies are bulk copies: init() must be visible to the async proxy.
__device__ inline void fence_barrier_init_for_tma() {
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
}

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;
}

__host__ __device__ inline std::size_t batches_of(std::size_t num_elems) {
  return (num_elems + kBatchElems - 1) / kBatchElems;
}
__host__ __device__ inline int batch_elems(std::size_t batch, std::size_t num_elems) {
  const std::size_t left = num_elems - batch * kBatchElems;
  return left < kBatchElems ? static_cast<int>(left) : kBatchElems;  // the last: whole chunks
}

std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t batch = 0; batch < batches_of(in.size()); ++batch) {
    const std::size_t base = batch * kBatchElems;
    const int n = batch_elems(batch, in.size());  // each batch is a ring of its own elements
    for (int i = 0; i < n; ++i)
      out[base + i] = smooth(in[base + (i + n - 1) % n], in[base + i], in[base + (i + 1) % n]);
  }
  return out;
}

// Each thread turns its chunk and the two elements beside it into four outputs: one 16-byte store.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch,
                              int elems) {
  const int first = threadIdx.x * kChunkElems;
  if (first >= elems) return;  // past the end of a partial last batch
  const uint4 centre = reinterpret_cast<const uint4*>(smem_batch)[threadIdx.x];
  const std::uint32_t left = smem_batch[first == 0 ? elems - 1 : first - 1];
  const std::uint32_t right = smem_batch[first + kChunkElems == elems ? 0 : first + kChunkElems];
  const uint4 out = {smooth(left, centre.x, centre.y), smooth(centre.x, centre.y, centre.z),
                     smooth(centre.y, centre.z, centre.w), smooth(centre.z, centre.w, right)};
  reinterpret_cast<uint4*>(gmem_out_batch)[threadIdx.x] = out;
}

/// [bounded_mbarrier_wait]
// The primitives' token wait, bounded; __mbarrier_try_wait (9.0) may sleep up to a 1000 ns hint.
__device__ void bounded_mbarrier_wait(__mbarrier_t* bar, __mbarrier_token_t token,
                                      course::WaitSite site) {
  const unsigned long long start = course::wait_clock_ns();
  for (;;) {
    bool done = false;
    NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90, (done = __mbarrier_try_wait(bar, token, 1000);),
                      (done = __mbarrier_test_wait(bar, token);))
    if (done) return;
    course::give_up_if_stuck(site, course::wait_clock_ns() - start);
  }
}
/// [bounded_mbarrier_wait]

/// [mbarrier_primitives]
__global__ void mbarrier_primitives_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                           std::size_t num_elems) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ __mbarrier_t full_bar[kStages];  // the primitives' mbarrier: a uint64_t
  // TUTORIAL: the count is the threads' own arrivals: the counting arrive-on below nets zero.
  if (threadIdx.x == 0) {  // each thread arrives once per phase
    for (int s = 0; s < kStages; ++s) __mbarrier_init(&full_bar[s], blockDim.x);
  }
  __syncthreads();  // every barrier initialised before first use

  const std::size_t num_batches = batches_of(num_elems);
  const int chunk = threadIdx.x * kChunkElems;
  __mbarrier_token_t token[kStages];  // token[s]: names the phase of my arrival on full_bar[s]
  course::StageCursor<kStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    if (chunk < batch_elems(batch, num_elems)) {  // threads past a partial batch's end copy nothing
      __pipeline_memcpy_async(&smem_batch[load_at.stage][chunk],
                              gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    }
    __syncwarp();  // converged, a warp's arrive-on updates the barrier once; diverged, per thread
#ifdef GUIDE_ARRIVE_ON_BY_VALUE  // the guide's spelling (4.11.1.3): CTest expects a compile error
    __pipeline_arrive_on(full_bar[load_at.stage]);
#else
    __pipeline_arrive_on(&full_bar[load_at.stage]);  // +1 now, the arrival when my copies land
#endif
    token[load_at.stage] = __mbarrier_arrive(&full_bar[load_at.stage]);  // my own arrival
    load_at.advance();
  };

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  course::StageCursor<kStages> wait_at;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    load(batch + (kStages - 1) * std::size_t{gridDim.x});
    bounded_mbarrier_wait(&full_bar[wait_at.stage], token[wait_at.stage],
                          {"full", wait_at.stage, wait_at.phase});  // every thread's chunk landed
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems,
                  batch_elems(batch, num_elems));
    __syncthreads();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
  if (threadIdx.x == 0) {  // every wait returned, no copy pending: the memory may serve again
    for (int s = 0; s < kStages; ++s) __mbarrier_inval(&full_bar[s]);
  }
}
/// [mbarrier_primitives]

/// [arrive_and_drop]
__global__ void arrive_and_drop_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_elems) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ block_barrier full_bar[kStages];  // full_bar[s]: the batch in smem_batch[s] has landed
  __shared__ block_barrier done_bar;  // phase k: all still here have computed the k-th batch
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {  // each thread arrives once per phase
    for (int s = 0; s < kStages; ++s) init(&full_bar[s], block.size());
    init(&done_bar, block.size());  // block.sync()'s count: every thread, until some drop out
  }
  fence_barrier_init_for_tma();  // 9.0: init() visible to the bulk copies' completion
  block.sync();  // every barrier initialised before first use

  const std::size_t num_batches = batches_of(num_elems);
  const int chunk = block.thread_rank() * kChunkElems;
  course::StageCursor<kStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    const int elems = batch_elems(batch, num_elems);
    cuda::memcpy_async(block, smem_batch[load_at.stage], gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(elems * sizeof(std::uint32_t)),
                       full_bar[load_at.stage]);
    if (chunk < elems) {
      (void)full_bar[load_at.stage].arrive();  // arrival only: the wait names the phase by parity
    } else {
      full_bar[load_at.stage].arrive_and_drop();  // the last batch, no chunk for me: arrive, leave
    }
    load_at.advance();
  };

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  course::StageCursor<kStages> wait_at;
  unsigned round = 0;  // done_bar's phase
  for (std::size_t batch = blockIdx.x; batch < num_batches;
       batch += gridDim.x, wait_at.advance(), ++round) {
    const std::size_t next = batch + (kStages - 1) * std::size_t{gridDim.x};
    load(next);
    course::bounded_wait_parity(cuda::device::barrier_native_handle(full_bar[wait_at.stage]),
                                wait_at.phase, {"full", wait_at.stage, wait_at.phase});  // landed
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems,
                  batch_elems(batch, num_elems));
    // TUTORIAL: a thread with no chunk in the block's next batch is done, but done_bar counts it:
    // arrive_and_drop() is its arrival for this phase and one fewer expected in every later one.
    if (next < num_batches && chunk >= batch_elems(next, num_elems)) {
      done_bar.arrive_and_drop();  // my last release of a buffer
      return;
    }
    course::bounded_wait(done_bar, done_bar.arrive(), {"done", -1, round});  // all have read it
  }
}
/// [arrive_and_drop]

/// [completion_function]
// TUTORIAL: run once per phase by the thread whose arrival completes it, before any release. It
// makes this libcu++'s software barrier: no try_wait; cuda::memcpy_async waits for its LDGSTS.
struct CountPhase {
  unsigned* completed;  // __shared__: phases completed = batches of this block that have landed
  __device__ void operator()() const noexcept {
    cuda::atomic_ref<unsigned, cuda::thread_scope_block>(*completed)
        .fetch_add(1u, cuda::std::memory_order_relaxed);
  }
};
using counting_barrier = cuda::barrier<cuda::thread_scope_block, CountPhase>;

// Until the count passes `phase` (its completion ran), then wait() until the next phase is open.
__device__ void bounded_wait_counted(counting_barrier& bar, counting_barrier::arrival_token&& token,
                                     unsigned& completed, unsigned phase, course::WaitSite site) {
  const unsigned long long start = course::wait_clock_ns();
  while (cuda::atomic_ref<unsigned, cuda::thread_scope_block>(completed).load(
             cuda::std::memory_order_relaxed) <= phase) {
    course::give_up_if_stuck(site, course::wait_clock_ns() - start);
  }
  bar.wait(std::move(token));  // acquire: every thread's chunk is visible
}

// One block's batches on one barrier; returns the phases its completion function counted.
__device__ unsigned counted_batches(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                    std::size_t num_elems) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ counting_barrier full_bar;  // phase k: the block's k-th batch has landed
  __shared__ unsigned completed;         // what the completion function counts
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    completed = 0;
    init(&full_bar, block.size(), CountPhase{&completed});  // each thread arrives once per phase
  }
  block.sync();  // barrier and count initialised before first use

  unsigned phase = 0;
  for (std::size_t batch = blockIdx.x; batch < batches_of(num_elems); batch += gridDim.x, ++phase) {
    const int elems = batch_elems(batch, num_elems);
    std::uint32_t* smem_stage = smem_batch[phase % kStages];
    // LDGSTS, then cp.async.wait_all: my copies have landed when this returns
    cuda::memcpy_async(block, smem_stage, gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(elems * sizeof(std::uint32_t)), full_bar);
    bounded_wait_counted(full_bar, full_bar.arrive(), completed, phase,  // all copies landed
                         {"full", static_cast<int>(phase % kStages), phase});
    compute_batch(smem_stage, gmem_out + batch * kBatchElems, elems);
    // No block.sync(): this buffer is refilled after the next phase, which all arrive on after this
  }
  return cuda::atomic_ref<unsigned, cuda::thread_scope_block>(completed).load(
      cuda::std::memory_order_relaxed);
}

__global__ void completion_function_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                           std::size_t num_elems) {
  (void)counted_batches(gmem_in, gmem_out, num_elems);
}
/// [completion_function]

constexpr int kBatchesPerBlock = 4;  // chapter 01's grid rule, as in barrier.cu
template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_elems) {
  kKernel<<<batch_grid(batches_of(num_elems), kBatchesPerBlock), kBlockThreads>>>(
      gmem_in, gmem_out, num_elems);
  COURSE_CHECK_LAUNCH();
}

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_elems);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"mbarrier_primitives", "__mbarrier_* primitives, __pipeline_memcpy_async + "
     "__pipeline_arrive_on, token waits", &launch_batch_grid<mbarrier_primitives_kernel>},
    {"arrive_and_drop", "cuda::barrier; threads with no part of a partial last batch leave "
     "with arrive_and_drop", &launch_batch_grid<arrive_and_drop_kernel>},
    {"completion_function", "cuda::barrier with a completion function that counts phases "
     "(a software barrier)", &launch_batch_grid<completion_function_kernel>},
};

struct Problem {
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

course::Comparison verify(Launch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

constexpr std::size_t kVerifyBytes = (8u << 20) + 1024;  // 2049 batches; 192 threads leave the last

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "barrier_primitives";
  info.title = "03 barrier_primitives: the guide's mbarrier primitives, arrive_and_drop, "
               "a completion function";
  info.explanation =
      "barrier.cu's batches (the last may be partial): the __mbarrier_* primitives with "
      "__pipeline_arrive_on,\na cuda::barrier that threads with no part of the last batch leave "
      "with arrive_and_drop, and a\ncuda::barrier whose completion function counts its phases.";
  info.requirement = {8, 0, false, "mbarrier and cp.async (LDGSTS)"};
  info.verify_bytes = kVerifyBytes;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kChunkBytes, "--size must be a whole number of 16-byte chunks (4 uint32 elements); "
                   "the last 4 KiB batch may be partial");
  info.host_model = [](std::ostream& out) {
    out << "host model of one phase (4 threads, one copy each):\n"
        << model_trace("__pipeline_memcpy_async, __pipeline_arrive_on, __mbarrier_arrive; "
                       "__mbarrier_init(4):", 4, false, 4);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
