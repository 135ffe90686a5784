// Exercise 03.3 (GPU, compute capability 8.0+): bind the copy to the barrier.
//
// The kernel below stages each batch in shared memory and computes on it, like the lesson's
// arrive_and_wait kernel, but five lines are missing: the barrier's initialisation and its proxy
// fence, the fence that orders the marker before the copy, the copy bound to the barrier, and the
// wait. Until you write them the block computes on whatever shared memory holds (the kernel fills
// it with a marker first), and the test shows the first wrong element.
// Write too large a count, or wait on the wrong thing, and the bounded wait stops the kernel and
// names the barrier and phase it waited on.
// Needs: compute capability 8.0+ (mbarrier, LDGSTS); on other GPUs the test is skipped.
// Check: scripts/exercise.py bound_copy
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <cstdint>

#include "course/wait.cuh"

namespace exercise {

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);
constexpr std::uint32_t kNotLanded = 0xDEADBEEFu;  // what shared memory holds before a copy lands

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

__global__ void bound_copy_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // phase k completes when batch k of this block has landed
  cg::thread_block block = cg::this_thread_block();
  // TODO 1: one thread initialises full_bar with the arrivals that complete a phase, and the
  //         block makes that visible before anyone uses the barrier. On 9.0 the copy of TODO 3
  //         is a bulk copy that completes on full_bar through the async proxy: between init()
  //         and the block's sync, fence toward it (fence.proxy.async, the chapter's proxy fence
  //         after init(); only on 9.0: NV_IF_TARGET(NV_PROVIDES_SM_90, ...)).

  std::uint32_t phase = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, phase ^= 1u) {
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = kNotLanded;
    // TODO 2: on 9.0 the bulk copy writes smem_batch through the async proxy, and the marker was
    //         written by ordinary stores: fence them toward the copy (fence.proxy.async) before
    //         the sync, as after init().
    block.sync();  // the marker is written before the copy starts
    // TODO 3: copy batch `batch` of gmem_in into smem_batch with cuda::memcpy_async, as one
    //         collective copy of the block bound to full_bar (16-byte aligned: aligned_size_t<16>).
    // TODO 4: arrive and wait until the phase completes, through course::bounded_wait
    //         (course/wait.cuh) with the name "full", stage 0 and `phase`.
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
      gmem_out[batch * kBatchElems + i] = smooth(smem_batch[(i - 1) & (kBatchElems - 1)], smem_batch[i],
                                                 smem_batch[(i + 1) & (kBatchElems - 1)]);
    }
    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}

inline void launch_bound_copy(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  const int grid = static_cast<int>(num_batches < 264 ? num_batches : 264);
  bound_copy_kernel<<<grid, kBlockThreads>>>(gmem_in, gmem_out, num_batches);
}

}  // namespace exercise
