// Exercise 06.3 (GPU, compute capability 9.0): repair the ring's announcement. Solution.
//
// This is the lab's counter ring (counter_sync_ring), made smaller (4 stages of 8 KiB in static shared
// memory), with one thing wrong: what the leader announces on a stage's barrier when it fills the
// stage. Run the test first. The bounded wait stops the kernel and names the barrier, the stage
// and the phase that never completed. Work out which fills announce bytes that never arrive
// (the sizes the tests use are a clue), then repair take_and_load so that every number the
// counter hands out completes its stage's phase exactly when its data has landed.
// Exercise 06.1 asks the same question on the model barrier.
// Needs: compute capability 9.0 (cp.async.bulk, expect-tx); on other GPUs the test is skipped.
// Check: scripts/exercise.py ring_repair
#include <cuda/ptx>

#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_1d_model.hpp"  // modify, num_tiles_of, tile_bytes_of, is_legal_tile

namespace exercise {

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;
constexpr int kStages = 4;
constexpr std::size_t kStageBytes = 8 * 1024;
constexpr std::size_t kStageElems = kStageBytes / sizeof(std::uint32_t);
static_assert(is_legal_tile(kStageBytes), "a stage: whole 16-byte units, at most 2^20 - 1 bytes per phase");
static_assert(kStages >= 2, "a stage's tile number is ordered by the block sync of the next stage's write-back");

// Shared -> global with one bulk store; returns once the store has read the tile (as in the lesson).
__device__ void write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile, std::uint32_t bytes,
                                bool is_leader) {
  ptx::fence_proxy_async(ptx::space_shared);  // my st.shared become visible to the async proxy
  __syncthreads();                            // every thread has written and fenced before the store
  if (is_leader) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_dst, smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();                     // the store is one bulk group of this thread
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // it has read the tile: the stage may be refilled
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    ring_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                unsigned long long* gmem_next_tile) {
  __shared__ alignas(128) unsigned char smem_tiles[kStages * kStageBytes];  // [kStages][kStageBytes]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];                   // stage s holds its tile
  __shared__ unsigned long long stage_tile[kStages];  // the tile number each stage took (>= num_tiles: none)
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageBytes);
  const bool is_leader = course::elect_tma_leader();

  // The leader takes the next tile number and fills `stage` with it.
  auto take_and_load = [&](int stage) {
    const unsigned long long tile = atomicAdd(gmem_next_tile, 1ull);
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);  // the last tile may be shorter
      // The only arrival of the phase, carrying exactly the bytes the copy will deliver.
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage],
                                           bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tiles + stage * kStageBytes,
                         gmem_in + tile * kStageElems, bytes, &full_bar[stage]);
    } else {
      // No copy, so no bytes: the plain arrival completes the phase, which then says "none left".
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
    }
  };

  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);         // visible to the async proxy
    for (int s = 0; s < kStages; ++s) take_and_load(s);                      // prime the ring
  }
  __syncthreads();  // barriers initialised, first tile numbers written

  for (course::StageCursor<kStages> cursor;; cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // none left: the same answer in every thread
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageBytes);
    for (std::uint32_t i = threadIdx.x; i < bytes / sizeof(std::uint32_t); i += blockDim.x) {
      smem_tile[i] = modify(smem_tile[i]);
    }
    write_back_tile(gmem_out + tile * kStageElems, smem_tile, bytes, is_leader);
    if (is_leader) take_and_load(cursor.stage);  // the next phase of this stage
  }
}

// At most `max_blocks` blocks, never more than tiles; the counter starts at zero for every launch.
inline void launch_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                        unsigned long long* gmem_next_tile, unsigned max_blocks) {
  COURSE_CHECK(cudaMemsetAsync(gmem_next_tile, 0, sizeof(unsigned long long)));  // ordered before the kernel
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageBytes);
  const unsigned grid = static_cast<unsigned>(num_tiles < max_blocks ? num_tiles : max_blocks);
  ring_kernel<<<grid, kBlockThreads>>>(gmem_in, gmem_out, num_bytes, gmem_next_tile);
}

}  // namespace exercise
