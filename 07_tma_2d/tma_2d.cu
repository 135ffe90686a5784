// 07_tma_2d: two-dimensional tiles moved by the Tensor Memory Accelerator through a tensor map.
//
// What you learn: how the host describes a matrix to TMA (cuTensorMapEncodeTiled, reached
// through cudaGetDriverEntryPointByVersion, every argument and every rule it imposes, checked
// before the driver sees it: tma_2d_model.hpp), how the kernel receives the map (a
// const __grid_constant__ parameter), the guide's load-modify-store kernel, a persistent
// four-stage TMA pipeline that takes its tiles in order from a counter (chapter 06), and what a
// load does with a box that hangs over the matrix's edge (zero fill, negative starts) and what a
// store does (clips) on rows padded to a 16-byte pitch. The lab (tma_2d_lab.cu) passes the map
// in __constant__ and global memory, and sweeps the stage count with the tiles dealt instead.
// What changed from 06: a copy takes (map, box coordinates), not (pointer, bytes); TMA does the 2D addressing.
// Hardware: compute capability 9.0 (cp.async.bulk.tensor, mbarrier transaction counts).
// Run: build/07_tma_2d/tma_2d [--bench] [--variant=NAME]; the lab: build/07_tma_2d/tma_2d_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-tma-to-transfer-multi-dimensional-arrays
//        (4.11.2.2)
// API: cuTensorMapEncodeTiled https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
//      cudaGetDriverEntryPointByVersion https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html
//      cuda::ptx::cp_async_bulk_tensor https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
//      cuda::ptx::fence_proxy_async https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      cuda::ptx::cp_async_bulk_commit_group / cp_async_bulk_wait_group_read
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_commit_group.html
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_wait_group.html
//      PTX cp.async.bulk.tensor https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk-tensor
#include <cuda.h>  // CUtensorMap (types only: the driver library is never linked)
#include <cuda/ptx>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "tma_2d_model.hpp"  // the tensor map (request, rules, encode_tiled), the tile, the copy model

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;
constexpr int kStages = 4;               // tiles in flight per block in the pipeline
constexpr std::size_t kSmemAlign = 128;  // TMA shared-memory boxes: 128-byte aligned
constexpr std::size_t kPipelineSmemBytes = kStages * std::size_t{kTileBytes} + kSmemAlign;  // + room to align stage 0
static_assert(kTileElems % (4 * kBlockThreads) == 0, "every thread modifies the same number of float4 per tile");

// The problem (tma_2d_model.hpp): a row-major float matrix, every element doubled, tile by tile.
// reference() computes the expected output with the host model of a tensor copy.

// ---- Device building blocks -----------------------------------------------------------------

/// [load_store]
// Starts the load of the box at (x, y) into smem_box, completing on `bar`.
__device__ void load_box(const CUtensorMap* map, int x, int y, float* smem_box, std::uint64_t* bar) {
  const std::int32_t coords[2] = {x, y};  // innermost first; negative or past the edge: zero fill
  // The barrier's one expected arrival, plus kTileBytes of transactions: always the whole box,
  // also when part of it lies outside the matrix (the zeros count as delivered bytes).
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                       std::uint32_t{kTileBytes});
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, map, coords, bar);
}

__device__ void load_tile(const CUtensorMap* map, const TileGrid& grid, int tile, float* smem_tile,
                          std::uint64_t* bar) {
  const TileCoords at = tile_origin(grid, tile);
  load_box(map, at.x - grid.shift_cols, at.y - grid.shift_rows, smem_tile, bar);
}

// Starts the store of smem_tile to the output tile and closes a bulk async-group around it.
__device__ void store_tile(const CUtensorMap* map, const TileGrid& grid, int tile, const float* smem_tile) {
  const TileCoords at = tile_origin(grid, tile);
  const std::int32_t coords[2] = {at.x, at.y};  // never negative (guide 4.11.2.2); past the edge: not written
  ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_tile);
  ptx::cp_async_bulk_commit_group();  // wait_group counts these groups, per issuing thread
}
/// [load_store]

// The chapter's computation, in place in shared memory: each thread doubles float4 chunks.
__device__ void modify_tile(float* smem_tile) {
  float4* chunks = reinterpret_cast<float4*>(smem_tile);
  for (int c = threadIdx.x; c < kTileElems / 4; c += kBlockThreads) {
    float4 v = chunks[c];
    chunks[c] = make_float4(modify(v.x), modify(v.y), modify(v.z), modify(v.w));
  }
}

// ---- One stage: the guide's kernel, per tile ----------------------------------------------

/// [one_stage]
// One tile per block at a time, through one buffer. The lab calls it with the maps in
// __constant__ and in global memory.
__device__ void one_stage_tiles(const CUtensorMap* in_map, const CUtensorMap* out_map, const TileGrid& grid,
                                bool is_leader) {
  __shared__ alignas(kSmemAlign) float smem_tile[kTileElems];  // [kTileRows][kTileCols]
  __shared__ alignas(8) std::uint64_t full_bar;                 // the tile has landed
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival per phase: the leader's arrive.expect_tx
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // ...and to every thread, before anyone waits on it

  course::StageCursor<1> cursor;  // one buffer: the stage stays 0, the phase flips every tile
  for (int tile = blockIdx.x; tile < grid.num_tiles; tile += gridDim.x, cursor.advance()) {
    if (is_leader) load_tile(in_map, grid, tile, smem_tile, &full_bar);
    course::bounded_wait_parity(&full_bar, cursor.phase, {"full", 0, cursor.phase});  // the box is in shared memory
    modify_tile(smem_tile);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
    __syncthreads();                            // every thread's writes are fenced before the store starts
    if (is_leader) {
      store_tile(out_map, grid, tile, smem_tile);
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the store has read smem_tile: it may be refilled
    }
  }
}
/// [one_stage]

/// [grid_constant]
// The map is a kernel parameter. `const __grid_constant__` lets the kernel take the
// parameter's address without the compiler copying it to local memory, where TMA cannot read it.
__global__ void __launch_bounds__(kBlockThreads)
    grid_constant_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                         TileGrid grid) {
  one_stage_tiles(&in_map, &out_map, grid, course::elect_tma_leader());
}
/// [grid_constant]

// ---- The pipeline: kStages tiles in flight per block, tiles taken in order ------------------

/// [pipeline_kernel]
// TUTORIAL: which tile comes next. The usual persistent loop deals the tiles out in advance
// (block b takes b, b + grid, b + 2 grid, ...): every thread can compute its tiles. But the blocks
// drift apart as they run, so the tiles in flight at one moment spread over ever more of the
// matrix, and DRAM and L2 serve scattered pieces instead of a stream. Here the leader takes the
// next untaken tile from a counter in global memory each time it fills a stage (chapter 06,
// "Taking tiles in order"): whatever the blocks' speeds, the tiles in flight stay one compact
// window of neighbours (the same 32 rows, 1 KiB further on) sweeping through the matrix.
// Only the leader knows which tile it took, so it records it per stage in stage_tile. Past the
// last tile it still completes the stage's phase, with a plain arrival and no bytes: every
// thread wakes up at that stage, reads "none left" and stops.
__global__ void __launch_bounds__(kBlockThreads)
    pipeline_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                    TileGrid grid, unsigned long long* next_tile) {
  // TUTORIAL: no "empty" barrier. A stage is free again when the TMA store of the tile it held
  // has read it, which only the thread that issued the store can wait for (wait_group_read).
  // So the leader refills stages itself, one tile late: after storing tile i it waits until at
  // most one store (tile i's) is still reading, and refills the stage of tile i - 1 (load
  // i - 1 + kStages). With one stage there is no earlier tile; it waits for tile i's own store.
  constexpr int kRefillLag = kStages > 1 ? 1 : 0;
  // A stage's record is written after one iteration's block sync and read kStages - lag
  // iterations later; the block sync of an iteration in between orders the two.
  static_assert(kStages - kRefillLag >= 2, "a tile recorded per stage needs at least 3 stages");
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_tiles = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kSmemAlign - 1) / kSmemAlign * kSmemAlign);  // [kStages][kTileElems]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // stage s holds a complete input tile, or the end
  __shared__ int stage_tile[kStages];                      // the tile in stage s (>= num_tiles: none left)
  const bool is_leader = course::elect_tma_leader();
  // Load number n of this block goes to stage n % kStages and is consumed by iteration n.
  const auto take_and_load = [&](int n) {  // leader only
    const int stage = n % kStages;
    const int tile = static_cast<int>(atomicAdd(next_tile, 1ull));  // the next untaken tile of the grid
    stage_tile[stage] = tile;
    if (tile >= grid.num_tiles) {
      // No bytes: the leader's arrival alone completes the phase, which then says "none left".
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
      return;
    }
    load_tile(&in_map, grid, tile, smem_tiles + stage * kTileElems, &full_bar[stage]);
  };
  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // the leader's arrival
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // initialised barriers visible to TMA
    for (int n = 0; n < kStages; ++n) take_and_load(n);
  }
  __syncthreads();  // the barriers are initialised and the first tiles recorded before anyone waits

  course::StageCursor<kStages> cursor;
  for (int i = 0;; ++i, cursor.advance()) {
    float* smem_tile = smem_tiles + cursor.stage * kTileElems;
    // The stage's phase completed: its tile has landed (with the last byte), or the end was signalled.
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const int tile = stage_tile[cursor.stage];
    if (tile >= grid.num_tiles) break;  // the same answer in every thread; a block's tiles only increase
    modify_tile(smem_tile);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
    __syncthreads();                            // all writes fenced before the store; nobody reads the stage after
    if (is_leader) {
      store_tile(&out_map, grid, tile, smem_tile);
      if (i >= kRefillLag) {
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<kRefillLag>{});  // the store of tile i - lag has read its stage
        take_and_load(i - kRefillLag + kStages);                        // refill that stage
      }
    }
  }
  // Shared memory must outlive every read of it: the block may not exit while a store reads.
  // (.read suffices; the global writes complete anyway before the grid counts as finished.)
  if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
}
/// [pipeline_kernel]

// ---- Launchers and the variant table -------------------------------------------------------

struct TileMaps {
  CUtensorMap in, out;  // host copies, passed by value as __grid_constant__ parameters
};

/// [launch]
// A persistent grid: as many blocks as fit on the GPU at once, never more than tiles, and
// at most `max_blocks` when that is not 0 (tests send many tiles through a few blocks).
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, std::size_t smem_bytes, const TileGrid& grid, unsigned max_blocks,
                     const Args&... args) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  // Above 48 KiB a kernel must opt in to the dynamic shared memory it asks for.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, smem_bytes));
  if (blocks_per_sm == 0) throw course::CudaError("no block fits on an SM with " + std::to_string(smem_bytes) + " bytes of shared memory");
  std::size_t blocks = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  if (max_blocks != 0 && max_blocks < blocks) blocks = max_blocks;
  if (static_cast<std::size_t>(grid.num_tiles) < blocks) blocks = grid.num_tiles;
  kernel<<<static_cast<unsigned>(blocks), kBlockThreads, smem_bytes>>>(args...);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks);

void launch_grid_constant(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_resident(grid_constant_kernel, 0, grid, max_blocks, maps.in, maps.out, grid);
}

/// [launch_pipeline]
// The pipeline's count of taken tiles. Zeroed before every launch, on the launch's stream; two
// launches running at once would share it, and would each need their own.
__device__ unsigned long long gmem_next_tile;

void launch_pipeline(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  void* next_tile = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&next_tile, gmem_next_tile));  // the host names a __device__ variable by symbol
  COURSE_CHECK(cudaMemsetAsync(next_tile, 0, sizeof(unsigned long long)));  // same stream: done before the kernel
  launch_resident(pipeline_kernel, kPipelineSmemBytes, grid, max_blocks, maps.in, maps.out, grid,
                  static_cast<unsigned long long*>(next_tile));
}
/// [launch_pipeline]

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  bool padded = false;   // pitch - kPaddingCols columns per row: row bytes not a multiple of 16
  bool shifted = false;  // input boxes start kShiftRows rows up and kShiftCols columns left
};
const Variant kVariants[] = {
    {"grid_constant", "guide's kernel per tile, 1 stage; maps as const __grid_constant__ parameters",
     &launch_grid_constant},
    {"pipeline", "persistent TMA pipeline, 4 stages of 32 KiB, tiles taken in order from a counter", &launch_pipeline},
    {"shifted", "the pipeline, out[r][c] = 2 in[r-3][c-4] on rows of pitch-3 floats: zero fill, clipped stores",
     &launch_pipeline, true, true},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

// A matrix of `rows` x `pitch_elems` floats (input and poisoned output).
struct Problem {
  Problem(int rows, int pitch_elems)
      : rows(rows), pitch_elems(pitch_elems), host_in(std::size_t(rows) * pitch_elems), gmem_in(host_in.size()),
        gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
    gmem_in.upload(host_in.data());
  }
  // The whole pitch, or pitch - kPaddingCols columns: rows that need their padding to be mapped.
  MatrixView view(bool padded) const { return {rows, padded ? pitch_elems - kPaddingCols : pitch_elems, pitch_elems}; }
  // The maps of input and output, encoded once per problem and view, not per launch.
  TileMaps maps(const MatrixView& m) const {
    return {encode_tiled(matrix_request(gmem_in.data(), m)), encode_tiled(matrix_request(gmem_out.data(), m))};
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
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(maps, tile_grid(m, v.shifted), 0); },
        2 * std::size_t(m.rows) * m.cols * sizeof(float));  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_2d";
  info.title = "07 tma_2d: 2D tiles through a tensor map (cp.async.bulk.tensor)";
  info.explanation =
      "A float matrix with 16384-float rows (--size sets the row count) is doubled tile by tile: TMA\n"
      "loads 32 x 256 boxes into shared memory and stores them back. The map reaches the kernel as a\n"
      "__grid_constant__ parameter; a persistent pipeline keeps 4 tiles in flight per block, taking\n"
      "them in order from a counter; the shifted variant uses padded rows and negative box starts.";
  info.requirement = {9, 0, false, "cp.async.bulk.tensor (TMA)"};
  info.verify_bytes = 64u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kRowBytes != 0) return "--size must be a whole number of 64 KiB rows (16384 floats)";
    if (bytes / kRowBytes > (1u << 24)) return "--size must be at most 16 Mi rows (1 TiB)";
    return std::nullopt;
  };
  info.host_model = [](std::ostream& out) {
    out << kBlockThreads << " threads per block; the pipeline: " << kStages << " stages, "
        << kPipelineSmemBytes / 1024 << " KiB of shared memory per block\n";
    print_map_model(out);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
