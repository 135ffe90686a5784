// Assignment 2 (GPU, compute capability 8.0): a producer warp and consumer warps. Solution.
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
  __shared__ Ring ring;
  constexpr int kChunkElems = 4;                           // one 16-byte copy, one 16-byte store
  constexpr int kBatchChunks = kBatchElems / kChunkElems;  // 512 per batch
  constexpr int kConsumerThreads = kConsumerWarps * kWarpThreads;
  static_assert(kBatchChunks % kWarpThreads == 0 && kBatchChunks % kConsumerThreads == 0,
                "every producer lane and every consumer thread has as many chunks as the others");
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      // full: each producer lane's copies arrive once, when they have all landed (.noinc).
      cuda::ptx::mbarrier_init(&ring.full_bar[s], std::uint32_t{kWarpThreads});
      // empty: each consumer warp arrives once, after the last read of its lanes.
      cuda::ptx::mbarrier_init(&ring.empty_bar[s], std::uint32_t{kConsumerWarps});
    }
  }
  __syncthreads();  // the barriers are initialised before any thread arrives or waits

  const int lane = threadIdx.x % kWarpThreads;
  course::StageCursor<kStages> cursor;  // this role's place in the ring, advanced per batch
  if (threadIdx.x < kWarpThreads) {     // warp 0: the producer
    for (std::size_t b = blockIdx.x; b < num_batches; b += gridDim.x, cursor.advance()) {
      // The stage is free once its consumers released the batch it held one round ago: the
      // phase before the cursor's, which a fresh barrier counts as complete (round 0).
      const std::uint32_t released = cursor.phase ^ 1u;
      course::bounded_wait_parity(&ring.empty_bar[cursor.stage], released,
                                  {"empty", cursor.stage, released});
      const std::uint32_t* src = gmem_in + b * kBatchElems;
      std::uint32_t* dst = ring.buffer[cursor.stage];
      for (int c = lane; c < kBatchChunks; c += kWarpThreads) {  // 512 contiguous bytes a step
        __pipeline_memcpy_async(dst + c * kChunkElems, src + c * kChunkElems, 16);
      }
      arrive_when_copies_land(&ring.full_bar[cursor.stage]);
    }
  } else {  // warps 1 to kConsumerWarps: the consumers
    const int consumer = threadIdx.x - kWarpThreads;
    for (std::size_t b = blockIdx.x; b < num_batches; b += gridDim.x, cursor.advance()) {
      course::bounded_wait_parity(&ring.full_bar[cursor.stage], cursor.phase,
                                  {"full", cursor.stage, cursor.phase});
      const std::uint32_t* words = ring.buffer[cursor.stage];
      uint4* out = reinterpret_cast<uint4*>(gmem_out + b * kBatchElems);
      for (int c = consumer; c < kBatchChunks; c += kConsumerThreads) {
        const int first = c * kChunkElems;
        const uint4 w = reinterpret_cast<const uint4*>(words)[c];
        const std::uint32_t before = words[(first + kBatchElems - 1) % kBatchElems];
        const std::uint32_t after = words[(first + kChunkElems) % kBatchElems];
        out[c] = make_uint4(smooth(before, w.x, w.y), smooth(w.x, w.y, w.z),
                            smooth(w.y, w.z, w.w), smooth(w.z, w.w, after));
      }
      __syncwarp();  // every lane of this warp is done with the stage: one arrival says so
      if (lane == 0) (void)cuda::ptx::mbarrier_arrive(&ring.empty_bar[cursor.stage]);
    }
  }
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
