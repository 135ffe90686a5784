// 02_memcpy_async: global -> shared copies that skip the register file (LDGSTS).
//
// What you learn: the three APIs that issue an asynchronous global -> shared copy
// (cuda::memcpy_async completing on a cuda::barrier, cooperative_groups::memcpy_async, the
// __pipeline_* primitives), which calls are collective and which per thread, what each thread
// must wait for before it reads a neighbour, and how the alignment the code proves picks the
// instruction (16-byte LDGSTS that bypass L1; on 9.0 sometimes a bulk copy).
// What changed from 01: the copy line `smem_batch[i] = gmem_batch[i]` becomes one call and the
// first block barrier the wait it needs; the compute phase and the second barrier stay.
// Hardware: compute capability 8.0+ (LDGSTS).
// Run: build/02_memcpy_async/memcpy_async [--bench] [--variant=NAME] [--size=64M]
// Guide, 4.11.1 Using LDGSTS:
// https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
// API: cuda::memcpy_async, cuda::aligned_size_t, cuda::barrier (libcudacxx extended API):
//        https://nvidia.github.io/cccl/libcudacxx/extended_api.html
//      cooperative_groups::memcpy_async / wait:
// https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
//      __pipeline_memcpy_async:
// https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/device-callable-apis.html
//      PTX cp.async: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda_pipeline.h>
#include <nv/target>

#include <cstdint>
#include <ostream>
#include <type_traits>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "memcpy_async_model.hpp"  // the grid rule; the instruction each copy becomes, 8.0 and 9.0

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;  // elements a block stages in shared memory at a time
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kChunkBytes = 16;  // the widest LDGSTS
constexpr int kChunkElems = kChunkBytes / sizeof(std::uint32_t);
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index below wraps with a mask");
static_assert(kBatchBytes == kBlockThreads * kChunkBytes,
              "per-thread variants copy one 16-byte chunk per thread");
static_assert(std::is_trivially_copyable_v<std::uint32_t>,
              "memcpy_async copies bytes: only trivially copyable types take the hardware copy");

/// [compute]
// Each output mixes an element with its two neighbours inside the batch (the batch is a
// ring, so every batch is independent of the others).
__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}
/// [compute]

// Host reference: what every variant must produce, bit for bit.
std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      const int left = (i - 1) & (kBatchElems - 1), right = (i + 1) & (kBatchElems - 1);
      out[base + i] = smooth(in[base + left], in[base + i], in[base + right]);
    }
  }
  return out;
}

/// [compute_batch]
// The compute phase every kernel of chapters 01-02 shares. Neighbours were copied by *other*
// threads: that is why the batch goes through shared memory, and why the block must
// synchronise before computing.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
    const int left = (i - 1) & (kBatchElems - 1), right = (i + 1) & (kBatchElems - 1);
    gmem_out_batch[i] = smooth(smem_batch[left], smem_batch[i], smem_batch[right]);
  }
}
/// [compute_batch]

/// [minimal]
// The minimal kernel: one collective cuda::memcpy_async per batch, completing on a cuda::barrier.
// Block k handles batches k, k + gridDim.x, k + 2 * gridDim.x, ... as in chapter 01.
__global__ void cuda_memcpy_async_block_kernel(const std::uint32_t* gmem_in,
                                               std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ cuda::barrier<cuda::thread_scope_block> full_bar;  // a phase completes: a batch landed
  auto block = cooperative_groups::this_thread_block();

  if (threadIdx.x == 0) init(&full_bar, blockDim.x);  // every thread arrives once per batch
  // 9.0: the copy below is a bulk copy, which completes on the barrier through the async proxy;
  // make the barrier that init() wrote with ordinary stores visible to that proxy first.
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  __syncthreads();  // nobody uses the barrier before its initialisation is visible

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // TUTORIAL: a collective call: every thread passes the same arguments. The copy is bound to
    // full_bar: the barrier's current phase cannot complete until the bytes have landed, as if
    // one more thread had to arrive. aligned_size_t<16> promises 16-byte aligned pointers and
    // size: 16-byte LDGSTS on 8.0, one bulk copy of the whole batch on 9.0.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), full_bar);
    full_bar.arrive_and_wait();  // every thread arrived and the copy landed: the batch is visible

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    __syncthreads();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [minimal]

/// [cg_memcpy_async]
__global__ void cg_memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // TUTORIAL: the same collective copy without a barrier: cooperative groups completes it on
    // each thread's commit group (cp.async.commit_group), one 16-byte LDGSTS per thread and
    // 16 bytes, on 8.0 and 9.0 alike.
    cg::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems,
                     cuda::aligned_size_t<16>(kBatchBytes));
    cg::wait(block);  // this thread's copies landed, then the block joins: the batch is visible

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [cg_memcpy_async]

/// [cuda_memcpy_async_thread]
__global__ void cuda_memcpy_async_thread_kernel(const std::uint32_t* gmem_in,
                                                std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // its phase completes when every thread's chunk has landed
  if (threadIdx.x == 0) init(&full_bar, blockDim.x);  // every thread arrives once per batch
  // 9.0: the 16-byte copies below are bulk copies; fence as in the minimal kernel.
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  __syncthreads();  // the initialised barrier is visible before first use

  const int chunk = threadIdx.x * kChunkElems;  // this thread's 16 bytes of the batch
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // The per-thread overload (no group): this thread alone copies its 16 bytes. On 9.0 that is
    // one 16-byte bulk copy per thread, 256 per batch (the model's table: slow).
    cuda::memcpy_async(smem_batch + chunk, gmem_in + batch * kBatchElems + chunk,
                       cuda::aligned_size_t<kChunkBytes>(kChunkBytes), full_bar);
    full_bar.arrive_and_wait();  // every thread's chunk landed: the barrier covers the block

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    __syncthreads();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [cuda_memcpy_async_thread]

/// [pipeline_primitives]
__global__ void pipeline_primitives_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                           std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  const int chunk = threadIdx.x * kChunkElems;

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    __pipeline_memcpy_async(smem_batch + chunk, gmem_in + batch * kBatchElems + chunk,
                            kChunkBytes);
    __pipeline_commit();       // close this thread's group of copies
    __pipeline_wait_prior(0);  // wait for this thread's own copies: not for anyone else's
    __syncthreads();           // so the block synchronises before reading others' chunks

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    __syncthreads();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [pipeline_primitives]

/// [launch]
constexpr int kBatchesPerBlock = 4;  // one block per 4 batches: chapter 01's grid rule

// As in chapter 01: short-lived blocks started in index order keep the batches in flight neighbours
// in memory (chapter 06 measures the effect with a counter; the lab's cg_memcpy_async_resident row
// runs the resident grid instead).
template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_batches) {
  const unsigned num_blocks = batch_grid(num_batches, kBatchesPerBlock);
  kKernel<<<num_blocks, kBlockThreads>>>(gmem_in, gmem_out, num_batches);
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
    {"cg_memcpy_async", "cooperative_groups::memcpy_async + wait, 16-byte copies",
     &launch_batch_grid<cg_memcpy_async_kernel>},
    {"cuda_memcpy_async_block", "cuda::memcpy_async(block, ..., barrier), 16 bytes: bulk on 9.0",
     &launch_batch_grid<cuda_memcpy_async_block_kernel>},
    {"cuda_memcpy_async_thread", "cuda::memcpy_async per thread, 16 bytes each, one barrier",
     &launch_batch_grid<cuda_memcpy_async_thread_kernel>},
    {"pipeline_primitives", "__pipeline_memcpy_async + commit + wait_prior(0) + __syncthreads",
     &launch_batch_grid<pipeline_primitives_kernel>},
};

// Input, expected output and device buffers for `num_batches` batches.
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
  info.program = "memcpy_async";
  info.title = "02 memcpy_async: global -> shared without the register round trip";
  info.explanation =
      "Chapter 01's batches, each copied from global to shared memory by LDGSTS instead of\n"
      "loads and stores: cuda::memcpy_async (collective and per thread, completing on a\n"
      "cuda::barrier), cooperative_groups::memcpy_async and the __pipeline_* primitives, all\n"
      "with 16-byte alignment.";
  info.requirement = {8, 0, false, "cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBatchBytes, "--size must be a whole number of 4 KiB batches "
                                              "(1024 uint32 elements)");
  info.host_model = [](std::ostream& out) {  // the instruction each copy becomes, 8.0 and 9.0
    print_copy_paths(out, batch_copies(kBlockThreads, kBatchBytes), "memcpy_async");
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
