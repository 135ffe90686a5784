// Exercise 11.2 (GPU, compute capability 8.0+): a block with more than 48 KiB of shared memory. Solution.
//
// The kernel below reverses spans of words through shared memory: each block copies its span into
// dynamic shared memory and writes it back in reverse order, every word mixed with a word of a
// 4 KiB table that the block keeps in a static __shared__ array. The test launches it with spans of
// 16 KiB, 64 KiB and the largest the device can give one block. Until the launcher is right, every
// launch above 48 KiB is refused, and the test prints the launch error.
//
// Your task: complete launch_reverse() so that every span the device can hold launches, whatever
// the order of the sizes, and no call fails. Mind that the kernel's static shared memory comes out
// of the same per-block limit as its dynamic shared memory. Useful: cudaFuncGetAttributes
// (sharedSizeBytes) and the device attribute cudaDevAttrMaxSharedMemoryPerBlockOptin, which the
// test also uses to choose the largest span.
// Needs: compute capability 8.0+; on other GPUs the test is skipped.
// Check: scripts/exercise.py big_block
#include <cstddef>
#include <cstdint>

#include "course/check.hpp"

namespace exercise {

constexpr int kBlockThreads = 256;
constexpr int kTableWords = 1024;  // the static table: 4 KiB

__global__ void __launch_bounds__(kBlockThreads)
    reverse_span_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, const std::uint32_t* gmem_table,
                        std::size_t span_words) {
  extern __shared__ uint4 smem_span_raw[];  // [span_words] uint32: sized at launch
  auto* smem_span = reinterpret_cast<std::uint32_t*>(smem_span_raw);
  __shared__ std::uint32_t smem_table[kTableWords];  // static: counts against the same per-block limit
  const std::uint32_t* span_in = gmem_in + blockIdx.x * span_words;
  for (int i = threadIdx.x; i < kTableWords; i += blockDim.x) smem_table[i] = gmem_table[i];
  for (std::size_t i = threadIdx.x; i < span_words; i += blockDim.x) smem_span[i] = span_in[i];
  __syncthreads();  // the whole span and the table are in shared memory before any word is read back
  for (std::size_t i = threadIdx.x; i < span_words; i += blockDim.x) {
    gmem_out[blockIdx.x * span_words + i] = smem_span[span_words - 1 - i] ^ smem_table[i % kTableWords];
  }
}

// One block per span of span_bytes (a multiple of 16).
inline void launch_reverse(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, const std::uint32_t* gmem_table,
                           std::size_t num_spans, std::size_t span_bytes) {
  // A block may take more than 48 KiB (static included) only after this per-function opt-in. The
  // value is the dynamic part alone; it plus the kernel's static shared memory may not exceed
  // sharedMemPerBlockOptin, or cudaFuncSetAttribute itself refuses it. Set on every call: each
  // launch may ask for another size, and a launch above the value set last would be refused.
  COURSE_CHECK(cudaFuncSetAttribute(reverse_span_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(span_bytes)));
  reverse_span_kernel<<<static_cast<unsigned>(num_spans), kBlockThreads, span_bytes>>>(
      gmem_in, gmem_out, gmem_table, span_bytes / sizeof(std::uint32_t));
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
