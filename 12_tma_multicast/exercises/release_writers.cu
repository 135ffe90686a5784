// Exercise 12.3 (GPU, compute capability 9.0, sm_90a): release a stage to every block that wrote it.
//
// The lesson's pipeline, made small: 2 x 2 clusters, two stages, four consumer warps and one
// producer warp per block, and operands already cut into panels, so that each slice is one 1-D bulk
// copy (chapter 06's cp.async.bulk, here with a ctaMask) instead of a tensor box. Per k-tile, block
// (x, y) of a cluster loads half of its row band's A panel and multicasts it along its cluster row,
// and half of its column band's B panel down its cluster column; every block's consumers then add
// a[i] * b[kPanelElems - 1 - i] into their accumulators. The barriers are counted for the cluster
// (full: every byte that lands here; empty: kEmptyArrivals), and the producer is right as it is.
//
// One thing is wrong: after reading a stage, each consumer warp tells only its own block that the
// stage is free. Run the test first. The bounded wait stops the kernel and names the barrier, the
// stage and the phase it gave up on; from the count that barrier was initialised with, work out
// who else is expected to arrive on it, and why. Then repair the release in consume(): a block may
// refill a stage only when every consumer warp that reads what it loaded has finished with it. The
// lesson's consume() (tma_multicast.cu) and the chapter's model (release_target) show the pattern.
// Needs: compute capability 9.0 exactly (the multicast copy exists for sm_90a only); elsewhere the
// test is skipped.
// Check: scripts/exercise.py release_writers
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstddef>
#include <cstdint>

#include "course/elect.cuh"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"

namespace exercise {

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kClusterX = 2, kClusterY = 2;            // block (x, y) of a cluster is rank x + 2 y
constexpr int kConsumerWarps = 4;
constexpr int kProducerWarp = kConsumerWarps;          // the last warp issues the loads
constexpr int kThreads = (kConsumerWarps + 1) * 32;    // 160
constexpr int kStages = 2;
constexpr int kPanelElems = 1024;                      // one k-tile of A, or of B: 4 KiB
constexpr int kASliceElems = kPanelElems / kClusterX;  // what each block of a row loads of its A panel
constexpr int kBSliceElems = kPanelElems / kClusterY;  // what each block of a column loads of its B panel
constexpr std::uint32_t kASliceBytes = kASliceElems * sizeof(std::uint32_t);
constexpr std::uint32_t kBSliceBytes = kBSliceElems * sizeof(std::uint32_t);
constexpr std::uint32_t kStageBytes = 2 * kPanelElems * sizeof(std::uint32_t);  // land in every block per k-tile
constexpr int kEmptyArrivals = (kClusterX + kClusterY - 1) * kConsumerWarps;
constexpr int kElemsPerThread = kPanelElems / (kConsumerWarps * 32);
static_assert(kASliceBytes % 16 == 0 && kBSliceBytes % 16 == 0, "bulk copies move whole 16-byte units");

__host__ __device__ constexpr int partner(int i) { return kPanelElems - 1 - i; }  // the element of B used with a[i]

struct StagePanels {
  std::uint32_t a[kPanelElems];  // slice x of the A panel lands at a + x * kASliceElems, in every block of the row
  std::uint32_t b[kPanelElems];  // slice y of the B panel lands at b + y * kBSliceElems, in every block of the column
};

__device__ void produce(const std::uint32_t* gmem_a, const std::uint32_t* gmem_b, StagePanels* smem,
                        std::uint64_t* full_bar, std::uint64_t* empty_bar, int x, int y, int num_k_tiles) {
  const std::uint16_t a_mask = static_cast<std::uint16_t>(0b0011u << (y * kClusterX));  // our cluster row
  const std::uint16_t b_mask = static_cast<std::uint16_t>(0b0101u << x);                // our cluster column
  const std::uint32_t* gmem_a_slice = gmem_a + std::size_t(blockIdx.y) * num_k_tiles * kPanelElems + x * kASliceElems;
  const std::uint32_t* gmem_b_slice = gmem_b + std::size_t(blockIdx.x) * num_k_tiles * kPanelElems + y * kBSliceElems;
  course::StageCursor<kStages> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    // The stage is free in every block we write into; other blocks complete this barrier: cluster-scope acquire.
    course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u, {"empty", cursor.stage, cursor.phase ^ 1u},
                                ptx::scope_cluster);
    // Our one arrival, announcing every byte that lands in OUR stage this round, ours and our peers'.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[cursor.stage],
                                         std::uint32_t{kStageBytes});
    // Each slice lands at the same offset of every block in the mask and counts down each one's full barrier.
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem[cursor.stage].a + x * kASliceElems,
                       gmem_a_slice + std::size_t(kt) * kPanelElems, std::uint32_t{kASliceBytes},
                       &full_bar[cursor.stage], a_mask);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem[cursor.stage].b + y * kBSliceElems,
                       gmem_b_slice + std::size_t(kt) * kPanelElems, std::uint32_t{kBSliceBytes},
                       &full_bar[cursor.stage], b_mask);
  }
}

// x, y: this block's place in its cluster.
__device__ void consume(const StagePanels* smem, std::uint64_t* full_bar, std::uint64_t* empty_bar,
                        cg::cluster_group& cluster, int x, int y, int num_k_tiles, int warp_idx, int lane,
                        std::uint32_t* gmem_out_tile) {
  // TODO: the release below reaches this block's own empty barrier only. Decide which lanes of the
  //       warp arrive, and on which blocks' empty barriers (cluster.map_shared_rank), so that every
  //       block whose loads land here hears from this warp exactly once per stage.
  std::uint64_t* dsmem_empty = cluster.map_shared_rank(empty_bar, static_cast<int>(cluster.block_rank()));
  (void)x, (void)y;

  const int first = warp_idx * 32 + lane;
  std::uint32_t acc[kElemsPerThread] = {};
  course::StageCursor<kStages> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase},
                                ptx::scope_cluster);  // every slice of both panels has landed here
    const StagePanels& panels = smem[cursor.stage];
#pragma unroll
    for (int j = 0; j < kElemsPerThread; ++j) {
      const int i = first + j * kConsumerWarps * 32;
      acc[j] += panels.a[i] * panels.b[partner(i)];
    }
    __syncwarp();  // every lane of this warp has finished reading the stage...
    if (lane == 0) {
      // ...so the release, at cluster scope, orders those reads before the writer's next load.
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, dsmem_empty + cursor.stage);
    }
  }
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) gmem_out_tile[first + j * kConsumerWarps * 32] = acc[j];
}

// gmem_a: [row bands][k-tiles][kPanelElems], gmem_b: [column bands][k-tiles][kPanelElems];
// block (blockIdx.x, blockIdx.y) writes kPanelElems sums to gmem_out[blockIdx.y][blockIdx.x].
__global__ void __cluster_dims__(kClusterX, kClusterY, 1) __launch_bounds__(kThreads)
    panel_kernel(const std::uint32_t* gmem_a, const std::uint32_t* gmem_b, std::uint32_t* gmem_out, int num_k_tiles) {
  __shared__ alignas(128) StagePanels smem[kStages];        // the same offsets in every block of the cluster
  __shared__ alignas(8) std::uint64_t full_bar[kStages];   // phase r: round r's panels have landed here, all slices
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];  // phase r: every block we write into has read round r
  cg::cluster_group cluster = cg::this_cluster();
  const int x = static_cast<int>(cluster.block_index().x), y = static_cast<int>(cluster.block_index().y);
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);  // warp-uniform
  const int lane = static_cast<int>(threadIdx.x % 32);

  if (warp_idx == kProducerWarp && course::elect_one_lane()) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], 1);                // one arrival: our producer's arrive.expect_tx
      ptx::mbarrier_init(&empty_bar[s], kEmptyArrivals);  // every consumer warp of every block we write into
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the inits are visible cluster-wide...
  }
  cluster.sync();  // ...before any block multicasts into or arrives on another

  if (warp_idx == kProducerWarp) {
    if (course::elect_one_lane()) produce(gmem_a, gmem_b, smem, full_bar, empty_bar, x, y, num_k_tiles);
  } else {
    std::uint32_t* gmem_out_tile = gmem_out + (std::size_t(blockIdx.y) * gridDim.x + blockIdx.x) * kPanelElems;
    consume(smem, full_bar, empty_bar, cluster, x, y, num_k_tiles, warp_idx, lane, gmem_out_tile);
  }
  cluster.sync();  // nobody exits while a peer's arrival or multicast can still reach it
}

// The grid counts blocks: whole 2 x 2 clusters, so both band counts must be even.
inline void launch_panels(const std::uint32_t* gmem_a, const std::uint32_t* gmem_b, std::uint32_t* gmem_out,
                          int num_column_bands, int num_row_bands, int num_k_tiles) {
  panel_kernel<<<dim3(num_column_bands, num_row_bands), kThreads>>>(gmem_a, gmem_b, gmem_out, num_k_tiles);
}

}  // namespace exercise
