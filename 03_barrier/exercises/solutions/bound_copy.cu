// Exercise 03.3 (GPU, compute capability 8.0+): bind the copy to the barrier. Solution.
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
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // each thread arrives once per phase
  // 9.0: a bulk copy completes on full_bar through the async proxy: fence init() toward it
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  block.sync();  // nobody touches the barrier before its initialisation is visible

  std::uint32_t phase = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, phase ^= 1u) {
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = kNotLanded;
    // 9.0: the bulk copy writes smem_batch through the async proxy: order the marker before it
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
    block.sync();  // the marker is written before the copy starts
    // The bound copy holds the phase open until its bytes have landed.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes),
                       full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // every thread's copies landed
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
