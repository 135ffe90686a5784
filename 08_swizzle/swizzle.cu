// 08_swizzle: TMA swizzle modes, shared-memory banks, and a transpose that needs both.
//
// What you learn: how a tensor map's swizzle mode (none, 32B, 64B, 128B) rearranges the 16-byte
// chunks of a tile in shared memory, as one function (swizzle_layout.hpp) that the kernels, the
// printed tables, the figures and the tests share; the offset formula for buffers that do not
// start where the pattern starts; why a column of 16-byte chunks is an 8-way bank conflict
// without a swizzle and conflict-free with the 128B one; the guide's 8 x 8 int4 transpose, made
// complete; and a large fp32 transpose: TMA load, conflict-free transpose in shared memory, TMA
// store, with the blocks taking slabs in order, column by column, so that the output is written
// in whole rows; next to the classic padded-tile transpose and cuBLAS.
// What changed from 07: the tensor maps get a swizzle mode, and the kernel indexes shared memory
// through swizzled_chunk(). Tensor maps are encoded again (swizzle_tensor_map.hpp), compactly.
// Hardware: compute capability 9.0 (TMA tensor copies).
// Run: build/08_swizzle/swizzle [--bench] [--variant=NAME] [--size=4M|64M|1G]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#shared-memory-bank-swizzling
//        (4.11.2.2.5), tensor maps: #using-tma-to-transfer-multi-dimensional-arrays
// API: cuTensorMapEncodeTiled, CUtensorMapSwizzle
//        https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
//      cudaGetDriverEntryPointByVersion
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html
//      cuda::ptx::cp_async_bulk_tensor  https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
//      cuda::ptx::fence_proxy_async     https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      PTX swizzling modes  https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensor-swizzling-modes
//      cooperative_groups::invoke_one   https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/device-callable-apis.html
//      cublasSgeam  https://docs.nvidia.com/cuda/cublas/index.html#cublas-t-geam
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"
#include "swizzle_layout.hpp"
#include "swizzle_tensor_map.hpp"  // TiledMap, matrix_map(), tensor_map_problem(), encode_tiled()

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() below does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

// The fp32 transpose: a tile is 32 x 32 floats, so one tile row is one 128-byte pattern row.
constexpr int kTileDim = 32;
constexpr int kTileBytes = kTileDim * kTileDim * sizeof(float);  // 4 KiB
constexpr int kQuadDim = 4;                                      // a thread moves a 4 x 4 quad: a chunk per row
constexpr int kQuadsPerSide = kTileDim / kQuadDim;               // 8
constexpr int kTileThreads = kQuadsPerSide * kQuadsPerSide;      // 64: one quad per thread
// A slab is 2 x 4 tiles (64 rows x 128 floats), the unit a block takes at a time. It arrives as
// four boxes of 64 rows x 32 floats side by side (a box row can be no wider than the 128-byte
// span) and leaves as eight 32 x 32 tiles, each with its own TMA store.
constexpr int kSlabTileRows = 2, kSlabTileCols = 4;
constexpr int kSlabRows = kSlabTileRows * kTileDim;           // 64
constexpr int kSlabCols = kSlabTileCols * kTileDim;           // 128
constexpr int kTilesPerSlab = kSlabTileRows * kSlabTileCols;  // 8
constexpr int kBoxBytes = kSlabTileRows * kTileBytes;         // 8 KiB: one load box
constexpr int kSlabBytes = kTilesPerSlab * kTileBytes;        // 32 KiB
constexpr int kTileGroups = 4;                                // groups of 64 threads; each takes every 4th tile
constexpr int kTmaThreads = kTileGroups * kTileThreads;       // 256
constexpr int kStages = 2;                                    // input slabs in flight per block
constexpr int kOutBuffers = 2;                                // one is filled while TMA stores read the other
constexpr int kPatternAlign = 1024;                           // where the 128B pattern starts over
constexpr std::size_t kTmaSmemBytes = (kStages + kOutBuffers) * kSlabBytes + kPatternAlign;  // 129 KiB: opt-in
static_assert(kTileDim * sizeof(float) == kRowBytes, "a tile row must be one 128-byte row of the pattern");
static_assert(kTileBytes % kPatternAlign == 0, "every tile must start where the 128B pattern starts");
static_assert(kQuadDim * sizeof(float) == kChunkBytes, "a quad row must be one 16-byte chunk");
static_assert(kSlabRows <= 256, "a TMA box has at most 256 rows");
static_assert(kTilesPerSlab % kTileGroups == 0, "every group transposes as many tiles");
static_assert(kStages >= 2, "a stage's slab number is read two block syncs after it is written");
static_assert(kSlabCols % kSlabRows == 0, "a square matrix of whole slab columns has whole slab rows");
// The classic transpose: 32 x 8 threads, each moving 4 elements of a 32 x 32 tile.
constexpr int kClassicRows = 8;
constexpr int kClassicPad = 1;  // one extra float per shared-memory row
// The guide's example: an 8 x 8 tile of int4 (16-byte) elements, one 128-byte row per tile row.
constexpr int kGuideDim = 8;
constexpr int kGuideThreads = 8;
static_assert(kGuideDim * sizeof(int4) == kRowBytes, "a guide tile row must be one 128-byte pattern row");

// ---- Host reference -----------------------------------------------------------------------

// in: rows x cols, row-major; out: cols x rows.
template <class T>
std::vector<T> reference_transpose(const std::vector<T>& in, int rows, int cols) {
  std::vector<T> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
  return out;
}

// Every 32 x 32 tile transposed where it is: what tma_tiles_in_place writes (rows x cols).
std::vector<float> reference_tiles_in_place(const std::vector<float>& in, int rows, int cols) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int tile_r = r / kTileDim * kTileDim, tile_c = c / kTileDim * kTileDim;
      const int src_r = tile_r + (c - tile_c), src_c = tile_c + (r - tile_r);
      out[static_cast<std::size_t>(r) * cols + c] = in[static_cast<std::size_t>(src_r) * cols + src_c];
    }
  }
  return out;
}

// The guide's problem on the same bytes: each row of `cols` floats read as cols / 4 int4 elements.
std::vector<float> reference_int4_transpose(const std::vector<float>& in, int rows, int cols) {
  std::vector<int4> elements(in.size() / 4);
  std::memcpy(elements.data(), in.data(), in.size() * sizeof(float));
  const std::vector<int4> transposed = reference_transpose(elements, rows, cols / 4);
  std::vector<float> out(in.size());
  std::memcpy(out.data(), transposed.data(), out.size() * sizeof(float));
  return out;
}

// ---- The guide's 8 x 8 int4 transpose (4.11.2.2.5), completed -------------------------------

/// [guide_indexing]
// Thread j, step i of the guide's loop moves element (i, j) of the tile to element (j, i) of the
// transposed tile. Both live in 128-byte rows, so a swizzle only changes the column.
__host__ __device__ constexpr int guide_load_index(Swizzle mode, int i, int j, int offset) {
  return i * kGuideDim + swizzled_chunk(mode, i, j, offset);
}
__host__ __device__ constexpr int guide_store_index(Swizzle mode, int i, int j, int offset) {
  return j * kGuideDim + swizzled_chunk(mode, j, i, offset);
}
__host__ __device__ inline void guide_transpose_column(Swizzle mode, const int4* smem_tile, int4* smem_tile_tr, int j,
                                                       int in_offset, int out_offset) {
  for (int i = 0; i < kGuideDim; ++i) {
    smem_tile_tr[guide_store_index(mode, i, j, out_offset)] = smem_tile[guide_load_index(mode, i, j, in_offset)];
  }
}
/// [guide_indexing]

/// [guide_kernel]
// One block of 8 threads per 8 x 8 tile of int4: load it with TMA, transpose it in shared memory,
// store it with TMA to the mirrored tile position.
template <Swizzle kMode>
__global__ void guide_int4_kernel(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map) {
  __shared__ alignas(1024) int4 smem_tile[kGuideDim][kGuideDim];  // the 128B pattern repeats every 1024 bytes
  __shared__ alignas(1024) int4 smem_tile_tr[kGuideDim][kGuideDim];
  __shared__ block_barrier bar;
  // TUTORIAL: cg::invoke_one runs the lambda on one thread of the group, chosen with elect.sync
  // on compute capability 9.0. That predicate is uniform in the compiler's eyes: it knows
  // exactly one lane goes in. `if (threadIdx.x == 0)` is a data-dependent branch to it, so the
  // warp diverges and the compiler must assume any lane might take it. The group here is the
  // block's 8 threads, all in one warp: coalesced_threads() names exactly the lanes present.
  cg::invoke_one(cg::coalesced_threads(), [&] {
    init(&bar, 1);  // one arrival per phase: the elected thread's, which also announces the bytes
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // make the barrier visible to the TMA unit
  });
  __syncthreads();  // nobody waits on the barrier before it is initialised

  cg::invoke_one(cg::coalesced_threads(), [&] {
    const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.x) * 4 * kGuideDim,  // int32 elements
                                    static_cast<std::int32_t>(blockIdx.y) * kGuideDim};     // rows
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, &smem_tile, &in_map, coords,
                              cuda::device::barrier_native_handle(bar));
    // arrive (the one expected arrival) and add the tile's bytes to what this phase waits for
    (void)cuda::device::barrier_arrive_tx(bar, 1, sizeof(smem_tile));
  });
  course::bounded_wait_parity(bar, false, {"full", -1, 0});  // phase 0 completes when the 1 KiB landed

  // The swizzle depends on shared-memory addresses; with alignas(1024) both offsets are 0.
  const int in_offset = swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_tile)));
  const int out_offset = swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_tile_tr)));
  for (int j = threadIdx.x; j < kGuideDim; j += blockDim.x) {
    guide_transpose_column(kMode, &smem_tile[0][0], &smem_tile_tr[0][0], j, in_offset, out_offset);
  }
  ptx::fence_proxy_async(ptx::space_shared);  // this thread's stores become visible to the async proxy (TMA)
  __syncthreads();                            // every thread's stores are done and fenced

  cg::invoke_one(cg::coalesced_threads(), [&] {
    // The guide leaves {x, y} undefined here: it is the mirrored tile, column block y, row block x.
    const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.y) * 4 * kGuideDim,
                                    static_cast<std::int32_t>(blockIdx.x) * kGuideDim};
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &out_map, coords, &smem_tile_tr);
    ptx::cp_async_bulk_commit_group();                    // close the bulk group holding this store
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());  // shared memory is read: the block may exit
  });
}
/// [guide_kernel]

// ---- The large fp32 transpose with TMA ----------------------------------------------------

/// [quad_plan]
// Who moves what. Thread t owns the 4 x 4 quad in quad column qc = t / 8 and quad row qr = t % 8,
// so the 8 lanes of a quarter-warp own one quad column, top to bottom. A quad's four rows are
// four 16-byte chunks of one chunk column: with a plain layout all eight lanes hit the same
// four banks. The 128B swizzle spreads chunk column qc over the eight bank groups, but only
// across eight consecutive rows, and rows 4qr + k (same k) are four apart. So each lane starts
// at another row of its quad: its k-th load takes row k ^ rotation, and at every step the
// quarter-warp reads eight rows that differ in row % 8.
struct QuadOwner {
  int qr, qc, rotation;
};
__host__ __device__ constexpr QuadOwner quad_owner(int thread) {
  return {thread % kQuadsPerSide, thread / kQuadsPerSide, (thread % kQuadsPerSide >> 1) & 3};
}
// Byte of the k-th 16-byte load of `thread` in the input tile (rotate = false: rows in order).
__host__ __device__ constexpr std::uint32_t quad_load_byte(Swizzle mode, int thread, int k, int offset,
                                                           bool rotate = true) {
  const QuadOwner q = quad_owner(thread);
  const int row = kQuadDim * q.qr + (rotate ? k ^ q.rotation : k);
  return row * kRowBytes + swizzled_chunk(mode, row, q.qc, offset) * kChunkBytes;
}
// Byte of the n-th 16-byte store: row n of the transposed quad goes to output row 4 qc + n, chunk qr.
__host__ __device__ constexpr std::uint32_t quad_store_byte(Swizzle mode, int thread, int n, int offset) {
  const QuadOwner q = quad_owner(thread);
  const int row = kQuadDim * q.qc + n;
  return row * kRowBytes + swizzled_chunk(mode, row, q.qr, offset) * kChunkBytes;
}
/// [quad_plan]

/// [transpose_quad]
__host__ __device__ __forceinline__ void swap_if(bool swap, float4& a, float4& b) {
  const float4 old_a = a;
  a = make_float4(swap ? b.x : a.x, swap ? b.y : a.y, swap ? b.z : a.z, swap ? b.w : a.w);
  b = make_float4(swap ? old_a.x : b.x, swap ? old_a.y : b.y, swap ? old_a.z : b.z, swap ? old_a.w : b.w);
}

// One thread's share of a tile: four 16-byte loads, a 4 x 4 transpose in registers, four stores.
__host__ __device__ __forceinline__ void transpose_quad(Swizzle mode, const unsigned char* smem_in_tile,
                                                        unsigned char* smem_out_tile, int thread, int in_offset,
                                                        int out_offset) {
  float4 v[kQuadDim];
#pragma unroll
  for (int k = 0; k < kQuadDim; ++k) {
    v[k] = *reinterpret_cast<const float4*>(smem_in_tile + quad_load_byte(mode, thread, k, in_offset));
  }
  // v[k] holds quad row k ^ rotation. Two conditional swaps put the rows back in order while every
  // register keeps a compile-time index (v[k ^ rotation] would send v to local memory).
  const int rotation = quad_owner(thread).rotation;
  swap_if(rotation & 1, v[0], v[1]);
  swap_if(rotation & 1, v[2], v[3]);
  swap_if(rotation & 2, v[0], v[2]);
  swap_if(rotation & 2, v[1], v[3]);
  // Row n of the transposed quad is column n of the quad.
  const float4 out[kQuadDim] = {
      make_float4(v[0].x, v[1].x, v[2].x, v[3].x), make_float4(v[0].y, v[1].y, v[2].y, v[3].y),
      make_float4(v[0].z, v[1].z, v[2].z, v[3].z), make_float4(v[0].w, v[1].w, v[2].w, v[3].w)};
#pragma unroll
  for (int n = 0; n < kQuadDim; ++n) {
    *reinterpret_cast<float4*>(smem_out_tile + quad_store_byte(mode, thread, n, out_offset)) = out[n];
  }
}
/// [transpose_quad]

// Where a block is in its ring of kStages input buffers, and the parity of that round.
struct StageCursor {
  int stage = 0;
  std::uint32_t phase = 0;
  __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

/// [slab_order]
// Which slab a block transposes next, and where slab number i lies.
enum class SlabOrder {
  dealt_rows,     // block b takes slabs b, b + grid, b + 2 grid, ...; numbered row by row
  taken_rows,     // each next slab comes from a counter in global memory, numbered row by row
  taken_columns,  // from the counter, numbered column by column: down the input, across the output
};

struct SlabOrigin {
  int row, col;  // the slab's first input element
};
// The slabs over a rows x cols input; the last row and column of slabs may hang over the edge
// (TMA fills what a load box finds outside with zeros and clips the stores there).
struct SlabGrid {
  int rows = 0, cols = 0;
  __host__ __device__ int count() const { return rows * cols; }
  __host__ __device__ SlabOrigin origin(SlabOrder order, int slab) const {
    const bool by_columns = order == SlabOrder::taken_columns;
    return {(by_columns ? slab % rows : slab / cols) * kSlabRows, (by_columns ? slab / rows : slab % cols) * kSlabCols};
  }
};
inline SlabGrid slab_grid(int rows, int cols) {
  return {(rows + kSlabRows - 1) / kSlabRows, (cols + kSlabCols - 1) / kSlabCols};
}
/// [slab_order]

/// [tma_transpose]
// kInPlace (the tma_tiles_in_place variant, a measurement): every tile is transposed in shared
// memory as usual but stored back where it was loaded from, so the global traffic is that of a
// plain copy made of the same boxes.
template <Swizzle kMode, SlabOrder kOrder, bool kInPlace = false>
__global__ void __launch_bounds__(kTmaThreads)
    tma_transpose_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                         SlabGrid slabs, unsigned long long* next_slab) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ std::uint64_t full_bar[kStages];  // full_bar[s]: the slab in input buffer s landed
  __shared__ int stage_slab[kStages];          // the slab in input buffer s (>= slabs.count(): none left)
  const std::uint32_t raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_in = smem_raw + (kPatternAlign - raw_addr % kPatternAlign) % kPatternAlign;  // [kStages][32 KiB]
  unsigned char* smem_out = smem_in + kStages * kSlabBytes;                                        // [2][32 KiB]
  // Every tile starts a multiple of 1024 bytes after smem_in, so every offset is this one: 0 here.
  // The guide's formula keeps the kernel right if that alignment is ever given up.
  const int offset = swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_in)));
  const int tile_group = threadIdx.x / kTileThreads;  // this thread transposes tiles tile_group, tile_group + 4
  const int quad_thread = threadIdx.x % kTileThreads;  // which quad of them (quad_owner)

  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const bool is_issuer_warp = threadIdx.x / 32 == 0;  // one elected lane of warp 0 issues every TMA copy
  // Issuer only: take the next slab (dealt_rows: the one the fixed deal gives), record it for the
  // stage and start its four box loads; with none left, complete the stage's phase with a plain
  // arrival so that the block sees the end.
  const auto take_and_load = [&](int stage, int dealt) {
    const int slab = kOrder == SlabOrder::dealt_rows ? dealt : static_cast<int>(atomicAdd(next_slab, 1ull));
    stage_slab[stage] = slab;
    if (slab >= slabs.count()) {
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
      return;
    }
    const SlabOrigin at = slabs.origin(kOrder, slab);
    // arrive (the one expected arrival) and add the slab's bytes to what this phase waits for
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage], kSlabBytes);
    for (int c = 0; c < kSlabTileCols; ++c) {  // box c: 64 rows x 32 floats, tiles (0, c) and (1, c)
      const std::int32_t coords[2] = {at.col + c * kTileDim, at.row};
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_in + stage * kSlabBytes + c * kBoxBytes,
                                &in_map, coords, &full_bar[stage]);
    }
  };
  if (is_issuer_warp) {
    cg::invoke_one(warp, [&] {
      for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the issuer's
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // make the barriers visible to the TMA unit
      for (int s = 0; s < kStages; ++s) take_and_load(s, blockIdx.x + s * gridDim.x);
    });
  }
  __syncthreads();  // nobody waits on a barrier before it is initialised, or reads stage_slab before it is written

  StageCursor cursor;
  // A stage's slab is written by the issuer after one block sync and read after the stage's
  // wait, kStages iterations later: the block sync of the iteration between orders the two.
  // Each block's slabs increase in ring order, so the first "none left" ends the loop.
  for (int out_buffer = 0;; cursor.advance(), out_buffer ^= 1) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const int slab = stage_slab[cursor.stage];
    if (slab >= slabs.count()) break;  // the same answer in every thread
    const unsigned char* smem_in_slab = smem_in + cursor.stage * kSlabBytes;
    unsigned char* smem_out_slab = smem_out + out_buffer * kSlabBytes;
#pragma unroll
    for (int tile = tile_group; tile < kTilesPerSlab; tile += kTileGroups) {
      transpose_quad(kMode, smem_in_slab + tile * kTileBytes, smem_out_slab + tile * kTileBytes, quad_thread, offset,
                     offset);
    }
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's stores become visible to the async proxy (TMA)
    if (is_issuer_warp) {
      // The previous slab's stores have finished reading the other output buffer, which the next
      // iteration overwrites. (.read: the global writes may still be in flight.)
      cg::invoke_one(warp, [] { ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>()); });
    }
    __syncthreads();  // the transposed tiles are complete and fenced; nobody reads input buffer `stage` any more
    if (is_issuer_warp) {
      cg::invoke_one(warp, [&] {
        const SlabOrigin at = slabs.origin(kOrder, slab);
        for (int c = 0; c < kSlabTileCols; ++c) {
          for (int r = 0; r < kSlabTileRows; ++r) {  // tile (r, c) of the slab goes to the mirrored place
            const int in_row = at.row + r * kTileDim, in_col = at.col + c * kTileDim;
            const std::int32_t coords[2] = {kInPlace ? in_col : in_row, kInPlace ? in_row : in_col};  // {col, row}
            ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &out_map, coords,
                                      smem_out_slab + (c * kSlabTileRows + r) * kTileBytes);
          }
        }
        ptx::cp_async_bulk_commit_group();  // the slab's eight stores form one bulk group, counted by wait_group_read
        take_and_load(cursor.stage, slab + kStages * gridDim.x);  // refill the buffer everyone just finished reading
      });
    }
  }
  if (is_issuer_warp) {
    // Shared memory must outlive the last store's reads; the kernel's end publishes the writes.
    cg::invoke_one(warp, [] { ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>()); });
  }
}
/// [tma_transpose]

// ---- The classic transpose: ordinary loads and stores through a padded tile -----------------

/// [classic_padded]
__global__ void classic_padded_kernel(const float* __restrict__ gmem_in, float* __restrict__ gmem_out, int rows,
                                      int cols) {
  __shared__ float tile[kTileDim][kTileDim + kClassicPad];  // the pad puts column x of row y in bank (y + x) % 32
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t in_col = blockIdx.x * kTileDim + tx, in_row = blockIdx.y * kTileDim + ty;
  for (int r = 0; r < kTileDim; r += kClassicRows) tile[ty + r][tx] = gmem_in[(in_row + r) * cols + in_col];
  __syncthreads();  // the whole tile is in shared memory
  const std::size_t out_col = blockIdx.y * kTileDim + tx, out_row = blockIdx.x * kTileDim + ty;
  for (int r = 0; r < kTileDim; r += kClassicRows) gmem_out[(out_row + r) * rows + out_col] = tile[tx][ty + r];
}
/// [classic_padded]

// ---- Launchers and the variant table -------------------------------------------------------

// Tensor maps over the input and the output for one box shape and swizzle, encoded once.
struct MapPair {
  CUtensorMap in, out;
};

// Everything a launcher needs. in: rows x cols floats; out: cols x rows.
struct Operands {
  const float* gmem_in = nullptr;
  float* gmem_out = nullptr;
  int rows = 0, cols = 0;
  MapPair fp32_plain{}, fp32_swizzled{};  // load 64 x 32-float boxes, store 32 x 32 tiles; no swizzle / 128B
  MapPair fp32_in_place{};                // 128B; the output seen as rows x cols, as the input is
  MapPair int4_plain{}, int4_swizzled{};  // the guide's 8 x 8-int4 boxes over the same bytes
};

/// [maps]
Operands make_operands(const float* gmem_in, float* gmem_out, int rows, int cols) {
  Operands ops{gmem_in, gmem_out, rows, cols};
  constexpr CUtensorMapDataType kFloat = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, kInt = CU_TENSOR_MAP_DATA_TYPE_INT32;
  const auto fp32 = [&](Swizzle s) {
    return MapPair{encode_tiled(matrix_map(kFloat, 4, gmem_in, rows, cols, kSlabRows, kTileDim, s)),
                   encode_tiled(matrix_map(kFloat, 4, gmem_out, cols, rows, kTileDim, kTileDim, s))};
  };
  // The guide's encoding: int4 elements described as 4 x INT32, a box of 32 x 8 int32 = 8 x 8 int4.
  const auto int4 = [&](Swizzle s) {
    return MapPair{encode_tiled(matrix_map(kInt, 4, gmem_in, rows, cols, kGuideDim, 4 * kGuideDim, s)),
                   encode_tiled(matrix_map(kInt, 4, gmem_out, cols / 4, 4 * rows, kGuideDim, 4 * kGuideDim, s))};
  };
  ops.fp32_plain = fp32(Swizzle::none);
  ops.fp32_swizzled = fp32(Swizzle::b128);
  ops.fp32_in_place = {ops.fp32_swizzled.in,
                       encode_tiled(matrix_map(kFloat, 4, gmem_out, rows, cols, kTileDim, kTileDim, Swizzle::b128))};
  ops.int4_plain = int4(Swizzle::none);
  ops.int4_swizzled = int4(Swizzle::b128);
  return ops;
}
/// [maps]

using Launch = void (*)(const Operands& ops);

template <Swizzle kMode>
void launch_guide(const Operands& ops) {
  const MapPair& maps = kMode == Swizzle::none ? ops.int4_plain : ops.int4_swizzled;
  const dim3 grid(ops.cols / 4 / kGuideDim, ops.rows / kGuideDim);  // one block per 8 x 8 int4 tile
  guide_int4_kernel<kMode><<<grid, kGuideThreads>>>(maps.in, maps.out);
  COURSE_CHECK_LAUNCH();
}

/// [launch_tma]
// As many blocks as fit on the GPU at once; each loops over slabs. Computed once per kernel.
// 129 KiB of dynamic shared memory is more than the default 48 KiB: the kernel must opt in.
template <Swizzle kMode, SlabOrder kOrder, bool kInPlace>
int tma_resident_blocks() {
  static const int blocks = [] {
    int device = 0, num_sms = 0, per_sm = 0;
    COURSE_CHECK(cudaGetDevice(&device));
    COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
    const auto kernel = tma_transpose_kernel<kMode, kOrder, kInPlace>;
    COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kTmaSmemBytes)));
    COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kTmaThreads, kTmaSmemBytes));
    return num_sms * per_sm;
  }();
  return blocks;
}

// The counter the taken orders draw slab numbers from: zeroed by a memset on the same stream
// before each launch (two launches running at once would each need their own).
__device__ unsigned long long g_next_slab;

template <Swizzle kMode, SlabOrder kOrder, bool kInPlace = false>
void launch_tma(const Operands& ops) {
  const MapPair& maps = kInPlace ? ops.fp32_in_place : kMode == Swizzle::none ? ops.fp32_plain : ops.fp32_swizzled;
  const SlabGrid slabs = slab_grid(ops.rows, ops.cols);
  const int grid = std::min(slabs.count(), tma_resident_blocks<kMode, kOrder, kInPlace>());
  unsigned long long* next_slab = nullptr;
  if (kOrder != SlabOrder::dealt_rows) {
    COURSE_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&next_slab), g_next_slab));
    COURSE_CHECK(cudaMemsetAsync(next_slab, 0, sizeof(*next_slab)));
  }
  tma_transpose_kernel<kMode, kOrder, kInPlace>
      <<<grid, kTmaThreads, kTmaSmemBytes>>>(maps.in, maps.out, slabs, next_slab);
  COURSE_CHECK_LAUNCH();
}
/// [launch_tma]

void launch_classic(const Operands& ops) {
  const dim3 grid(ops.cols / kTileDim, ops.rows / kTileDim), block(kTileDim, kClassicRows);
  classic_padded_kernel<<<grid, block>>>(ops.gmem_in, ops.gmem_out, ops.rows, ops.cols);
  COURSE_CHECK_LAUNCH();
}

// cuBLAS for comparison: C = A^T. Row-major in (rows x cols) is column-major A (cols x rows).
// With beta = 0 and B = C (cuBLAS's in-place form), B contributes nothing.
void launch_cublas(const Operands& ops) {
  static const cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;  // created once per process, kept until it ends
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw course::CudaError("cublasCreate failed");
    return h;
  }();
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t status = cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, ops.rows, ops.cols, &one, ops.gmem_in,
                                            ops.cols, &zero, ops.gmem_out, ops.rows, ops.gmem_out, ops.rows);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw course::CudaError(std::string("cublasSgeam: ") + cublasGetStatusString(status));
  }
}

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  // What the output must be: the fp32 transpose; the guide's problem (the same bytes transposed
  // as int4 elements); or every 32 x 32 tile transposed in its own place.
  enum class Expect { transpose, int4_transpose, tiles_in_place } expect = Expect::transpose;
};
const Variant kVariants[] = {
    {"guide_int4_unswizzled", "the guide's 8x8 int4 tile transpose, no swizzle (8-way store conflicts)",
     &launch_guide<Swizzle::none>, Variant::Expect::int4_transpose},
    {"guide_int4_swizzled", "the guide's 8x8 int4 tile transpose with the 128B swizzle", &launch_guide<Swizzle::b128>,
     Variant::Expect::int4_transpose},
    {"classic_padded", "fp32: ordinary loads, 32x33 padded tile, ordinary stores", &launch_classic},
    {"tma_unswizzled", "fp32: TMA load/store, plain tile (8-way conflicts on the loads)",
     &launch_tma<Swizzle::none, SlabOrder::taken_columns>},
    {"tma_swizzled", "fp32: TMA load/store, 128B swizzle, conflict-free transpose; slabs taken column by column",
     &launch_tma<Swizzle::b128, SlabOrder::taken_columns>},
    {"tma_swizzled_taken_rows", "tma_swizzled, slabs taken row by row: the output is written in scattered rows",
     &launch_tma<Swizzle::b128, SlabOrder::taken_rows>},
    {"tma_swizzled_dealt_rows", "tma_swizzled, slabs dealt to the blocks round-robin, row by row",
     &launch_tma<Swizzle::b128, SlabOrder::dealt_rows>},
    {"tma_tiles_in_place", "tma_swizzled_taken_rows, each tile stored where it was loaded: a copy in the same boxes",
     &launch_tma<Swizzle::b128, SlabOrder::taken_rows, true>, Variant::Expect::tiles_in_place},
    {"cublas_geam", "fp32: cublasSgeam (C = A^T), for comparison", &launch_cublas},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct Problem {
  Problem(int rows, int cols)
      : rows(rows), cols(cols), host_in(static_cast<std::size_t>(rows) * cols), gmem_in(host_in.size()),
        gmem_out(host_in.size()) {
    course::fill_pattern(host_in);  // multiples of 1/256: cuBLAS's 1 * x + 0 keeps every bit
    expected = reference_transpose(host_in, rows, cols);
    expected_int4 = reference_int4_transpose(host_in, rows, cols);
    expected_in_place = reference_tiles_in_place(host_in, rows, cols);
    gmem_in.upload(host_in.data());
    ops = make_operands(gmem_in.data(), gmem_out.data(), rows, cols);
  }
  int rows, cols;
  std::vector<float> host_in, expected, expected_int4, expected_in_place;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
  Operands ops;
};

course::Comparison verify(const Variant& v, Problem& p) {
  p.gmem_out.poison();
  v.launch(p.ops);
  COURSE_CHECK(cudaDeviceSynchronize());
  switch (v.expect) {
    case Variant::Expect::int4_transpose: return p.gmem_out.check(p.expected_int4, 4 * p.rows);
    case Variant::Expect::tiles_in_place: return p.gmem_out.check(p.expected_in_place, p.cols);
    default: return p.gmem_out.check(p.expected, p.rows);
  }
}

// --size is an N x N fp32 matrix: 4 N^2 bytes, N a multiple of the 128-float slab width, at most 32768.
std::optional<int> square_side(std::size_t bytes) {
  const auto side = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(bytes / 4))));
  if (bytes % 4 != 0 || side * side * 4 != bytes || side == 0 || side % kSlabCols != 0 || side > 32768) {
    return std::nullopt;
  }
  return static_cast<int>(side);
}

void run(const course::Options& opts, course::Report& report) {
  const int side = *square_side(opts.size_bytes);
  Problem problem(side, side);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(problem.ops); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

// ---- What the program prints without a GPU: the patterns and the bank model ----------------

// Lane addresses of one warp instruction of each kernel, from the functions the kernels use.
std::vector<std::uint32_t> guide_lanes(Swizzle mode, bool store, int i) {
  std::vector<std::uint32_t> lanes;
  for (int j = 0; j < kGuideThreads; ++j) {
    const int index = store ? guide_store_index(mode, i, j, 0) : guide_load_index(mode, i, j, 0);
    lanes.push_back(index * sizeof(int4));
  }
  return lanes;
}
std::vector<std::uint32_t> quad_lanes(Swizzle mode, bool store, int warp, int k, bool rotate = true) {
  std::vector<std::uint32_t> lanes;
  for (int lane = 0; lane < 32; ++lane) {
    const int t = warp * 32 + lane;
    lanes.push_back(store ? quad_store_byte(mode, t, k, 0) : quad_load_byte(mode, t, k, 0, rotate));
  }
  return lanes;
}
std::vector<std::uint32_t> classic_lanes(int pad, bool load, int ty, int r) {
  std::vector<std::uint32_t> lanes;
  for (int tx = 0; tx < 32; ++tx) {
    const int row = load ? tx : ty + r, col = load ? ty + r : tx;  // load: tile[tx][ty + r]
    lanes.push_back((row * (kTileDim + pad) + col) * sizeof(float));
  }
  return lanes;
}

// The worst instruction of a kernel's loads or stores, in conflict ways.
template <class Lanes>
int worst_ways(int instructions, int access_bytes, Lanes&& lanes) {
  int ways = 0;
  for (int n = 0; n < instructions; ++n) ways = std::max(ways, count_bank_conflicts(lanes(n), access_bytes).ways);
  return ways;
}

struct ModelRow {
  const char* what;
  int load_ways, store_ways;
};
std::vector<ModelRow> bank_model() {
  const auto guide = [](Swizzle m, bool store) {
    return worst_ways(kGuideDim, 16, [&](int i) { return guide_lanes(m, store, i); });
  };
  // The two warps of one tile (every tile of a slab is transposed the same way), four steps each.
  const auto quad = [](Swizzle m, bool store, bool rotate) {
    return worst_ways(kTileThreads / 32 * kQuadDim, 16,
                      [&](int n) { return quad_lanes(m, store, n / kQuadDim, n % kQuadDim, rotate); });
  };
  const auto classic = [](int pad, bool load) {
    return worst_ways(kTileDim, 4, [&](int n) {  // ty = 0..7, then the next 8 rows: 32 instructions per tile
      return classic_lanes(pad, load, n % kClassicRows, n / kClassicRows * kClassicRows);
    });
  };
  return {
      {"guide_int4_unswizzled", guide(Swizzle::none, false), guide(Swizzle::none, true)},
      {"guide_int4_swizzled", guide(Swizzle::b128, false), guide(Swizzle::b128, true)},
      {"classic_padded", classic(kClassicPad, true), classic(kClassicPad, false)},
      {"(classic without the pad)", classic(0, true), classic(0, false)},
      {"tma_unswizzled", quad(Swizzle::none, false, true), quad(Swizzle::none, true, true)},
      {"tma_swizzled", quad(Swizzle::b128, false, true), quad(Swizzle::b128, true, true)},
      {"(tma_swizzled, rows in order)", quad(Swizzle::b128, false, false), quad(Swizzle::b128, true, false)},
  };
}

void print_host_model(std::ostream& out) {
  out << "\nWhere each 16-byte chunk of a 128-byte row is stored (swizzled_chunk): column p = banks 4p..4p+3,\n"
         "number = the logical chunk stored there.\n";
  for (Swizzle mode : kAllSwizzles) {
    out << swizzle_name(mode) << ": span " << span_bytes(mode) << " B, repeats every " << repeat_bytes(mode) << " B\n";
    print_pattern(out, mode);
  }
  out << "A 128B-swizzled buffer 384 bytes past a 1024-byte boundary has offset (384 / 128) % 8 = "
      << swizzle_offset(Swizzle::b128, 384) << ":\nits rows start at pattern row 3.\n";
  print_pattern(out, Swizzle::b128, swizzle_offset(Swizzle::b128, 384), 2);
  out << "\nBank model: replays of the worst warp instruction (1 = conflict-free)\n";
  char line[96];
  std::snprintf(line, sizeof line, "  %-30s %6s %6s\n", "variant", "loads", "stores");
  out << line;
  for (const ModelRow& row : bank_model()) {
    std::snprintf(line, sizeof line, "  %-30s %5d%s %5d%s\n", row.what, row.load_ways, "x", row.store_ways, "x");
    out << line;
  }
  out << '\n';
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "swizzle";
  info.title = "08 swizzle: TMA swizzle modes and a conflict-free shared-memory transpose";
  info.explanation =
      "Transposes an N x N fp32 matrix: the guide's 8x8 int4 TMA tile kernel (the same bytes read as int4),\n"
      "a classic padded-tile transpose, and TMA load -> shared-memory transpose -> TMA store without and\n"
      "with the 128B swizzle; cuBLAS for comparison. The tables below come from the swizzle function.";
  info.requirement = {9, 0, false, "TMA tensor copies (cp.async.bulk.tensor)"};
  info.verify_bytes = 4u << 20;  // 1024 x 1024
  info.bench_bytes = 1u << 30;   // 16384 x 16384
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (square_side(bytes)) return std::nullopt;
    return "--size must be an N x N fp32 matrix, 4 N^2 bytes with N a multiple of 128 up to 32768: e.g. 4M "
           "(N = 1024), 64M (4096), 1G (16384)";
  };
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
