// Exercise 01.3 (GPU, compute capability 7.5+): the two block syncs of the batch loop.
//
// The kernel below is the lesson's sync_copy_kernel without its two block.sync() calls. Its copy
// and its compute sit in two functions, copy_share and compute_share, which do what the lesson's
// lines do and one thing more: they play the worst order a GPU may choose. Every warp but the first
// is held back, for at most a millisecond, before its copy until the warp before it has computed
// the batch, and before its compute until the warp before it has copied the block's next batch.
// In a correct kernel neither can happen, so there the holds only run out and cost time; without
// the syncs they make the block compute on what is not there, every time, not now and then.
// Shared memory holds a marker, kNotCopied, before the first batch.
//
// Your task: write the two syncs the batch loop needs (TODO 1 and TODO 2), each with a one-line
// comment saying what it orders. The test prints the first wrong element and what the block read.
// Needs: compute capability 7.5+; on other GPUs the test is skipped.
// Check: scripts/exercise.py batch_syncs
#include <cooperative_groups.h>
#include <cuda/atomic>

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"

namespace exercise {

namespace cg = cooperative_groups;

constexpr int kBlockThreads = 256;
constexpr int kWarps = kBlockThreads / 32;
constexpr int kBatchElems = 1024;                  // a batch is a ring of 1024 elements, as in the lesson
constexpr unsigned kMaxBlocks = 132;               // the grid: one block per batch, at most this many
constexpr std::uint32_t kNotCopied = 0xDEADBEEFu;  // what shared memory holds before the first copy
constexpr unsigned long long kHoldNs = 1000000;    // the longest a warp is held back: 1 ms

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

// ---- The worst order (the test's scaffolding; leave it as it is) ------------------------------

// The last of this block's batches (0, 1, 2, ... in the order the block takes them) each warp has
// copied and computed; -1 before the first.
struct WarpProgress {
  int copied[kWarps];
  int computed[kWarps];
};

__device__ inline unsigned long long now_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Holds the calling warp until `left_progress` reaches `until`, or kHoldNs have passed.
__device__ inline void hold_until(int& left_progress, int until) {
  if (threadIdx.x % 32 == 0) {
    cuda::atomic_ref<int, cuda::thread_scope_block> progress(left_progress);
    const unsigned long long start = now_ns();
    while (progress.load(cuda::std::memory_order_acquire) < until && now_ns() - start < kHoldNs) {
    }
  }
  __syncwarp();
}

// Records that the calling warp has finished step `it` (all its lanes).
__device__ inline void record(int& own_progress, int it) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) {
    cuda::atomic_ref<int, cuda::thread_scope_block>(own_progress).store(it, cuda::std::memory_order_release);
  }
}

// This thread's elements of the batch into shared memory: the lesson's copy line.
__device__ void copy_share(std::uint32_t* smem_batch, const std::uint32_t* gmem_batch, int it,
                           WarpProgress& progress) {
  const int warp = threadIdx.x / 32;
  if (warp > 0) hold_until(progress.computed[warp - 1], it);  // the warp before has computed this batch
  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = gmem_batch[i];
  record(progress.copied[warp], it);
}

// This thread's outputs of the batch from shared memory: the lesson's compute_batch.
__device__ void compute_share(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch, int it,
                              bool block_has_next, WarpProgress& progress) {
  const int warp = threadIdx.x / 32;
  if (warp > 0 && block_has_next) hold_until(progress.copied[warp - 1], it + 1);  // ... has copied the next
  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
    const int left = (i - 1) & (kBatchElems - 1), right = (i + 1) & (kBatchElems - 1);
    gmem_out_batch[i] = smooth(smem_batch[left], smem_batch[i], smem_batch[right]);
  }
  record(progress.computed[warp], it);
}

// ---- The kernel ---------------------------------------------------------------------------------

__global__ void __launch_bounds__(kBlockThreads)
    batch_syncs_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ WarpProgress progress;
  cg::thread_block block = cg::this_thread_block();

  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = kNotCopied;
  if (threadIdx.x < kWarps) progress.copied[threadIdx.x] = progress.computed[threadIdx.x] = -1;
  block.sync();  // the marker and the progress are in place before the loop starts

  int it = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, ++it) {
    const bool block_has_next = batch + gridDim.x < num_batches;
    copy_share(smem_batch, gmem_in + batch * kBatchElems, it, progress);
    // TODO 1
    compute_share(smem_batch, gmem_out + batch * kBatchElems, it, block_has_next, progress);
    // TODO 2
  }
}

inline unsigned grid_for(std::size_t num_batches) {
  return static_cast<unsigned>(num_batches < kMaxBlocks ? num_batches : kMaxBlocks);
}

inline void launch_batch_syncs(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  batch_syncs_kernel<<<grid_for(num_batches), kBlockThreads>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
