// Exercise 05.2 (GPU, compute capability 8.0+): hand the buffer back.
//
// The lesson's raw kernel, one producer warp and four consumer warps around a ring of two
// buffers, with the hand-back from the consumers to the producer broken in two places:
//   - the producer waits on empty_bar[stage] before it refills a buffer, but for the wrong phase;
//   - the consumers never tell empty_bar[stage] that they have finished reading a buffer.
// The copies, full_bar and the consumers' wait are right. The bounded waits stop the kernel and
// name the barrier, stage and phase they waited for: read that diagnosis, repair the wait, and it
// names the next problem, in a later round. The chapter's host model (run_ring) and exercise 05.1
// replay the same ring on the CPU.
// Needs: compute capability 8.0+ (LDGSTS, mbarrier); on other GPUs the test is skipped.
// Check: scripts/exercise.py hand_back
#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstddef>
#include <cstdint>

#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "warp_specialized_model.hpp"  // the block's shape, the batch, the counts, producer_chunk()

namespace exercise {

constexpr int kStages = 2;

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

// Arrives once on `bar` when every cp.async this thread has issued so far has landed (.noinc:
// one of the kFullArrivals the barrier expects).
__device__ inline void arrive_when_copies_land(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(
                   static_cast<std::uint32_t>(__cvta_generic_to_shared(bar)))
               : "memory");
}

__global__ void __launch_bounds__(kBlockThreads)
    hand_back_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batches[kStages * kBatchElems];  // [kStages][kBatchElems]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];   // buffer `stage` holds a complete batch
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];  // buffer `stage` may be overwritten
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kFullArrivals});    // one per producer lane
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kEmptyArrivals});  // one per consumer warp
    }
  }
  __syncthreads();  // every thread sees initialised barriers before anyone arrives or waits

  course::StageCursor<kStages> cursor;
  if (threadIdx.x / kWarpThreads == 0) {  // the producer warp
    const int lane_idx = threadIdx.x;
    for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, cursor.advance()) {
      // TODO 1: which phase of empty_bar[stage] has to be complete before this buffer may be
      //         refilled? (Think of round 0, when no consumer has released anything yet.)
      const std::uint32_t free_parity = cursor.phase;
      course::bounded_wait_parity(&empty_bar[cursor.stage], free_parity, {"empty", cursor.stage, free_parity});
      for (int k = 0; k < kChunksPerProducer; ++k) {
        const ChunkCopy copy = producer_chunk(batch, cursor.stage, lane_idx, k);
        __pipeline_memcpy_async(smem_batches + copy.smem_elem, gmem_in + copy.gmem_elem, kChunkBytes);
      }
      arrive_when_copies_land(&full_bar[cursor.stage]);  // one of kFullArrivals, when this lane's chunks land
    }
  } else {  // the consumer warps
    const int consumer_idx = threadIdx.x - kProducerThreads;
    for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, cursor.advance()) {
      course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
      const std::uint32_t* smem_batch = smem_batches + cursor.stage * kBatchElems;
      std::uint32_t* gmem_out_batch = gmem_out + batch * kBatchElems;
      for (int i = consumer_idx; i < kBatchElems; i += kConsumerThreads) {
        gmem_out_batch[i] = smooth(smem_batch[(i - 1) & (kBatchElems - 1)], smem_batch[i],
                                   smem_batch[(i + 1) & (kBatchElems - 1)]);
      }
      // TODO 2: give the buffer back to the producer, as empty_bar's count (kEmptyArrivals)
      //         expects, and only once no lane of this warp reads it any more.
    }
  }
}

// At most max_blocks blocks (never more than there are batches); each loops over its batches.
inline void launch_hand_back(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                             unsigned max_blocks) {
  const std::size_t grid = num_batches < max_blocks ? num_batches : max_blocks;
  hand_back_kernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_batches);
}

}  // namespace exercise
