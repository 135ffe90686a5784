// Assignment 3 (GPU, compute capability 9.0): a one-dimensional TMA ring, from an empty body.
//
// Write tma_ring_kernel: out[i] = modify(in[i]) for every uint32 element of the array, nothing
// written past its end. The array is any multiple of 16 bytes (16 B to 512 MiB and more), cut in
// tiles of kStageBytes; the last tile holds what is left. Block b takes tiles b, b + gridDim.x,
// b + 2 gridDim.x, ...: one tile or hundreds per block, one block or one per SM.
// Each tile comes in with one bulk copy (cp.async.bulk, global -> shared) into a ring of kStages
// stages, is modified in shared memory, and goes back with one bulk store (shared -> global).
// - Warp 0 is the producer: one elected lane issues every load. Warps 1-8 are the consumers.
// - Each stage has a `full` barrier (the producer's arrive.expect_tx with the tile's bytes,
//   completed by the copy) and an `empty` barrier (released once the stage's bulk store has
//   read it). Each role walks its tiles with its own course::StageCursor.
// - The fences: after the barriers' init, before the TMA uses them; between the consumers'
//   writes to a stage and the bulk store that reads it. Every barrier wait bounded
//   (course::bounded_wait_parity), so a wrong count or parity is named, not a hang.
// - Dynamic shared memory (launch_tma_ring sets it): kStages tiles of kStageBytes, then kStages
//   `full` barriers, then kStages `empty` barriers (8 bytes each).
// Speed: at least 0.85 x cudaMemcpy device-to-device over 512 MiB, on the GPU the check runs on
// (the floor is kSpeedFloor in tma_ring_test.cu). Reread the lesson's ring_kernel (tma_1d.cu) and
// README.md "The ring: full and empty barriers"; chapter 01 for bytes in flight.
// Needs: compute capability 9.0 (cp.async.bulk, mbarrier expect-tx); elsewhere the test is skipped.
// Check: scripts/exercise.py tma_ring
#include <cuda/ptx>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "course/device.hpp"        // course::query_device
#include "course/elect.cuh"         // course::elect_one_lane, course::elect_tma_leader
#include "course/stage_cursor.hpp"  // course::StageCursor
#include "course/wait.cuh"          // course::bounded_wait_parity
#include "tma_1d_model.hpp"  // modify, num_tiles_of, tile_bytes_of, ring_smem_bytes, the rules

namespace exercise {

namespace ptx = cuda::ptx;

// Six stages of one 32 KiB tile each: up to 192 KiB of loads in flight per SM (the lesson's
// ring: 128 KiB), with one block per SM.
constexpr int kStages = 6;
constexpr std::size_t kStageBytes = 32 * 1024;
constexpr std::size_t kStageElems = kStageBytes / sizeof(std::uint32_t);
constexpr int kConsumerThreads = 256;                  // warps 1-8
constexpr int kBlockThreads = 32 + kConsumerThreads;  // warp 0: the producer
constexpr std::size_t kSmemBytes = ring_smem_bytes(kStages, kStageBytes);  // tiles, full, empty
static_assert(is_legal_tile(kStageBytes), "a stage: 16-byte units, < 1 MiB per barrier phase");

// A block sync of the consumer warps alone (named barrier 1; __syncthreads is barrier 0).
__device__ inline void consumers_sync() {
  asm volatile("bar.sync 1, %0;" : : "n"(kConsumerThreads) : "memory");
}

__global__ void __launch_bounds__(kBlockThreads)
    tma_ring_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  // TODO: write this kernel (the spec is above)
}

// A persistent grid: one block per SM (on 9.0 the ring's shared memory leaves no room for a
// second), at most max_blocks of them (0: no limit), never more blocks than tiles.
inline void launch_tma_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                            std::size_t num_bytes, unsigned max_blocks) {
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);  // 16-byte units, aligned: or one line
  if (num_bytes == 0) return;
  static const course::DeviceInfo gpu = course::query_device();  // SMs, shared-memory opt-in
  if (auto broken = smem_plan_problem(kSmemBytes, gpu.smem_per_block_optin)) {
    throw course::UsageError(*broken);
  }
  // Over 48 KiB of shared memory per block: dynamic, and only with this opt-in, which lasts
  // (made once, so that no timed launch waits for it).
  static const cudaError_t opted_in = cudaFuncSetAttribute(
      tma_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemBytes));
  COURSE_CHECK(opted_in);
  std::size_t grid = static_cast<std::size_t>(gpu.sm_count);
  if (max_blocks != 0 && max_blocks < grid) grid = max_blocks;
  grid = std::min(grid, num_tiles_of(num_bytes, kStageBytes));
  tma_ring_kernel<<<static_cast<unsigned>(grid), kBlockThreads, kSmemBytes>>>(gmem_in, gmem_out,
                                                                            num_bytes);
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
