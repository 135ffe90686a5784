// 03_barrier: cuda::barrier as the completion mechanism of memcpy_async.
//
// What you learn: how a block-scope cuda::barrier is initialised (one thread, then a block
// sync), how a copy bound to it holds its phase open until the data has landed, the three
// ways to wait (arrive_and_wait, arrive() + wait(token) with work in between, and waiting on
// the phase parity through the native mbarrier handle), the arrival count of the `.noinc`
// form written out by hand, and how one barrier serves batch after batch.
// What changed from 02: one buffer becomes two, each with its own `full` barrier, so a
// thread can arrive for the next batch and compute on the current one before it waits.
// Hardware: compute capability 8.0+ (mbarrier, LDGSTS); on 9.0 the 16-byte aligned
// cuda::memcpy_async variants become bulk copies (TMA), the others stay LDGSTS.
// Run: build/03_barrier/barrier [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-ldgsts
//        (4.11.1.1; 4.11.2.1.1 for explicit phase tracking); CUDA 11 guide, cuda::barrier:
//        https://docs.nvidia.com/cuda/archive/11.8.0/cuda-c-programming-guide/index.html#asynchronous-data-copies-using-cuda-barrier
// API: cuda::barrier   https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/barrier.html
//      barrier_native_handle
//        https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/barrier/barrier_native_handle.html
//      cuda::ptx mbarrier  https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/mbarrier_init.html
//                          https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/mbarrier_test_wait.html
//      cuda::ptx cp.async.mbarrier.arrive
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_mbarrier_arrive.html
//      PTX mbarrier  https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier
//      __mbarrier_inval  https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#memory-barrier-primitives-interface
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda_awbarrier_primitives.h>
#include <cuda_pipeline.h>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kChunkBytes = 16;                                            // one LDGSTS, one uint4
constexpr int kChunkElems = kChunkBytes / sizeof(std::uint32_t);
constexpr int kStages = 2;  // double buffering: one batch is computed while the next one lands
static_assert(kBatchBytes == kBlockThreads * kChunkBytes, "every thread copies and computes one 16-byte chunk");
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index wraps with a mask");
static_assert(sizeof(block_barrier) == sizeof(std::uint64_t), "a block-scope cuda::barrier is one 64-bit mbarrier");

// ---- The problem: chapters 01 and 02's copy-and-compute, checked against the host --------

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
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

// Each thread turns its 16-byte chunk and the two elements beside it into four outputs,
// written with one 16-byte store.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  const int first = threadIdx.x * kChunkElems;
  const uint4 centre = reinterpret_cast<const uint4*>(smem_batch)[threadIdx.x];
  const std::uint32_t left = smem_batch[(first - 1) & (kBatchElems - 1)];
  const std::uint32_t right = smem_batch[(first + kChunkElems) & (kBatchElems - 1)];
  const uint4 out = {smooth(left, centre.x, centre.y), smooth(centre.x, centre.y, centre.z),
                     smooth(centre.y, centre.z, centre.w), smooth(centre.z, centre.w, right)};
  reinterpret_cast<uint4*>(gmem_out_batch)[threadIdx.x] = out;
}

/// [cursor]
// Where the next wait happens: which buffer (stage) and the parity of the phase that its
// barrier completes when that buffer's batch has landed. Every kStages batches the stage
// wraps and each barrier has completed one more phase, so the parity flips.
struct StageCursor {
  int stage = 0;
  std::uint32_t phase = 0;  // parity bit: 0, 1, 0, ...
  __host__ __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};
/// [cursor]

// ---- Kernels --------------------------------------------------------------------------------

/// [arrive_and_wait]
// The CUDA 11 guide's example with one buffer. Shape is the size argument's type:
// cuda::aligned_size_t<16> promises 16-byte alignment; a plain std::size_t (the guide's
// spelling) leaves the library with alignof(std::uint32_t) = 4.
template <class Shape>
__global__ void arrive_and_wait_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // phase k completes when batch k of this block has landed
  cg::thread_block block = cg::this_thread_block();
  // TUTORIAL: the barrier lives in shared memory, which no constructor initialises. One
  // thread calls init() with the number of arrivals that complete a phase; the block sync
  // makes that initialisation visible before any thread arrives on it or binds a copy to it.
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // each thread arrives once per phase
  block.sync();  // nobody touches the barrier before its initialisation is visible

  std::uint32_t phase = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, phase ^= 1u) {
    // TUTORIAL: binding the copy to full_bar holds the current phase open until the data
    // has landed. With LDGSTS (8.0, or alignment below 16) each copying thread adds one
    // expected arrival, which the hardware makes when that thread's copies have landed. With
    // 16-byte alignment on 9.0 thread 0 issues one bulk copy and adds its byte count to the
    // phase's transaction count instead. Either way thread arrivals alone cannot complete it.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, Shape(kBatchBytes), full_bar);
    // full_bar.arrive_and_wait() is full_bar.wait(full_bar.arrive()); the course bounds the wait.
    // Its phase covered every thread's copies: no __syncthreads() before reading neighbours.
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [arrive_and_wait]

/// [arrive_wait_token]
__global__ void arrive_wait_token_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                         std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];  // the batch computed, the batch landing
  __shared__ block_barrier full_bar[kStages];  // full_bar[s]: the batch in smem_batch[s] has landed
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    for (int s = 0; s < kStages; ++s) init(&full_bar[s], block.size());  // each thread arrives once per phase
  }
  block.sync();  // both barriers initialised before first use
  if (blockIdx.x >= num_batches) return;

  // Starts the copy of `batch` into `stage` and arrives: this thread has nothing more to
  // contribute to that phase. The token names the phase; the wait comes later.
  auto load = [&](std::size_t batch, int stage) {
    cuda::memcpy_async(block, smem_batch[stage], gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes),
                       full_bar[stage]);
    return full_bar[stage].arrive();
  };

  block_barrier::arrival_token current = load(blockIdx.x, 0);
  StageCursor cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::size_t next = batch + gridDim.x;
    block_barrier::arrival_token upcoming{};
    // TUTORIAL: split arrive and wait. The next batch's copy starts and this thread arrives
    // for it now; the wait for it happens one iteration later, after computing the current
    // batch. Its buffer was released by the block.sync() that ended the previous iteration.
    if (next < num_batches) upcoming = load(next, cursor.stage ^ 1);
    course::bounded_wait(full_bar[cursor.stage], std::move(current), {"full", cursor.stage, cursor.phase});
    compute_batch(smem_batch[cursor.stage], gmem_out + batch * kBatchElems);
    block.sync();  // smem_batch[stage] is no longer read: the next iteration refills it
    current = upcoming;
    cursor.advance();
  }
}
/// [arrive_wait_token]

/// [parity]
__global__ void parity_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ block_barrier full_bar[kStages];
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    for (int s = 0; s < kStages; ++s) init(&full_bar[s], block.size());  // each thread arrives once per phase
  }
  block.sync();  // both barriers initialised before first use
  if (blockIdx.x >= num_batches) return;

  auto load = [&](std::size_t batch, int stage) {
    cuda::memcpy_async(block, smem_batch[stage], gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes),
                       full_bar[stage]);
    (void)full_bar[stage].arrive();  // arrival only: the wait below names the phase by its parity
  };

  load(blockIdx.x, 0);
  StageCursor cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    if (batch + gridDim.x < num_batches) load(batch + gridDim.x, cursor.stage ^ 1);
    // TUTORIAL: no token to keep: the wait names the phase by its parity, which the cursor
    // tracks. The wait goes to the mbarrier underneath the cuda::barrier (its native
    // handle): mbarrier.try_wait.parity on 9.0, mbarrier.test_wait.parity on 8.0.
    std::uint64_t* full_mbar = cuda::device::barrier_native_handle(full_bar[cursor.stage]);
    course::bounded_wait_parity(full_mbar, cursor.phase, {"full", cursor.stage, cursor.phase});
    compute_batch(smem_batch[cursor.stage], gmem_out + batch * kBatchElems);
    block.sync();  // smem_batch[stage] is no longer read: the next iteration refills it
    cursor.advance();
  }
}
/// [parity]

/// [noinc]
__global__ void noinc_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ std::uint64_t full_bar[kStages];  // raw mbarriers: 8 bytes of shared memory each
  // TUTORIAL: the count is written out. Per phase every thread arrives once itself, and
  // once more through cp.async.mbarrier.arrive.noinc when its copies have landed. Without
  // .noinc the hardware adds that second arrival to the count by itself; with .noinc it is
  // one of the arrivals the barrier was initialised to expect.
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full_bar[s], 2 * blockDim.x);
  }
  __syncthreads();  // both barriers initialised before first use
  if (blockIdx.x >= num_batches) return;

  const int chunk = threadIdx.x * kChunkElems;
  auto load = [&](std::size_t batch, int stage) {
    __pipeline_memcpy_async(&smem_batch[stage][chunk], gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    cuda::ptx::cp_async_mbarrier_arrive_noinc(&full_bar[stage]);  // arrives when this thread's copies have landed
    (void)cuda::ptx::mbarrier_arrive(&full_bar[stage]);            // this thread's own arrival
  };

  load(blockIdx.x, 0);
  StageCursor cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    if (batch + gridDim.x < num_batches) load(batch + gridDim.x, cursor.stage ^ 1);
    // Every thread's chunk has landed once the phase completes: no __syncthreads needed.
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    compute_batch(smem_batch[cursor.stage], gmem_out + batch * kBatchElems);
    __syncthreads();  // smem_batch[stage] is no longer read: the next iteration refills it
    cursor.advance();
  }
  // TUTORIAL: every wait has returned (the __syncthreads above) and no copy is pending, so
  // the barriers can be invalidated: PTX asks for mbarrier.inval before an mbarrier's
  // shared memory serves any other purpose, or before init() gives it a new count.
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) __mbarrier_inval(&full_bar[s]);
  }
}
/// [noinc]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// Fill every SM with resident blocks, never more blocks than batches.
template <auto kKernel>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kKernel, kBlockThreads, 0));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  kKernel<<<static_cast<unsigned>(num_batches < resident ? num_batches : resident), kBlockThreads>>>(gmem_in, gmem_out,
                                                                                                    num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches);
};
const Variant kVariants[] = {
    {"arrive_and_wait", "one buffer: cuda::memcpy_async(block, aligned_size_t<16>, bar), arrive_and_wait",
     &launch_resident<arrive_and_wait_kernel<cuda::aligned_size_t<16>>>},
    {"arrive_and_wait_plain_size", "the same with the guide's plain byte count: 4-byte LDGSTS, also on 9.0",
     &launch_resident<arrive_and_wait_kernel<std::size_t>>},
    {"arrive_wait_token", "two buffers: arrive for the next batch, compute, then wait(token)",
     &launch_resident<arrive_wait_token_kernel>},
    {"parity", "two buffers: wait on the phase parity through the native mbarrier handle",
     &launch_resident<parity_kernel>},
    {"noinc", "raw mbarriers, per-thread 16-byte LDGSTS, cp.async.mbarrier.arrive.noinc",
     &launch_resident<noinc_kernel>},
};

// ---- Host model: what an mbarrier counts ---------------------------------------------------

/// [model]
// One mbarrier as the hardware sees it: the arrivals still missing in the current phase,
// and how many phases have completed (the current phase's parity is `phase & 1`).
struct BarrierModel {
  int expected = 0;
  int pending = 0;
  unsigned phase = 0;

  void init(int count) {
    expected = pending = count;
    phase = 0;
  }
  // mbarrier.arrive by `n` threads (or `n` asynchronous arrivals).
  void arrive(int n) {
    for (int i = 0; i < n; ++i) {
      if (--pending > 0) continue;
      ++phase;  // phase complete: the next one expects the same count
      pending = expected;
    }
  }
  // cp.async.mbarrier.arrive by `n` threads (no .noinc): +1 now, the arrival comes later.
  void bind_copies(int n) { pending += n; }
  // `n` copies land: their asynchronous arrivals (with or without .noinc).
  void copies_land(int n) { arrive(n); }
  // mbarrier.test_wait.parity: has the phase with this parity completed?
  bool parity_done(unsigned parity) const { return (phase & 1u) != parity; }
};
/// [model]

// The model's state, one line per step, for N threads that each bind one copy.
std::string model_trace(const char* title, int num_threads, bool noinc, int init_count) {
  BarrierModel bar;
  std::string text = std::string("  ") + title + "\n";
  auto step = [&](const std::string& what) {
    char line[160];
    std::snprintf(line, sizeof line, "    %-34s pending %2d  phase %u  wait_parity(0) %s\n", what.c_str(), bar.pending,
                  bar.phase, bar.parity_done(0) ? "returns" : "waits");
    text += line;
  };
  const std::string n = std::to_string(num_threads);
  bar.init(init_count);
  step("init(" + std::to_string(init_count) + ")");
  if (!noinc) {
    bar.bind_copies(num_threads);
    step(n + " threads bind a copy (+1 each)");
  }
  bar.arrive(num_threads);
  step(n + " threads arrive");
  bar.copies_land(num_threads - 1);
  step(std::to_string(num_threads - 1) + " copies land");
  bar.copies_land(1);
  step("the last copy lands");
  return text;
}

void print_host_model(std::ostream& out) {
  out << "host model of one barrier phase (4 threads, one copy each):\n"
      << model_trace("cuda::memcpy_async bound to the barrier, init(4):", 4, false, 4)
      << model_trace("cp.async.mbarrier.arrive.noinc, init(2 x 4):", 4, true, 8)
      << model_trace("cp.async.mbarrier.arrive.noinc, init(4): completes before any data", 4, true, 4)
      << model_trace("init(4 + 1): one arrival never comes, the wait is stopped", 4, false, 5)
      << "  stage/parity of the waits for batches 0..5 (two buffers):";
  StageCursor cursor;
  for (int batch = 0; batch < 6; ++batch, cursor.advance()) out << ' ' << cursor.stage << '/' << cursor.phase;
  out << '\n';
}

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

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  variant.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "barrier";
  info.title = "03 barrier: cuda::barrier as the completion mechanism of memcpy_async";
  info.explanation =
      "The batch problem of chapters 01-02. Copies complete on a block-scope cuda::barrier: one\n"
      "buffer with arrive_and_wait (the guide's example), two buffers with arrive() + wait(token),\n"
      "two buffers waiting on the phase parity through the native mbarrier handle, and raw\n"
      "mbarriers with cp.async.mbarrier.arrive.noinc and the arrival count written out.";
  info.requirement = {8, 0, false, "mbarrier and cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBatchBytes, "--size must be a whole number of 4 KiB batches (1024 uint32 elements)");
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
