// Assignment 3 (GPU, compute capability 9.0): a one-dimensional TMA ring, from an empty body.
// Solution.
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
  extern __shared__ __align__(128) unsigned char smem[];
  auto* smem_tiles = reinterpret_cast<std::uint32_t*>(smem);  // [kStages][kStageElems]
  auto* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageBytes);  // [kStages]
  std::uint64_t* empty_bar = full_bar + kStages;                                      // [kStages]
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageBytes);
  // The warp index, made warp-uniform: every lane of a warp takes the same role below.
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);

  if (course::elect_tma_leader()) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], 1);   // one arrival a phase: the producer's, with bytes
      ptx::mbarrier_init(&empty_bar[s], 1);  // one arrival a phase: the store lane's
    }
    // The init is a generic-proxy write; the copies complete the barrier through the async
    // proxy: this fence orders the first before the second.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // no thread uses a barrier before it is initialised

  course::StageCursor<kStages> cursor;  // one per role; both roles walk the same tiles
  if (warp == 0) {
    if (course::elect_one_lane()) {  // the producer: one lane, the same one every time
      for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
        // The stage is free once its previous tile has been stored. Parity phase ^ 1: in the
        // first round that is the phase before a fresh barrier's first, complete already.
        const std::uint32_t freed = cursor.phase ^ 1u;
        course::bounded_wait_parity(&empty_bar[cursor.stage], freed,
                                    {"empty", cursor.stage, freed});
        const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);  // last: short
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                       &full_bar[cursor.stage], bytes);
        ptx::cp_async_bulk(ptx::space_shared, ptx::space_global,
                           smem_tiles + cursor.stage * kStageElems, gmem_in + tile * kStageElems,
                           bytes, &full_bar[cursor.stage]);
      }
    }
    return;  // the loads still in flight complete on `full`, which the consumers wait for
  }

  const unsigned rank = threadIdx.x - 32;  // 0 .. kConsumerThreads - 1
  const bool is_store_lane = warp == 1 && course::elect_one_lane();  // all of warp 1 elects
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});  // the bytes have landed
    std::uint32_t* stage = smem_tiles + cursor.stage * kStageElems;
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
    uint4* vecs = reinterpret_cast<uint4*>(stage);  // 16-byte shared accesses
    for (unsigned v = rank; v < bytes / sizeof(uint4); v += kConsumerThreads) {
      const uint4 x = vecs[v];
      vecs[v] = make_uint4(modify(x.x), modify(x.y), modify(x.z), modify(x.w));
    }
    ptx::fence_proxy_async(ptx::space_shared);  // these writes, visible to the bulk store
    consumers_sync();  // every consumer has written and fenced its part
    if (is_store_lane) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_out + tile * kStageElems,
                         stage, bytes);
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // it has read the stage ...
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                           &empty_bar[cursor.stage]);  // ... so the producer may refill it
    }
  }
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
