/// @file
/// @brief The ceiling of the ring smoothing (chapters 04 and 05): the same reads and writes with
/// no shared memory, no copy engine and no barrier.
///
/// Chapter 01's lab row `direct_uint4`, for any batch size: each thread reads 16 bytes of its
/// batch and the two elements beside them straight from global memory (L1 serves the neighbours,
/// which other threads of the warp load too) and writes four results as one 16-byte store. The
/// labs of 04 and 05 time it beside their rings (row `no_sync`): what the problem's traffic allows
/// on the GPU in the same run, whatever stages the bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace course {

/// Block b smooths batches b, b + gridDim.x, ...; Smooth{}(left, centre, right) is the chapter's
/// element function, the batch a ring of kBatchElems elements (a power of two).
template <int kBatchElems, class Smooth>
__global__ void direct_smoothing_kernel(const std::uint32_t* __restrict__ gmem_in,
                                        std::uint32_t* __restrict__ gmem_out,
                                        std::size_t num_batches) {
  static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index wraps with a mask");
  constexpr int kVecs = kBatchElems / 4;
  const Smooth smooth{};
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    for (int v = threadIdx.x; v < kVecs; v += blockDim.x) {
      const uint4 c = reinterpret_cast<const uint4*>(gmem_batch)[v];
      const std::uint32_t left = gmem_batch[(4 * v - 1) & (kBatchElems - 1)];
      const std::uint32_t right = gmem_batch[(4 * v + 4) & (kBatchElems - 1)];
      reinterpret_cast<uint4*>(gmem_out + batch * kBatchElems)[v] =
          make_uint4(smooth(left, c.x, c.y), smooth(c.x, c.y, c.z), smooth(c.y, c.z, c.w),
                     smooth(c.z, c.w, right));
    }
  }
}

}  // namespace course
