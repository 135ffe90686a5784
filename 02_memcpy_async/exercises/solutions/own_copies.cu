// Exercise 02.3 (GPU, compute capability 8.0+): wait for the copies with the pipeline primitives.
// Solution.
//
// The same four-warp halo stencil as exercise 02.2 (thread t computes output t from window slots
// t..t+16 of a 144-float window), its copies issued with __pipeline_memcpy_async: one float each,
// every thread its centre float, the first 8 threads the left halo and the last 8 the right halo.
// Nothing waits for them yet: each thread computes as soon as it has issued its copies.
// Your task (TODO): make the whole window visible to every thread before it computes, with the
// primitives alone (no barrier object). The test prints the first wrong output and how many of
// the slots it summed had not landed.
// The window holds a marker, kNotLanded, before each tile's copies, and the test plays the worst
// order a GPU may choose (worst_order.cuh, which the kernel calls): a kernel that computes before
// the window has landed reads the marker every time, not now and then.
// Needs: compute capability 8.0+ (LDGSTS); on other GPUs the test is skipped.
// Check: scripts/exercise.py own_copies
#include <cuda_pipeline.h>

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "worst_order.cuh"  // the test's scaffolding: hold_before_copies, record_computed

namespace exercise {

constexpr int kWarps = 4;
constexpr int kBlockThreads = 32 * kWarps;
constexpr int kHalo = 8;                                  // neighbours on each side of a tile
constexpr int kTileElems = kBlockThreads;                 // one output per thread
constexpr int kWindowElems = kHalo + kTileElems + kHalo;  // slot k holds window element k
constexpr unsigned kMaxBlocks = 132;
constexpr float kNotLanded = 1048576.0f;  // 2^20: what the window holds before a copy lands

// out[i] = in[i - 8] + ... + in[i + 8]; the padded input starts 8 elements before tile 0.
__device__ inline float stencil_point(const float* smem_window, int t) {
  float sum = 0;
  for (int k = 0; k <= 2 * kHalo; ++k) sum += smem_window[t + k];
  return sum;
}

// Which window slots thread t fills (slot k from window element k).
struct WindowCopies {
  int count;
  int slot[2];
};
__device__ inline WindowCopies window_copies(int t) {
  if (t < kHalo) return {2, {t, kHalo + t}};                            // left halo and centre
  if (t >= kTileElems - kHalo) return {2, {kHalo + t, 2 * kHalo + t}};  // centre and right halo
  return {1, {kHalo + t, 0}};
}

__global__ void __launch_bounds__(kBlockThreads)
    own_copies_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_window[kWindowElems];
  __shared__ WarpProgress<kWarps> progress;
  if (threadIdx.x < kWarps) progress.computed[threadIdx.x] = -1;

  int it = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, ++it) {
    for (int i = threadIdx.x; i < kWindowElems; i += blockDim.x) smem_window[i] = kNotLanded;
    __syncthreads();  // the marker (and the first time the progress) is in place before any copy
    hold_before_copies(progress, it);

    const float* gmem_window = gmem_padded + tile * kTileElems;
    const WindowCopies copies = window_copies(threadIdx.x);
    for (int c = 0; c < copies.count; ++c) {
      __pipeline_memcpy_async(smem_window + copies.slot[c], gmem_window + copies.slot[c], sizeof(float));
    }
    __pipeline_commit();       // close this thread's group: its one or two copies
    __pipeline_wait_prior(0);  // this thread's copies have landed, and nobody else's yet...
    __syncthreads();           // ...so the block joins: now every thread's have

    gmem_out[tile * kTileElems + threadIdx.x] = stencil_point(smem_window, threadIdx.x);
    record_computed(progress, it);
    __syncthreads();  // the window is no longer read when the next tile's marker overwrites it
  }
}

// One block per tile, at most max_blocks (kMaxBlocks if 0).
inline void launch_own_copies(const float* gmem_padded, float* gmem_out, std::size_t num_tiles, unsigned max_blocks) {
  const std::size_t limit = max_blocks == 0 ? kMaxBlocks : max_blocks;
  const unsigned grid = static_cast<unsigned>(num_tiles < limit ? num_tiles : limit);
  own_copies_kernel<<<grid, kBlockThreads>>>(gmem_padded, gmem_out, num_tiles);
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
