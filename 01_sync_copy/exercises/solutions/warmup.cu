// Exercise 01.0, the warm-up (GPU, any CUDA GPU the course builds for: compute capability 7.5+).
//
// Before the course's first chapter, two kernels every CUDA programmer writes, from an empty body.
// They check the prerequisites: indexing a grid, a loop over more elements than threads, shared
// memory and __syncthreads(). Integers, so that every answer is exact.
//
//   1. axpy_kernel: y[i] = a * x[i] + y[i] for every i < n (unsigned arithmetic, wrapping),
//      whatever n is, with the grid the launcher gives (fewer threads than elements for large n).
//   2. tile_sum_kernel: block b writes into sums[b] the sum (wrapping) of x[b * kTileElems] up to
//      x[(b + 1) * kTileElems - 1], stopping at n for the last tile: kBlockThreads threads, the
//      tile staged in shared memory, added up by a tree reduction with __syncthreads() between
//      its steps. Write nothing outside sums[0 .. tiles - 1].
//
// Your task: write both bodies (TODO 1 and TODO 2). The launchers are given; do not change them.
// The test runs sizes from 1 element to a few million, poisons the outputs first, checks the
// guard bands after them and says which element or tile is wrong and what it holds.
// Needs: any GPU of compute capability 7.5 or newer; on a machine without one the test is skipped.
// Check: scripts/exercise.py warmup
#include <cstddef>
#include <cstdint>

#include "course/check.hpp"

namespace exercise {

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 2 * kBlockThreads;  // each thread adds two elements before the tree
constexpr unsigned kMaxAxpyBlocks = 1024;      // a large n gets fewer threads than elements

__global__ void axpy_kernel(std::uint32_t a, const std::uint32_t* x, std::uint32_t* y, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void tile_sum_kernel(const std::uint32_t* x, std::uint32_t* sums, std::size_t n) {
  __shared__ std::uint32_t smem_partial[kBlockThreads];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTileElems;
  const std::size_t first = base + threadIdx.x, second = first + kBlockThreads;
  smem_partial[threadIdx.x] = (first < n ? x[first] : 0u) + (second < n ? x[second] : 0u);
  __syncthreads();  // every partial written before any thread reads its partner's
  for (int half = kBlockThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) smem_partial[threadIdx.x] += smem_partial[threadIdx.x + half];
    __syncthreads();  // this step's sums written before the next step reads them
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = smem_partial[0];
}

inline void launch_axpy(std::uint32_t a, const std::uint32_t* x, std::uint32_t* y, std::size_t n) {
  if (n == 0) return;
  const std::size_t wanted = (n + kBlockThreads - 1) / kBlockThreads;
  const unsigned blocks = wanted < kMaxAxpyBlocks ? static_cast<unsigned>(wanted) : kMaxAxpyBlocks;
  axpy_kernel<<<blocks, kBlockThreads>>>(a, x, y, n);
  COURSE_CHECK(cudaGetLastError());
}

inline std::size_t num_tiles(std::size_t n) { return (n + kTileElems - 1) / kTileElems; }

inline void launch_tile_sum(const std::uint32_t* x, std::uint32_t* sums, std::size_t n) {
  if (n == 0) return;
  tile_sum_kernel<<<static_cast<unsigned>(num_tiles(n)), kBlockThreads>>>(x, sums, n);
  COURSE_CHECK(cudaGetLastError());
}

}  // namespace exercise
