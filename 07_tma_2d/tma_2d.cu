// 07_tma_2d: two-dimensional tiles moved by the Tensor Memory Accelerator through a tensor map.
//
// What you learn: how the host describes a matrix to TMA (cuTensorMapEncodeTiled, reached
// through cudaGetDriverEntryPointByVersion, every rule checked before the driver sees it:
// tma_2d_model.hpp), how the kernel receives the map (a const __grid_constant__ parameter), one
// box loaded, modified and stored (minimal), the canonical ring over a persistent grid: a `full`
// and an `empty` barrier per stage, an elected producer warp, a {stage, phase} cursor (ring),
// and what a box that hangs over the matrix's edge does: zero fill on loads, negative starts,
// clipped stores (shifted). The lab (tma_2d_lab.cu): the map in __constant__ and global memory,
// the ring's depth, tiles taken in order from a global counter.
// What changed from 06: a copy takes (map, box coordinates), not (pointer, bytes).
// Hardware: compute capability 9.0 (cp.async.bulk.tensor, mbarrier transaction counts).
// Run: build/07_tma_2d/tma_2d [--bench] [--variant=NAME]; the lab: build/07_tma_2d/tma_2d_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//        (4.11.2.2: using TMA to transfer multi-dimensional arrays)
// API: cuTensorMapEncodeTiled:
//        https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
//      cuda::ptx::cp_async_bulk_tensor, fence_proxy_async, cp_async_bulk_commit_group,
//        cp_async_bulk_wait_group_read: https://nvidia.github.io/cccl/libcudacxx/ptx/
//      PTX cp.async.bulk.tensor: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cuda.h>  // CUtensorMap (types only: the driver library is never linked)
#include <cuda/ptx>

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "course/batch_grid.hpp"
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_2d_model.hpp"  // the tensor map (request, rules, encode_tiled), the tile, the model

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;                  // the minimal kernel
constexpr int kConsumerThreads = 256;               // the ring's consumer warps 1-8 ...
constexpr int kRingThreads = 32 + kConsumerThreads;  // ... after its producer warp 0
constexpr int kStages = 4;               // the ring: four stages of one 32 KiB tile each
constexpr std::size_t kSmemAlign = 128;  // TMA shared-memory boxes: 128-byte aligned
static_assert(kTileElems % (4 * kConsumerThreads) == 0, "every consumer modifies whole float4s");

// The ring's dynamic shared memory: the stages, plus room to align stage 0.
constexpr std::size_t ring_smem_bytes(int num_stages) {
  return num_stages * std::size_t{kTileBytes} + kSmemAlign;
}

/// [minimal]
// One box per block, through maps at these addresses (the lab's maps live elsewhere).
__device__ void minimal_tile(const CUtensorMap* in_map, const CUtensorMap* out_map,
                             const TileGrid& grid) {
  __shared__ alignas(128) float smem_tile[kTileElems];  // [kTileRows][kTileCols]: one box
  __shared__ std::uint64_t bar;                          // an mbarrier: 8 bytes
  const TileCoords at = tile_origin(grid, blockIdx.x);  // one tile per block
  const std::int32_t coords[2] = {at.x, at.y};           // innermost first: {column, row}
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);  // one arrival per phase: thread 0's, which brings the bytes
    // The TMA unit updates the barrier through the async proxy: order the init before that.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // no thread waits on the barrier before it is initialised
  if (threadIdx.x == 0) {
    // Arrive, and expect the whole box: also the zeros that fill what lies outside the matrix.
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                   std::uint32_t{kTileBytes});
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_tile, in_map, coords,
                              &bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {  // phase 0 complete: the box has landed
  }
  for (int i = threadIdx.x; i < kTileElems; i += blockDim.x) smem_tile[i] = modify(smem_tile[i]);
  ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy's store
  __syncthreads();  // every thread has written and fenced before the store reads the box
  if (threadIdx.x == 0) {
    // Stores clip at the matrix's edge; their coordinates are never negative (guide 4.11.2.2).
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, out_map, coords, smem_tile);
    ptx::cp_async_bulk_commit_group();  // the store becomes this thread's bulk async-group
    // The box must stay until the store has read it: the block's shared memory ends with it.
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
  }
}

// TUTORIAL: the map is a kernel parameter. `const __grid_constant__` lets the kernel take the
// parameter's address without the compiler copying it to local memory, where TMA cannot read it.
__global__ void minimal_kernel(const __grid_constant__ CUtensorMap in_map,
                               const __grid_constant__ CUtensorMap out_map, TileGrid grid) {
  minimal_tile(&in_map, &out_map, grid);
}
/// [minimal]

// ---- Device building blocks of the ring -----------------------------------------------------

/// [load_store]
// Starts the load of the input box of `tile` into smem_tile, completing on `bar`.
__device__ void load_tile(const CUtensorMap* map, const TileGrid& grid, int tile, float* smem_tile,
                          std::uint64_t* bar) {
  const TileCoords at = tile_origin(grid, tile);
  // The input box may start up and to the left of the tile (shifted): negative coordinates are
  // fine for loads, the rows and columns before the matrix's start arrive as zeros.
  const std::int32_t coords[2] = {at.x - grid.shift_cols, at.y - grid.shift_rows};
  // Arrive, and expect the whole box, also when part of it lies outside the matrix.
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                       std::uint32_t{kTileBytes});
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_tile, map, coords, bar);
}

// Starts the store of smem_tile to the output tile and closes a bulk async-group around it.
__device__ void store_tile(const CUtensorMap* map, const TileGrid& grid, int tile,
                           const float* smem_tile) {
  const TileCoords at = tile_origin(grid, tile);
  const std::int32_t coords[2] = {at.x, at.y};  // never negative; past the edge: not written
  ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_tile);
  ptx::cp_async_bulk_commit_group();  // wait_group counts these groups, per issuing thread
}
/// [load_store]

// Consumers rank, rank + num_threads, ... double float4 chunks of the tile in shared memory.
__device__ void modify_tile(float* smem_tile, int rank, int num_threads) {
  float4* chunks = reinterpret_cast<float4*>(smem_tile);
  for (int c = rank; c < kTileElems / 4; c += num_threads) {
    const float4 v = chunks[c];
    chunks[c] = make_float4(modify(v.x), modify(v.y), modify(v.z), modify(v.w));
  }
}

// A barrier of the consumer warps alone (named barrier 1; __syncthreads is barrier 0): the
// producer warp never waits for the consumers here, only on the `empty` barriers.
__device__ inline void consumers_sync() {
  asm volatile("bar.sync 1, %0;" : : "n"(kConsumerThreads) : "memory");
}

// The warp index, made warp-uniform by the shuffle: the whole warp takes the same branch.
__device__ inline int warp_index() { return __shfl_sync(0xffffffffu, threadIdx.x / 32, 0); }

// ---- The ring: full and empty barriers, an elected producer, consumer warps ----------------

/// [ring]
template <int kRingStages>
__global__ void __launch_bounds__(kRingThreads)
    ring_kernel(const __grid_constant__ CUtensorMap in_map,
                const __grid_constant__ CUtensorMap out_map, TileGrid grid) {
  // A stage is released one tile late (below): with one stage nothing would ever free it.
  static_assert(kRingStages >= 2, "the store of a tile is waited for one tile later");
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_tiles = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kSmemAlign - 1) / kSmemAlign * kSmemAlign);
  __shared__ alignas(8) std::uint64_t full_bar[kRingStages];   // the stage's tile has landed
  __shared__ alignas(8) std::uint64_t empty_bar[kRingStages];  // the stage may be refilled
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], 1);   // the producer's arrival, with the tile's bytes
      ptx::mbarrier_init(&empty_bar[s], 1);  // the store thread's: the stage has been stored
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();  // no thread waits on a barrier before it is initialised

  // Both roles walk the same tiles, blockIdx.x, + gridDim.x, ..., with a cursor each.
  course::StageCursor<kRingStages> cursor;
  if (warp_index() == 0) {  // the producer warp: one elected lane issues every load
    if (!course::elect_one_lane()) return;
    for (int tile = blockIdx.x; tile < grid.num_tiles; tile += gridDim.x, cursor.advance()) {
      // TUTORIAL: wait until the consumers have released this stage's previous tile. In the
      // first round there is none: parity phase ^ 1 names the phase before phase 0, which a
      // fresh barrier counts as complete, so the first kRingStages waits return at once.
      const std::uint32_t released = cursor.phase ^ 1u;
      course::bounded_wait_parity(&empty_bar[cursor.stage], released,
                                  {"empty", cursor.stage, released});
      load_tile(&in_map, grid, tile, smem_tiles + cursor.stage * kTileElems,
                &full_bar[cursor.stage]);  // arrive, expect the box's bytes, copy
    }
    return;
  }
  const bool is_store_thread = warp_index() == 1 && course::elect_one_lane();  // the same lane
  int stored_stage = -1;  // the store thread: the stage of the last store issued
  for (int tile = blockIdx.x; tile < grid.num_tiles; tile += gridDim.x, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});  // the tile has landed
    float* smem_tile = smem_tiles + cursor.stage * kTileElems;
    modify_tile(smem_tile, threadIdx.x - 32, kConsumerThreads);
    ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy
    consumers_sync();  // every consumer has written and fenced before the store
    if (is_store_thread) {
      store_tile(&out_map, grid, tile, smem_tile);
      // TUTORIAL: only the thread that issued a store can wait for it to have read shared
      // memory. Waiting for all but the newest group frees the previous tile's stage without
      // stalling on the store just issued.
      if (stored_stage >= 0) {
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{});  // the previous store has read
        ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                             &empty_bar[stored_stage]);  // release that stage to the producer
      }
      stored_stage = cursor.stage;
    }
  }
  // Shared memory must outlive every read of it: the block may not exit while a store reads.
  if (is_store_thread) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
}
/// [ring]

// ---- Launchers and the variant table -------------------------------------------------------

struct TileMaps {
  CUtensorMap in, out;  // host copies, passed by value as __grid_constant__ parameters
};

using Launch = void (*)(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks);

// The minimal kernel: one block per tile (max_blocks does not apply).
void launch_minimal(const TileMaps& maps, const TileGrid& grid, unsigned) {
  minimal_kernel<<<static_cast<unsigned>(grid.num_tiles), kBlockThreads>>>(maps.in, maps.out,
                                                                            grid);
  COURSE_CHECK_LAUNCH();
}

/// [launch_tiles]
// Chapter 01's grid rule: a block per kTilesPerBlock tiles, which the block scheduler starts in
// index order wherever an SM has room; the tiles in flight stay one compact window of the matrix
// (the lab's ring_resident row runs the ring on a persistent grid). `max_blocks`, when not 0,
// caps the grid: the tests send many tiles through a few blocks.
constexpr int kTilesPerBlock = 4;

template <class Kernel, class... Args>
void launch_tiles(Kernel kernel, int threads, std::size_t smem_bytes, int num_tiles,
                  unsigned max_blocks, const Args&... args) {
  // Over 48 KiB of shared memory per block: dynamic, and only with this opt-in (chapter 11).
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem_bytes)));
  const unsigned blocks = course::batch_grid(num_tiles, kTilesPerBlock, max_blocks);
  kernel<<<blocks, threads, smem_bytes>>>(args...);
  COURSE_CHECK_LAUNCH();
}
/// [launch_tiles]

template <int kRingStages>
void launch_ring(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_tiles(ring_kernel<kRingStages>, kRingThreads, ring_smem_bytes(kRingStages),
               grid.num_tiles, max_blocks, maps.in, maps.out, grid);
}

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  bool padded = false;   // pitch - kPaddingCols columns per row: row bytes not a multiple of 16
  bool shifted = false;  // input boxes start kShiftRows rows up and kShiftCols columns left
};
const Variant kVariants[] = {
    {"minimal", "one box per block: cp.async.bulk.tensor, mbarrier of count 1, plain wait",
     &launch_minimal},
    {"ring", "4 x 32 KiB stages, full and empty barriers, a producer warp; a block per 4 tiles",
     &launch_ring<kStages>},
    {"shifted", "the ring, out[r][c] = 2 in[r-3][c-4] on rows of pitch-3 floats: zero fill, "
                "clipped stores",
     &launch_ring<kStages>, true, true},
};

// A matrix of `rows` x `pitch_elems` floats (input and poisoned output).
struct Problem {
  Problem(int rows, int pitch_elems)
      : rows(rows), pitch_elems(pitch_elems), host_in(std::size_t(rows) * pitch_elems),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
    gmem_in.upload(host_in.data());
  }
  // The whole pitch, or pitch - kPaddingCols columns: rows that need their padding to be mapped.
  MatrixView view(bool padded) const {
    return {rows, padded ? pitch_elems - kPaddingCols : pitch_elems, pitch_elems};
  }
  // The maps of input and output, encoded once per problem and view, not per launch.
  TileMaps maps(const MatrixView& m) const {
    return {encode_tiled(matrix_request(gmem_in.data(), m)),
            encode_tiled(matrix_request(gmem_out.data(), m))};
  }
  int rows, pitch_elems;
  std::vector<float> host_in;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (padding and guard bands included).
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  const MatrixView m = p.view(v.padded);
  p.gmem_out.poison();
  v.launch(p.maps(m), tile_grid(m, v.shifted), max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(reference(p.host_in, m, v.shifted), p.pitch_elems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(static_cast<int>(opts.size_bytes / kRowBytes), kMatrixCols);
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const MatrixView m = problem.view(v.padded);
    const TileMaps maps = problem.maps(m);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, tile_grid(m, v.shifted), 0); },
        2 * std::size_t(m.rows) * m.cols * sizeof(float));  // each element read and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_2d";
  info.title = "07 tma_2d: 2D tiles through a tensor map (cp.async.bulk.tensor)";
  info.explanation =
      "A float matrix with 16384-float rows (--size sets the row count) is doubled tile by tile:\n"
      "TMA loads 32 x 256 boxes into shared memory and stores them back. The maps reach the\n"
      "kernels as __grid_constant__ parameters; the minimal kernel moves one box per block, the\n"
      "ring keeps 4 tiles in flight per block with full and empty barriers; the shifted variant\n"
      "uses padded rows and negative box starts.";
  info.requirement = {9, 0, false, "cp.async.bulk.tensor (TMA)"};
  info.verify_bytes = 64u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kRowBytes != 0) {
      return "--size must be a whole number of 64 KiB rows (16384 floats)";
    }
    if (bytes / kRowBytes > (1u << 24)) return "--size must be at most 16 Mi rows (1 TiB)";
    return std::nullopt;
  };
  info.host_model = [](std::ostream& out) {
    out << kBlockThreads << " threads per block (minimal); the ring: " << kRingThreads
        << " threads, " << kStages << " stages, " << ring_smem_bytes(kStages) / 1024
        << " KiB of shared memory per block\n";
    print_map_model(out);
  };
  info.in_flight = course::InFlightLaunch{"ring", (const void*)ring_kernel<kStages>, kRingThreads,
                                          ring_smem_bytes(kStages), kStages, kTileBytes};
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
