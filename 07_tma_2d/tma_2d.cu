// 07_tma_2d: two-dimensional tiles moved by the Tensor Memory Accelerator through a tensor map.
//
// What you learn: how the host describes a matrix to TMA (cuTensorMapEncodeTiled, reached
// through cudaGetDriverEntryPointByVersion, every argument and every rule it imposes, checked
// before the driver sees it), the three ways a kernel can receive the map, what a load does
// with a box that hangs over the matrix's edge (zero fill, negative starts) and what a store
// does (clips), rows padded to a 16-byte pitch, and a persistent multi-stage TMA pipeline,
// dealt or with its tiles taken in order (chapter 06).
// What changed from 06: a copy is no longer (pointer, bytes) but (map, coordinates); the
// hardware does the 2D address arithmetic and the bounds checks.
// Hardware: compute capability 9.0 (cp.async.bulk.tensor, mbarrier transaction counts).
// Run: build/07_tma_2d/tma_2d [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-tma-to-transfer-multi-dimensional-arrays
//        (4.11.2.2)
// API: cuTensorMapEncodeTiled https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
//      cudaGetDriverEntryPointByVersion https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html
//      cuda::ptx::cp_async_bulk_tensor https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
//      cuda::ptx::fence_proxy_tensormap_generic, fence_proxy_async
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      cuda::ptx::cp_async_bulk_commit_group / cp_async_bulk_wait_group_read
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_commit_group.html
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_wait_group.html
//      PTX cp.async.bulk.tensor https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk-tensor
//      PTX fence.proxy.tensormap https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-membar
//      PTX elect.sync https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-elect-sync
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
#include "course/wait.cuh"
#include "tma_2d_tensor_map.hpp"  // TensorMapRequest, broken_tensor_map_rule(), encode_tiled()

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;
constexpr int kTileRows = 32;                                        // box height (rows)
constexpr int kTileCols = 256;                                       // box width (floats): 1 KiB per row, the widest box
constexpr int kTileElems = kTileRows * kTileCols;
constexpr std::uint32_t kTileBytes = kTileElems * sizeof(float);     // 32 KiB per tile and per stage
constexpr std::size_t kSmemAlign = 128;                              // TMA shared-memory boxes: 128-byte aligned
constexpr int kMatrixCols = 16384;                                   // 64 KiB rows; --size sets the row count
constexpr std::size_t kRowBytes = kMatrixCols * sizeof(float);
constexpr int kPaddingCols = 3;               // padded variants use pitch - 3 floats per row: not a 16-byte multiple
constexpr int kShiftCols = 4, kShiftRows = 3; // shifted variant: out[r][c] = modify(in[r - 3][c - 4])
static_assert(kTileCols * sizeof(float) % 16 == 0, "TMA box rows (boxDim[0] x element size) are multiples of 16 bytes");
static_assert(kTileCols <= 256 && kTileRows <= 256, "TMA boxes are at most 256 elements in every dimension");
static_assert(kTileElems % (4 * kBlockThreads) == 0, "every thread modifies the same number of float4 per tile");
static_assert(kShiftCols * sizeof(float) % 16 == 0, "a box's start in dimension 0 is a multiple of 16 bytes");

// ---- The problem: a row-major float matrix, every element doubled ---------------------------

// `rows` x `cols` floats, consecutive rows `pitch_elems` floats apart (pitch_elems >= cols).
struct MatrixView {
  int rows;
  int cols;
  int pitch_elems;
};

/// [matrix_request]
// The map of a matrix for this chapter's kernels: boxes of kTileRows x kTileCols floats.
TensorMapRequest matrix_request(const float* gmem_matrix, const MatrixView& m) {
  TensorMapRequest r;
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  r.rank = 2;
  r.global_address = gmem_matrix;
  r.global_dim[0] = static_cast<std::uint64_t>(m.cols);  // innermost first: columns...
  r.global_dim[1] = static_cast<std::uint64_t>(m.rows);  // ...then rows
  r.global_strides[0] = static_cast<std::uint64_t>(m.pitch_elems) * sizeof(float);  // bytes from a row to the next
  r.box_dim[0] = kTileCols;
  r.box_dim[1] = kTileRows;
  return r;  // element strides 1; no interleave, swizzle or L2 promotion; zero fill out of bounds
}
/// [matrix_request]

__host__ __device__ inline float modify(float x) { return 2.0f * x; }  // exact: zero stays zero

// The output tiles: tile t covers rows [y, y + kTileRows) and columns [x, x + kTileCols) of
// the output; its input box starts shift_rows rows higher and shift_cols columns further left.
struct TileGrid {
  int tiles_x;
  int num_tiles;
  int shift_cols;
  int shift_rows;
};
struct TileCoords {
  int x, y;  // column, row of the top-left element
};
__host__ __device__ inline TileCoords tile_origin(const TileGrid& g, int tile) {
  return {(tile % g.tiles_x) * kTileCols, (tile / g.tiles_x) * kTileRows};
}
inline TileGrid tile_grid(const MatrixView& m, bool shifted) {
  const int tiles_x = (m.cols + kTileCols - 1) / kTileCols;
  const int tiles_y = (m.rows + kTileRows - 1) / kTileRows;
  return {tiles_x, tiles_x * tiles_y, shifted ? kShiftCols : 0, shifted ? kShiftRows : 0};
}

/// [tma_model]
// What a tensor copy does, modelled on the host. A load of the box whose top-left element is
// (x, y) reads the elements inside the matrix and fills the rest with zeros; x and y may be
// negative. A store writes the box elements inside the matrix and drops the rest, except that
// in dimension 0 it writes whole 16-byte granules: a row whose width is not a multiple of 16
// bytes gets up to 12 bytes of its padding overwritten (seen on the H100; the guide is silent).
constexpr int kStoreGranuleElems = 16 / sizeof(float);
void load_box_model(const std::vector<float>& gmem, const MatrixView& m, int x, int y, float* box) {
  for (int r = 0; r < kTileRows; ++r) {
    for (int c = 0; c < kTileCols; ++c) {
      const bool inside = y + r >= 0 && y + r < m.rows && x + c >= 0 && x + c < m.cols;
      box[r * kTileCols + c] = inside ? gmem[std::size_t(y + r) * m.pitch_elems + (x + c)] : 0.0f;
    }
  }
}
void store_box_model(std::vector<float>& gmem, const MatrixView& m, int x, int y, const float* box) {
  const int stored_cols = (m.cols + kStoreGranuleElems - 1) / kStoreGranuleElems * kStoreGranuleElems;
  for (int r = 0; r < kTileRows && y + r < m.rows; ++r) {
    for (int c = 0; c < kTileCols && x + c < stored_cols; ++c) {
      gmem[std::size_t(y + r) * m.pitch_elems + (x + c)] = box[r * kTileCols + c];
    }
  }
}
/// [tma_model]

// Host reference: every tile as the kernels do it. Elements no store reaches keep the poison.
std::vector<float> reference(const std::vector<float>& in, const MatrixView& m, bool shifted) {
  std::vector<float> out(in.size(), course::poison_value<float>());
  std::vector<float> box(kTileElems);
  const TileGrid grid = tile_grid(m, shifted);
  for (int tile = 0; tile < grid.num_tiles; ++tile) {
    const TileCoords at = tile_origin(grid, tile);
    load_box_model(in, m, at.x - grid.shift_cols, at.y - grid.shift_rows, box.data());
    for (float& v : box) v = modify(v);
    store_box_model(out, m, at.x, at.y, box.data());
  }
  return out;
}

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

// ---- One stage: the guide's kernel, per tile, with the map arriving three ways ----------------

/// [one_stage]
__device__ void one_stage_tiles(const CUtensorMap* in_map, const CUtensorMap* out_map, const TileGrid& grid,
                                bool is_leader) {
  __shared__ alignas(kSmemAlign) float smem_tile[kTileElems];  // [kTileRows][kTileCols]
  __shared__ alignas(8) std::uint64_t full_bar;                 // the tile has landed
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival per phase: the leader's arrive.expect_tx
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // ...and to every thread, before anyone waits on it

  std::uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < grid.num_tiles; tile += gridDim.x, phase ^= 1u) {
    if (is_leader) load_tile(in_map, grid, tile, smem_tile, &full_bar);
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});  // the box is in shared memory
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
// Preferred: the map is a kernel parameter. `const __grid_constant__` lets the kernel take the
// parameter's address without the compiler copying it to local memory, where TMA cannot read it.
__global__ void __launch_bounds__(kBlockThreads)
    grid_constant_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                         TileGrid grid) {
  one_stage_tiles(&in_map, &out_map, grid, course::elect_tma_leader());
}
/// [grid_constant]

/// [constant_memory]
__constant__ CUtensorMap cmem_maps[2];  // [0] input, [1] output: written with cudaMemcpyToSymbol

__global__ void __launch_bounds__(kBlockThreads) constant_memory_kernel(TileGrid grid) {
  one_stage_tiles(&cmem_maps[0], &cmem_maps[1], grid, course::elect_tma_leader());
}
/// [constant_memory]

/// [global_memory]
__global__ void __launch_bounds__(kBlockThreads) global_memory_kernel(const CUtensorMap* gmem_maps, TileGrid grid) {
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    // The maps were written through the generic proxy (a copy from the host); TMA reads them
    // through the tensormap proxy. Acquire them for this thread, the only one that uses them;
    // .sys because the writer was the host.
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[0], ptx::n32_t<128>{});
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[1], ptx::n32_t<128>{});
  }
  one_stage_tiles(&gmem_maps[0], &gmem_maps[1], grid, is_leader);
}
/// [global_memory]

// ---- The pipeline: kStages tiles in flight per block, persistent over the tiles ---------------

/// [cursor]
// Which stage a tile uses and the parity of its round through the ring of stages.
template <int kStages>
struct StageCursor {
  static_assert(kStages >= 1, "a ring needs at least one stage");
  int stage = 0;
  std::uint32_t phase = 0;
  __host__ __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;  // next round: each stage's barrier is one phase further on
    }
  }
};
/// [cursor]

/// [pipeline_kernel]
// kInOrder (pipeline_in_order): the leader takes each next tile from a counter in global memory
// instead of the fixed deal, and records it for the stage (chapter 06, "Taking tiles in order").
template <int kStages, bool kInOrder = false>
__global__ void __launch_bounds__(kBlockThreads)
    pipeline_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                    TileGrid grid, unsigned long long* next_tile) {
  // TUTORIAL: no "empty" barrier. A stage is free again when the TMA store of the tile it held
  // has read it, which only the thread that issued the store can wait for (wait_group_read).
  // So the leader refills stages itself, one tile late: after storing tile i it waits until at
  // most one store (tile i's) is still reading, and loads tile i - 1 + kStages into the stage
  // of tile i - 1. With one stage there is no earlier tile; it waits for tile i's own store.
  constexpr int kRefillLag = kStages > 1 ? 1 : 0;
  // A recorded tile is written after the block sync of one iteration and read kStages - lag
  // iterations later; the block sync of an iteration in between orders the two.
  static_assert(!kInOrder || kStages - kRefillLag >= 2, "taking tiles in order needs at least 3 stages");
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_tiles = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kSmemAlign - 1) / kSmemAlign * kSmemAlign);  // [kStages][kTileElems]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // stage s holds a complete input tile
  __shared__ int stage_tile[kStages];                      // in order: the tile in stage s (>= num_tiles: none)
  const bool is_leader = course::elect_tma_leader();
  // Load number n of this block goes to stage n % kStages, and is consumed by iteration n.
  // Dealt: it is tile blockIdx.x + n * gridDim.x, which every thread can compute. In order: the
  // counter's next tile. With none left, a plain arrival completes the stage's phase so that
  // the block sees the end.
  const auto dealt_tile = [&](int n) { return static_cast<int>(blockIdx.x) + n * static_cast<int>(gridDim.x); };
  const auto take_and_load = [&](int n) {  // leader only
    const int stage = n % kStages;
    const int tile = kInOrder ? static_cast<int>(atomicAdd(next_tile, 1ull)) : dealt_tile(n);
    if constexpr (kInOrder) stage_tile[stage] = tile;
    if (tile >= grid.num_tiles) {
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
  __syncthreads();  // the barriers are initialised (and the first tiles recorded) before anyone waits

  StageCursor<kStages> cursor;
  for (int i = 0;; ++i, cursor.advance()) {
    float* smem_tile = smem_tiles + cursor.stage * kTileElems;
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const int tile = kInOrder ? stage_tile[cursor.stage] : dealt_tile(i);
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

// The maps of one problem, in every place a kernel may look for them.
struct TileMaps {
  CUtensorMap in, out;                 // host copies: passed by value as __grid_constant__ parameters
  const CUtensorMap* gmem = nullptr;   // [in, out] in global memory
};

/// [publish]
// Copies the maps to __constant__ and to global memory. Done once per problem, not per launch:
// the map is a description of the matrix, and it only changes when the matrix does.
void publish_maps(TileMaps& maps, CUtensorMap* gmem_maps) {
  const CUtensorMap both[2] = {maps.in, maps.out};
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, both, sizeof(both)));
  COURSE_CHECK(cudaMemcpy(gmem_maps, both, sizeof(both), cudaMemcpyHostToDevice));
  maps.gmem = gmem_maps;
}
/// [publish]

/// [launch]
// A persistent grid: as many blocks as fit on the GPU at once, never more than tiles, and
// at most `max_blocks` when that is not 0 (tests send many tiles through a few blocks).
template <class Kernel, class... Args>
void launch_persistent(Kernel kernel, std::size_t smem_bytes, const TileGrid& grid, unsigned max_blocks,
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

template <int kStages>
constexpr std::size_t pipeline_smem_bytes() {
  return kStages * std::size_t{kTileBytes} + kSmemAlign;  // + room to align the first stage
}
/// [launch]

using Launch = void (*)(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks);

void launch_grid_constant(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_persistent(grid_constant_kernel, 0, grid, max_blocks, maps.in, maps.out, grid);
}
void launch_constant_memory(const TileMaps&, const TileGrid& grid, unsigned max_blocks) {
  launch_persistent(constant_memory_kernel, 0, grid, max_blocks, grid);
}
void launch_global_memory(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_persistent(global_memory_kernel, 0, grid, max_blocks, maps.gmem, grid);
}
template <int kStages>
void launch_pipeline(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  unsigned long long* no_counter = nullptr;
  launch_persistent(pipeline_kernel<kStages>, pipeline_smem_bytes<kStages>(), grid, max_blocks, maps.in, maps.out, grid,
                    no_counter);
}

// pipeline_in_order's counter of taken tiles: zeroed by a memset on the same stream before each
// launch (two launches running at once would each need their own).
__device__ unsigned long long g_next_tile;

template <int kStages>
void launch_pipeline_in_order(const TileMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  unsigned long long* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&counter), g_next_tile));
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(*counter)));
  launch_persistent(pipeline_kernel<kStages, true>, pipeline_smem_bytes<kStages>(), grid, max_blocks, maps.in,
                    maps.out, grid, counter);
}

constexpr int kEdgeStages = 4;  // the pipeline depth of the edge-case variants
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
    {"constant_memory", "the same, maps in __constant__ memory (cudaMemcpyToSymbol)", &launch_constant_memory},
    {"global_memory", "the same, maps in global memory + fence.proxy.tensormap acquire", &launch_global_memory},
    {"pipeline_1stage", "persistent TMA pipeline, 1 stage of 32 KiB", &launch_pipeline<1>},
    {"pipeline_2stage", "persistent TMA pipeline, 2 stages", &launch_pipeline<2>},
    {"pipeline_3stage", "persistent TMA pipeline, 3 stages", &launch_pipeline<3>},
    {"pipeline_4stage", "persistent TMA pipeline, 4 stages", &launch_pipeline<4>},
    {"pipeline_in_order", "4 stages; each next tile taken in order from a global counter (chapter 06)",
     &launch_pipeline_in_order<4>},
    {"padded_rows", "4 stages; rows of pitch-3 floats padded to the pitch: edge boxes, clipped stores",
     &launch_pipeline<kEdgeStages>, true},
    {"shifted", "out[r][c] = 2 in[r-3][c-4] on padded rows: negative box starts, zero fill",
     &launch_pipeline<kEdgeStages>, true, true},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

// A matrix of `rows` x `pitch_elems` floats (input and poisoned output) and its tensor maps.
struct Problem {
  Problem(int rows, int pitch_elems)
      : rows(rows), pitch_elems(pitch_elems), host_in(std::size_t(rows) * pitch_elems), gmem_in(host_in.size()),
        gmem_out(host_in.size()), gmem_maps(2) {
    course::fill_pattern(host_in);
    gmem_in.upload(host_in.data());
  }
  MatrixView view(const Variant& v) const { return {rows, v.padded ? pitch_elems - kPaddingCols : pitch_elems, pitch_elems}; }
  // Encodes the maps of both matrices for this variant's view and publishes them.
  TileMaps maps(const Variant& v) {
    TileMaps m{encode_tiled(matrix_request(gmem_in.data(), view(v))), encode_tiled(matrix_request(gmem_out.data(), view(v)))};
    publish_maps(m, gmem_maps.data());
    return m;
  }
  int rows, pitch_elems;
  std::vector<float> host_in;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
  course::DeviceBuffer<CUtensorMap> gmem_maps;
};

// Poison, launch, synchronise, compare bit-exactly (padding and guard bands included).
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  const TileMaps maps = p.maps(v);
  p.gmem_out.poison();
  v.launch(maps, tile_grid(p.view(v), v.shifted), max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(reference(p.host_in, p.view(v), v.shifted), p.pitch_elems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(static_cast<int>(opts.size_bytes / kRowBytes), kMatrixCols);
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const MatrixView m = problem.view(v);
    const TileMaps maps = problem.maps(v);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, tile_grid(m, v.shifted), 0); },
        2 * std::size_t(m.rows) * m.cols * sizeof(float));  // each element read once and written once
  }
}

// What runs without a GPU: the tile, and the rule check on the maps this program encodes.
void print_host_model(std::ostream& out) {
  out << "tile: " << kTileRows << " x " << kTileCols << " floats (" << kTileBytes / 1024 << " KiB), " << kBlockThreads
      << " threads per block, pipelines of 1-4 stages (up to " << 4 * kTileBytes / 1024 << " KiB of shared memory)\n";
  const float* aligned = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);  // any 16-byte aligned address
  auto show = [&](const char* what, const MatrixView& m) {
    const std::optional<std::string> broken = broken_tensor_map_rule(matrix_request(aligned, m));
    out << "  " << what << ": " << m.rows << " x " << m.cols << " floats, row pitch " << m.pitch_elems * sizeof(float)
        << " B -> " << (broken ? "rejected: " + *broken : std::string("tensor map ok")) << '\n';
  };
  show("1 GiB matrix", {16384, kMatrixCols, kMatrixCols});
  show("rows of 1001 floats, packed", {999, 1001, 1001});
  show("rows of 1001 floats, padded", {999, 1001, 1004});
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_2d";
  info.title = "07 tma_2d: 2D tiles through a tensor map (cp.async.bulk.tensor)";
  info.explanation =
      "A float matrix with 16384-float rows (--size sets the row count) is doubled tile by tile: TMA\n"
      "loads 32 x 256 boxes into shared memory and stores them back. The map reaches the kernel as\n"
      "a __grid_constant__ parameter, in __constant__ memory or in global memory; a persistent\n"
      "pipeline keeps 1-4 tiles in flight; edge variants use padded rows and negative box starts.";
  info.requirement = {9, 0, false, "cp.async.bulk.tensor (TMA)"};
  info.verify_bytes = 64u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes % kRowBytes != 0) return "--size must be a whole number of 64 KiB rows (16384 floats)";
    if (bytes / kRowBytes > (1u << 24)) return "--size must be at most 16 Mi rows (1 TiB)";
    return std::nullopt;
  };
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
