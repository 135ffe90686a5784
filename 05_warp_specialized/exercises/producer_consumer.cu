// Assignment 2 (GPU, compute capability 8.0): a producer warp and consumer warps, written whole.
//
// Write producer_consumer_kernel. Its input is num_batches batches of kBatchElems words (any
// count from 1); block k takes batches k, k + gridDim.x, ... (the launcher below sets the grid).
// Word i of output batch b is smooth(in[b][i - 1], in[b][i], in[b][i + 1]), the indices
// wrapping within the batch (word 0's left neighbour is the batch's last word).
// Warp 0 only copies: with asynchronous copies (cp.async, 16 bytes each) it fills each batch
// into the next stage of a ring of kStages shared-memory buffers (the Ring below). Warps 1 to
// kConsumerWarps only compute: they wait until a stage holds its batch (full_bar[stage]), write
// the batch's outputs, and release the stage (empty_bar[stage]) so that warp 0 may refill it.
// Each role walks the ring with its own course::StageCursor. The arrival counts are yours.
// Bound both waits, the consumers' on full_bar and the producer's on empty_bar, with
// course::bounded_wait_parity (course/wait.cuh) naming the barrier ("full", "empty"), the stage
// and the parity: a wrong count or parity then stops the kernel with that diagnosis, not a hang.
// Bulk copies (cp.async.bulk) into the ring would need the chapter's fence after init on 9.0.
// Speed floor: 0.90x cudaMemcpy device-to-device over 512 MiB, on the GPU that runs the check.
// Reread: warp_specialized.cu, the mbarrier variant (and the README's "What to remember").
// Needs: compute capability 8.0+ (LDGSTS, mbarrier); on other GPUs the test is skipped.
// Check: scripts/exercise.py producer_consumer
#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstddef>
#include <cstdint>

#include "course/batch_grid.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"

namespace exercise {

constexpr int kWarpThreads = 32;
constexpr int kConsumerWarps = 4;                                   // warps 1 to 4 compute
constexpr int kBlockThreads = (1 + kConsumerWarps) * kWarpThreads;  // warp 0 copies: 160
constexpr int kStages = 2;                                          // buffers in the ring
constexpr int kBatchElems = 2048;  // 32-bit words per batch: one batch fills one stage (8 KiB)

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}

// A block's shared memory: declare one `__shared__ Ring ring;` in the kernel.
struct Ring {
  alignas(16) std::uint32_t buffer[kStages][kBatchElems];  // stage s holds one whole batch
  std::uint64_t full_bar[kStages];   // mbarrier: stage s holds its batch (the copies landed)
  std::uint64_t empty_bar[kStages];  // mbarrier: no consumer reads stage s any more
};

// Arrives once on the mbarrier `bar` when every cp.async this thread has issued so far has
// landed; .noinc: the arrival is one of those the barrier was initialised to expect.
__device__ inline void arrive_when_copies_land(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(
                   static_cast<std::uint32_t>(__cvta_generic_to_shared(bar)))
               : "memory");
}

__global__ void __launch_bounds__(kBlockThreads)
    producer_consumer_kernel(const std::uint32_t* __restrict__ gmem_in,
                             std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  // TODO: write this kernel (the spec is above)
}

// Chapter 01's grid: one short-lived block per kBatchesPerBlock batches, at most max_blocks
// blocks when it is not 0 (a test sends many batches through one block that way).
constexpr int kBatchesPerBlock = 4;

inline void launch_producer_consumer(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                     std::size_t num_batches, unsigned max_blocks) {
  if (num_batches == 0) return;  // no batch, no block (a grid of 0 blocks is a launch error)
  const unsigned grid = course::batch_grid(num_batches, kBatchesPerBlock, max_blocks);
  producer_consumer_kernel<<<grid, kBlockThreads>>>(gmem_in, gmem_out, num_batches);
}

}  // namespace exercise
