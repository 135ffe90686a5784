// The worst order, for the two halo exercises of chapter 02 (halo_arrivals.cu, own_copies.cu): the
// tests' scaffolding, which their kernels call around the copies. Leave it as it is; it is not
// part of what the exercises teach.
//
// Every warp but the first is held back before its copies, for at most kHoldNs, until the warp
// before it has computed the tile. A correct kernel computes nothing before every copy has
// landed, so there the hold only runs out and costs time; a kernel that computes too early makes
// the warp before read slots that still hold the marker, kNotLanded, every time, not now and then.
#pragma once

#include <cuda/atomic>

namespace exercise {

constexpr unsigned long long kHoldNs = 1000000;  // 1 ms

// One per block, in shared memory; the kernel sets every entry to -1 before its first tile.
template <int NumWarps>
struct WarpProgress {
  int computed[NumWarps];  // the last of this block's tiles (0, 1, ...) each warp computed; -1 before
};

__device__ inline unsigned long long now_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Before the copies of the block's tile `it`: the calling warp waits (bounded by kHoldNs) until
// the warp before it has computed that tile.
template <int NumWarps>
__device__ inline void hold_before_copies(WarpProgress<NumWarps>& progress, int it) {
  const int warp = threadIdx.x / 32;
  if (warp > 0 && threadIdx.x % 32 == 0) {
    cuda::atomic_ref<int, cuda::thread_scope_block> before(progress.computed[warp - 1]);
    const unsigned long long start = now_ns();
    while (before.load(cuda::std::memory_order_acquire) < it && now_ns() - start < kHoldNs) {
    }
  }
  __syncwarp();  // the whole warp stays held until its first lane lets it go
}

// After the calling warp has computed the block's tile `it`: lets the warp after it go on.
template <int NumWarps>
__device__ inline void record_computed(WarpProgress<NumWarps>& progress, int it) {
  __syncwarp();  // every lane of the warp has computed before the warp says so
  if (threadIdx.x % 32 == 0) {
    cuda::atomic_ref<int, cuda::thread_scope_block>(progress.computed[threadIdx.x / 32])
        .store(it, cuda::std::memory_order_release);
  }
}

}  // namespace exercise
