// Exercise 02.2 (GPU, compute capability 8.0+): repair the barrier of the per-thread halo copies.
// Solution.
//
// The halo stencil of halo_stencil.cu, grown to four warps: a block stages a window of 144 floats
// (8 on the left, 128 in the centre, 8 on the right) and thread t computes output t from window
// slots t..t+16. Every thread copies its centre float, the first 8 threads the left halo and the
// last 8 the right halo, each float with its own cuda::memcpy_async bound to full_bar (4 bytes
// proven: LDGSTS on 8.0 and 9.0 alike, never a bulk copy), then arrives and waits.
// As written, the kernel never finishes its first tile. Run the test first: the bounded wait
// stops the kernel and names the barrier and the phase that never completed. Work out what
// completes a phase of full_bar, and what each thread's copies add to it (the chapter page's
// cuda::barrier section), then repair the kernel.
// The window holds a marker, kNotLanded, before each tile's copies, and the test plays the worst
// order a GPU may choose (worst_order.cuh, which the kernel calls): a kernel that computes before
// the window has landed reads the marker every time, not now and then.
// Needs: compute capability 8.0+ (LDGSTS, mbarrier); on other GPUs the test is skipped.
// Check: scripts/exercise.py halo_arrivals
#include <cuda/barrier>

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "course/wait.cuh"
#include "worst_order.cuh"  // the test's scaffolding: hold_before_copies, record_computed

namespace exercise {

using block_barrier = cuda::barrier<cuda::thread_scope_block>;
#pragma nv_diag_suppress static_var_with_dynamic_init

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
    halo_arrivals_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_window[kWindowElems];
  __shared__ block_barrier full_bar;  // its phase completes when the whole window has landed
  __shared__ WarpProgress<kWarps> progress;
  // Every thread arrives once per tile; each thread's copies hold the phase open by themselves
  // (the arrive-on adds its own expected arrival and makes it when they land), so they add nothing.
  if (threadIdx.x == 0) init(&full_bar, blockDim.x);
  if (threadIdx.x < kWarps) progress.computed[threadIdx.x] = -1;
  __syncthreads();  // the barrier and the progress are initialised before anyone uses them

  std::uint32_t phase = 0;  // for the diagnosis: the phase this tile completes
  int it = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, ++it, phase ^= 1u) {
    for (int i = threadIdx.x; i < kWindowElems; i += blockDim.x) smem_window[i] = kNotLanded;
    __syncthreads();  // the marker is in place before any copy of this tile starts
    hold_before_copies(progress, it);

    const float* gmem_window = gmem_padded + tile * kTileElems;
    const WindowCopies copies = window_copies(threadIdx.x);
    for (int c = 0; c < copies.count; ++c) {
      cuda::memcpy_async(smem_window + copies.slot[c], gmem_window + copies.slot[c],
                         cuda::aligned_size_t<alignof(float)>(sizeof(float)), full_bar);
    }
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // every thread arrived, every copy landed

    gmem_out[tile * kTileElems + threadIdx.x] = stencil_point(smem_window, threadIdx.x);
    record_computed(progress, it);
    __syncthreads();  // the window is no longer read when the next tile's marker overwrites it
  }
}

// One block per tile, at most max_blocks (kMaxBlocks if 0).
inline void launch_halo_arrivals(const float* gmem_padded, float* gmem_out, std::size_t num_tiles,
                                 unsigned max_blocks) {
  const std::size_t limit = max_blocks == 0 ? kMaxBlocks : max_blocks;
  const unsigned grid = static_cast<unsigned>(num_tiles < limit ? num_tiles : limit);
  halo_arrivals_kernel<<<grid, kBlockThreads>>>(gmem_padded, gmem_out, num_tiles);
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
