/// @file
/// @brief The ceiling of the ring smoothing (chapters 04 and 05): the same reads and writes with
/// no shared memory, no copy engine and no barrier.
///
/// Chapter 01's lab row `direct_uint4`, one thread per 16 bytes: each thread reads four elements
/// of its batch and the two beside them straight from global memory (L1 serves the neighbours,
/// which other threads of the warp load too) and writes four results as one 16-byte store. A
/// block holds one batch, the grid one block per batch. The labs of 04 and 05 time it beside
/// their rings (row `no_sync`): what the problem's traffic allows on the GPU in the same run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"

namespace course {

/// Block b smooths batches b, b + gridDim.x, ... (one batch when the grid has a block per batch),
/// thread t its elements 4t .. 4t + 3; Smooth{}(left, centre, right) is the chapter's element
/// function, a batch a ring of kBatchElems elements (a power of two).
template <int kBatchElems, class Smooth>
__global__ void __launch_bounds__(kBatchElems / 4)
    direct_smoothing_kernel(const std::uint32_t* __restrict__ gmem_in,
                            std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index wraps with a mask");
  const Smooth smooth{};
  const int v = threadIdx.x;  // this thread's uint4 of the batch
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    const uint4 c = reinterpret_cast<const uint4*>(gmem_batch)[v];
    const std::uint32_t left = gmem_batch[(4 * v - 1) & (kBatchElems - 1)];
    const std::uint32_t right = gmem_batch[(4 * v + 4) & (kBatchElems - 1)];
    reinterpret_cast<uint4*>(gmem_out + batch * kBatchElems)[v] =
        make_uint4(smooth(left, c.x, c.y), smooth(c.x, c.y, c.z), smooth(c.y, c.z, c.w),
                   smooth(c.z, c.w, right));
  }
}

/// A block of kBatchElems / 4 threads per batch; max_blocks, when not 0, caps the grid (the tests
/// send every batch through one block).
template <int kBatchElems, class Smooth>
void launch_direct_smoothing(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                             std::size_t num_batches, unsigned max_blocks) {
  static_assert(kBatchElems / 4 <= 1024, "a block of one thread per 16 bytes of the batch");
  std::size_t blocks = num_batches;
  if (max_blocks != 0 && max_blocks < blocks) blocks = max_blocks;
  if (blocks == 0) return;
  direct_smoothing_kernel<kBatchElems, Smooth>
      <<<static_cast<unsigned>(blocks), kBatchElems / 4>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}

}  // namespace course
