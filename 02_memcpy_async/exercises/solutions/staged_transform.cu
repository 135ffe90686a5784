// Assignment 1 (GPU, compute capability 8.0+): write the copy-and-compute kernel of 01-02 whole.
// Solution.
//
// Write staged_transform_kernel. Its input is num_batches batches (any number from 1 up) of
// kBatchElems 32-bit words, both pointers 16-byte aligned; block b takes batches b, b + gridDim.x,
// ... (the launch below sets the grid). For each batch: copy it from global to shared memory with
// memcpy_async in its block-wide form (every thread calls it with the same arguments), wait until
// the whole batch has landed for every thread, then write output word i of the batch as
// smooth(word i - 1, word i, word i + 1) of the staged batch, taken as a ring (word 0's left
// neighbour is word kBatchElems - 1, the last word's right neighbour is word 0). No copy may
// overwrite the batch while a thread still reads it; nothing is written past the output.
// Graded bit for bit from one batch to the whole GPU, then on speed: over 512 MiB at least 0.90x
// cudaMemcpy device-to-device of the same bytes, on the GPU that runs the check.
// Reread memcpy_async.cu: its cg_memcpy_async and minimal kernels. Wait on a cuda::barrier with
// course::bounded_wait (docs/bounded_wait.md), so that a wrong count stops with a diagnosis, not
// a hang; on 9.0 a block-wide cuda::memcpy_async on it is a bulk copy: fence init() as the minimal
// kernel does.
// Needs: compute capability 8.0+ (LDGSTS); on other GPUs the test is skipped.
// Check: scripts/exercise.py staged_transform
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <cstddef>
#include <cstdint>

#include "course/batch_grid.hpp"
#include "course/check.hpp"
#include "course/wait.cuh"

namespace exercise {

namespace cg = cooperative_groups;
#pragma nv_diag_suppress static_var_with_dynamic_init  // a __shared__ cuda::barrier: init() does the work

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kBatchesPerBlock = 4;  // chapter 01's grid rule: one block for every 4 batches
// On 8.0 and 9.0, 8 blocks of 256 threads fill an SM's 2048 threads: 8 batches of 4 KiB, 32 KiB,
// in flight per SM.
constexpr int kBlocksPerSm = 8;
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "a ring index may wrap with a mask");

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}

__global__ void __launch_bounds__(kBlockThreads, kBlocksPerSm)
    staged_transform_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // Collective: all threads pass the same arguments and the library deals the 16-byte chunks
    // out among them. aligned_size_t<16> proves the alignment: one 16-byte LDGSTS per thread
    // (cp.async.cg, past L1), on 8.0 and 9.0 alike; each thread's chunk joins its commit group.
    cg::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes));
    cg::wait(block);  // this thread's chunk landed, then the block joins: now every chunk has

    std::uint32_t* gmem_out_batch = gmem_out + batch * kBatchElems;
    for (int i = threadIdx.x; i < kBatchElems; i += kBlockThreads) {
      const std::uint32_t left = smem_batch[(i - 1) & (kBatchElems - 1)];  // the batch is a ring
      const std::uint32_t right = smem_batch[(i + 1) & (kBatchElems - 1)];
      gmem_out_batch[i] = smooth(left, smem_batch[i], right);
    }
    block.sync();  // every thread is done reading the batch before the next copy overwrites it
  }
}

// The lesson's launch: one block of 256 threads for every 4 batches, at most max_blocks blocks
// when it is not 0 (then each block handles more batches).
inline void launch_staged_transform(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                                    unsigned max_blocks = 0) {
  if (num_batches == 0) return;  // nothing to copy
  const unsigned num_blocks = course::batch_grid(num_batches, kBatchesPerBlock, max_blocks);
  staged_transform_kernel<<<num_blocks, kBlockThreads>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
