// 03_barrier: cuda::barrier as the completion mechanism of memcpy_async.
//
// What you learn: initialising a block-scope cuda::barrier (one thread, then a block sync); a copy
// bound to it holds its phase open until the data has landed; three ways to wait (arrive_and_wait,
// arrive() + wait(token) with work in between, the phase parity through the native handle); the
// `.noinc` arrival count written out; one barrier serving batch after batch.
// What changed from 02: one buffer becomes two, each with its own `full` barrier, so a thread can
// arrive for the next batch and compute on the current one before it waits.
// Hardware: compute capability 8.0+ (mbarrier, LDGSTS); on 9.0 the 16-byte aligned
// cuda::memcpy_async variants become bulk copies (TMA), the noinc variant stays LDGSTS.
// Run: build/03_barrier/barrier [--bench] [--variant=NAME]; 1 and 4 buffers: barrier_lab
// Guide: 4.11.1.1 (4.11.2.1.1 for explicit phase tracking), https://docs.nvidia.com/cuda/
//        cuda-programming-guide/04-special-topics/async-copies.html#using-ldgsts
//        CUDA 11 guide, cuda::barrier: https://docs.nvidia.com/cuda/archive/11.8.0/
//        cuda-c-programming-guide/index.html#asynchronous-data-copies-using-cuda-barrier
// API: https://nvidia.github.io/cccl/libcudacxx/ cuda::barrier, barrier_native_handle; cuda::ptx
//      mbarrier_init, mbarrier_test_wait, cp_async_mbarrier_arrive, fence_proxy_async;
//      __mbarrier_inval (the guide's "Memory Barrier Primitives Interface"); PTX mbarrier and
//      proxies: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda_awbarrier_primitives.h>
#include <cuda_pipeline.h>

#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include "barrier_model.hpp"  // what an mbarrier counts (traces, ring replays); the grid rule
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
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
constexpr int kStages = 2;  // double buffering: one batch computed while the next lands
static_assert(kBatchBytes == kBlockThreads * kChunkBytes,
              "every thread copies and computes one 16-byte chunk");
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index wraps with a mask");
static_assert(sizeof(block_barrier) == sizeof(std::uint64_t),
              "a block-scope cuda::barrier is one 64-bit mbarrier");

// 9.0: the aligned copies are bulk copies completing on the barrier through the async proxy, which
// only a proxy fence orders after init()'s ordinary stores (cuda::memcpy_async adds none).
__device__ inline void fence_barrier_init_for_tma() {
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
}

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
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

// Each thread turns its chunk and the two elements beside it into four outputs: one 16-byte store.
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
// A place in a ring of kRingStages buffers: which buffer (stage), and the parity of the phase its
// barrier completes when that buffer's batch has landed (course::StageCursor in chapters 04-12).
template <int kRingStages>
struct StageCursor {
  static_assert(kRingStages >= 1, "a ring needs at least one buffer");
  int stage = 0;
  std::uint32_t phase = 0;  // parity bit: 0, 1, 0, ...
  __host__ __device__ void advance() {
    if (++stage == kRingStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};
/// [cursor]

/// [arrive_and_wait]
// The minimal kernel: the CUDA 11 guide's example, one buffer, standard API only, the plain wait.
// cuda::aligned_size_t<16> promises 16-byte alignment (the guide's plain byte count proves only 4).
__global__ void arrive_and_wait_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // phase k completes when batch k of this block has landed
  cg::thread_block block = cg::this_thread_block();
  // shared memory has no constructor: one thread initialises the barrier
  if (threadIdx.x == 0) init(&full_bar, blockDim.x);  // each thread arrives once per phase
  // 9.0: the bulk copy completes on the barrier through the async proxy: fence init() toward it
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  __syncthreads();  // nobody touches the barrier before its initialisation is visible

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // bound to full_bar, the copy holds the phase open until the data has landed: LDGSTS and
    // one more expected arrival per thread on 8.0, one bulk copy counted in bytes on 9.0
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), full_bar);
    full_bar.arrive_and_wait();  // every thread arrived and every copy landed: the whole batch
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    __syncthreads();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [arrive_and_wait]

__global__ void arrive_wait_token_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                         std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ block_barrier full_bar[kStages];  // full_bar[s]: the batch in smem_batch[s] has landed
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {  // each thread arrives once per phase
    for (int s = 0; s < kStages; ++s) init(&full_bar[s], block.size());
  }
  fence_barrier_init_for_tma();  // 9.0: init() visible to the bulk copies' completion
  block.sync();  // every barrier initialised before first use

  /// [arrive_wait_token]
  block_barrier::arrival_token token[kStages];  // token[s]: this thread's arrival on full_bar[s]
  StageCursor<kStages> load_at;                 // the buffer the next copy fills
  // Starts the copy of `batch` (if it exists) and arrives: this thread has nothing more to
  // contribute to that phase. The token names the phase; the wait comes later.
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;  // the drain: nothing left to fetch
    cuda::memcpy_async(block, smem_batch[load_at.stage], gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), full_bar[load_at.stage]);
    token[load_at.stage] = full_bar[load_at.stage].arrive();  // this thread's arrival
    load_at.advance();
  };

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  StageCursor<kStages> wait_at;  // the buffer (and its barrier's phase) the next wait is for
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    // TUTORIAL: split arrive and wait. Copy and arrive kStages - 1 batches ahead, into the buffer
    // the last block.sync() released; wait for that batch later, after computing the ones before.
    load(batch + (kStages - 1) * std::size_t{gridDim.x});
    course::bounded_wait(full_bar[wait_at.stage], std::move(token[wait_at.stage]),
                         {"full", wait_at.stage, wait_at.phase});  // the batch landed
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems);
    block.sync();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
  /// [arrive_wait_token]
}

/// [parity]
// A ring of kRingStages buffers: the lesson runs kStages = 2, the lab 1 and 4.
template <int kRingStages>
__global__ void parity_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                              std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kRingStages][kBatchElems];
  __shared__ block_barrier full_bar[kRingStages];
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {  // each thread arrives once per phase
    for (int s = 0; s < kRingStages; ++s) init(&full_bar[s], block.size());
  }
  fence_barrier_init_for_tma();  // 9.0: init() visible to the bulk copies' completion
  block.sync();  // every barrier initialised before first use

  StageCursor<kRingStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    cuda::memcpy_async(block, smem_batch[load_at.stage], gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), full_bar[load_at.stage]);
    (void)full_bar[load_at.stage].arrive();  // arrival only: the wait names the phase by parity
    load_at.advance();
  };

  // prime the ring
  for (int s = 0; s < kRingStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});
  StageCursor<kRingStages> wait_at;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    load(batch + (kRingStages - 1) * std::size_t{gridDim.x});
    // No token: the cursor's parity names the phase, waited on through the native handle
    // (mbarrier.try_wait.parity on 9.0, mbarrier.test_wait.parity on 8.0).
    std::uint64_t* full_mbar = cuda::device::barrier_native_handle(full_bar[wait_at.stage]);
    course::bounded_wait_parity(full_mbar, wait_at.phase, {"full", wait_at.stage, wait_at.phase});
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems);
    block.sync();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
}
/// [parity]

__global__ void noinc_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                             std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  /// [noinc]
  __shared__ std::uint64_t full_bar[kStages];  // raw mbarriers: 8 bytes of shared memory each
  // TUTORIAL: with .noinc the copies' arrival is one the barrier was initialised to expect:
  // per phase every thread arrives once itself and once when its copies have landed.
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full_bar[s], 2 * blockDim.x);
  }
  __syncthreads();  // every barrier initialised before first use

  const int chunk = threadIdx.x * kChunkElems;
  StageCursor<kStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    __pipeline_memcpy_async(&smem_batch[load_at.stage][chunk],
                            gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    // arrives when this thread's copies have landed
    cuda::ptx::cp_async_mbarrier_arrive_noinc(&full_bar[load_at.stage]);
    (void)cuda::ptx::mbarrier_arrive(&full_bar[load_at.stage]);  // this thread's own arrival
    load_at.advance();
  };
  /// [noinc]

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  StageCursor<kStages> wait_at;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    load(batch + (kStages - 1) * std::size_t{gridDim.x});
    // Every thread's chunk has landed once the phase completes: no __syncthreads needed.
    course::bounded_wait_parity(&full_bar[wait_at.stage], wait_at.phase,
                                {"full", wait_at.stage, wait_at.phase});
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems);
    __syncthreads();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
  // Every wait has returned and no copy is pending: PTX asks for mbarrier.inval before the
  // barriers' shared memory serves another purpose.
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) __mbarrier_inval(&full_bar[s]);
  }
}

/// [launch]
// Chapter 01's grid rule; a block's two buffers still overlap its four batches. Short-lived
// blocks, started in index order, keep the batches in flight neighbours in memory (the lab's
// parity_s2_resident row runs the resident grid). What a block does once: init, fence, one sync.
constexpr int kBatchesPerBlock = 4;
template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_batches) {
  kKernel<<<batch_grid(num_batches, kBatchesPerBlock), kBlockThreads>>>(gmem_in, gmem_out,
                                                                         num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_batches);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"arrive_and_wait", "one buffer: cuda::memcpy_async(block, aligned_size_t<16>, bar), "
     "arrive_and_wait", &launch_batch_grid<arrive_and_wait_kernel>},
    {"arrive_wait_token", "two buffers: arrive for the next batch, compute, then wait(token)",
     &launch_batch_grid<arrive_wait_token_kernel>},
    {"parity", "two buffers: wait on the phase parity through the native mbarrier handle",
     &launch_batch_grid<parity_kernel<kStages>>},
    {"noinc", "raw mbarriers, per-thread 16-byte LDGSTS, cp.async.mbarrier.arrive.noinc",
     &launch_batch_grid<noinc_kernel>},
};

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
course::Comparison verify(Launch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
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
  info.size_rule = course::whole_multiples_of(
      kBatchBytes, "--size must be a whole number of 4 KiB batches (1024 uint32 elements)");
  info.host_model = [](std::ostream& out) {
    print_barrier_model(out, kBlockThreads, static_cast<int>(kBatchBytes));
    print_cursor_walk<StageCursor<kStages>>(out, "two buffers", 6);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
