// Exercise 04.2 (GPU, compute capability 8.0+): the cycle of a block-scope cuda::pipeline.
//
// The kernel below is the lesson's cuda_pipeline kernel with two calls missing. A stage of a
// block-scope pipeline has two barriers, each expecting block.size() arrivals per phase:
//   - "full" (libcu++: produced) completes when every thread has committed its copies of the
//     stage and they have landed; consumer_wait() waits for it;
//   - "empty" (consumed) completes when every thread has finished reading the stage;
//     producer_acquire() waits for it before the stage is refilled.
// The cycle is acquire, copy, commit, wait, release: acquire, copy and wait are there.
// Until you add them the consumers' bounded wait stops the kernel and names the barrier, the
// stage and the phase it waited for. Beware: producer_acquire() has no bounded form; if it can
// never return, the test gives up after a while and says that no bounded wait fired.
// Needs: compute capability 8.0+ (LDGSTS, mbarrier); on other GPUs the test is skipped.
// Check: scripts/exercise.py block_pipeline
#include <cooperative_groups.h>
#include <cuda/pipeline>

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"

namespace exercise {

namespace cg = cooperative_groups;
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kStages = 4;
constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 2048;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 8 KiB, one stage

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

__global__ void __launch_bounds__(kBlockThreads)
    block_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_stages[kStages][kBatchElems];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;  // full + empty per stage
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);  // inits + block sync
  const std::size_t num_mine = (num_batches - blockIdx.x + gridDim.x - 1) / gridDim.x;  // block b: b, b + grid, ...

  auto fetch = [&](std::size_t k, int stage) {
    if (k >= num_mine) return;  // the drain: nothing left to fetch
    pipe.producer_acquire();    // the stage is free: every thread has released it
    cuda::memcpy_async(block, smem_stages[stage], gmem_in + (blockIdx.x + k * gridDim.x) * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), pipe);
    // TODO 1: hand this thread's copies of the stage over to the pipeline.
  };

  for (int s = 0; s < kStages; ++s) fetch(s, s);  // prime
  course::StageCursor<kStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // every thread's copies landed
    const std::uint32_t* smem_batch = smem_stages[cursor.stage];
    std::uint32_t* gmem_out_batch = gmem_out + (blockIdx.x + k * gridDim.x) * kBatchElems;
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
      gmem_out_batch[i] = smooth(smem_batch[(i - 1) & (kBatchElems - 1)], smem_batch[i],
                                 smem_batch[(i + 1) & (kBatchElems - 1)]);
    }
    // TODO 2: tell the pipeline that this thread no longer reads the stage.
    fetch(k + kStages, cursor.stage);  // refill the stage with the batch kStages further on
  }
}

// One block per SM, or max_blocks (if not 0) when fewer, never more blocks than batches.
inline void launch_block_pipeline(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches,
                                  unsigned max_blocks) {
  int device = 0, num_sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  std::size_t grid = static_cast<std::size_t>(num_sms);
  if (max_blocks != 0 && max_blocks < grid) grid = max_blocks;
  if (num_batches < grid) grid = num_batches;
  block_pipeline_kernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_batches);
}

}  // namespace exercise
