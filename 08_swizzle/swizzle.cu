// 08_swizzle: a matrix transpose at copy speed, with TMA boxes swizzled in shared memory.
//
// What you learn: an fp32 transpose on the 128B swizzle. TMA loads 64 x 128-float slabs, 256
// threads transpose them in shared memory 4 x 4 floats at a time (each lane starting at another
// row of its quad: the quad rotation), TMA stores each 32 x 32 tile to its mirrored place; the
// blocks take slabs in order from a counter. The classic padded-tile transpose runs beside it.
// Read transpose_guide.cu first (the guide's 8 x 8 int4 transpose: one tile, one block).
// What changed from 07: the maps get a swizzle mode, shared memory is indexed through
// swizzled_chunk() (swizzle_model.hpp), and each tile is stored at the mirrored place.
// Needs compute capability 9.0. Run: build/08_swizzle/swizzle [--bench] [--variant=NAME]
// Guide (4.11.2.2.5, bank swizzling), API (CUtensorMapSwizzle, cp_async_bulk_tensor):
//   https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//   https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
#include <cuda.h>  // CUtensorMap (types only: the driver library is never linked)
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/tensor_map.hpp"
#include "course/wait.cuh"
#include "swizzle_model.hpp"  // the swizzle, the quads, the bank model, the reference

namespace ptx = cuda::ptx;

// A slab is 2 x 4 tiles (64 rows x 128 floats), the unit a block takes at a time. It arrives as
// four boxes of 64 rows x 32 floats side by side (a box row can be no wider than the 128-byte
// span) and leaves as eight 32 x 32 tiles, each with its own TMA store.
constexpr int kSlabTileRows = 2, kSlabTileCols = 4;
constexpr int kSlabRows = kSlabTileRows * kTileDim;           // 64
constexpr int kSlabCols = kSlabTileCols * kTileDim;           // 128
constexpr int kTilesPerSlab = kSlabTileRows * kSlabTileCols;  // 8
constexpr int kBoxBytes = kSlabTileRows * kTileBytes;         // 8 KiB: one load box
constexpr int kSlabBytes = kTilesPerSlab * kTileBytes;        // 32 KiB
constexpr int kTileGroups = 4;  // groups of 64 threads; each takes every 4th tile
constexpr int kTmaThreads = kTileGroups * kTileThreads;  // 256
constexpr int kStages = 2;                               // input slabs in flight per block
constexpr int kOutBuffers = 2;  // one is filled while TMA stores read the other
constexpr int kPatternAlign = 1024;  // where the 128B pattern starts over
// 129 KiB: opt-in
constexpr std::size_t kTmaSmemBytes = (kStages + kOutBuffers) * kSlabBytes + kPatternAlign;
static_assert(kBoxBytes == box_smem_bytes(Swizzle::b128, kTileDim * sizeof(float), kSlabRows),
              "box = 2 tiles");
static_assert(kSlabRows <= 256, "a TMA box has at most 256 rows");
static_assert(kTilesPerSlab % kTileGroups == 0, "every group transposes as many tiles");
static_assert(kStages >= 2, "a stage's slab number is read two block syncs after it is written");
static_assert(kSideMultiple % kSlabCols == 0, "the --size rule gives whole slabs");

/// [transpose_quad]
// One thread's share of a tile: four 16-byte loads, a 4 x 4 transpose in registers, four stores.
// `offset` is the pattern row both tiles start on (swizzle_offset of their address).
__host__ __device__ __forceinline__ void transpose_quad(
    Swizzle mode, const unsigned char* smem_in_tile, unsigned char* smem_out_tile, int thread,
    int offset) {
  float4 v[kQuadDim];
#pragma unroll
  for (int k = 0; k < kQuadDim; ++k) {
    v[k] = *reinterpret_cast<const float4*>(smem_in_tile + quad_load_byte(mode, thread, k, offset));
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
    *reinterpret_cast<float4*>(smem_out_tile + quad_store_byte(mode, thread, n, offset)) = out[n];
  }
}
/// [transpose_quad]

/// [slab_grid]
struct SlabOrigin { int row, col; };  // the slab's first input element
// The slabs over a rows x cols input; the last row and column of slabs may hang over the edge
// (TMA fills what a load box finds outside with zeros and clips the stores there).
struct SlabGrid {
  int rows = 0, cols = 0;  // slabs down, slabs across
  __host__ __device__ int count() const { return rows * cols; }
  // Slab i, numbered column by column: consecutive slabs lie one below the other in the input, so
  // they write neighbouring stretches of the same 128 output rows.
  __host__ __device__ SlabOrigin origin(int slab) const {
    return {slab % rows * kSlabRows, slab / rows * kSlabCols};
  }
};
inline SlabGrid slab_grid(int rows, int cols) {
  return {(rows + kSlabRows - 1) / kSlabRows, (cols + kSlabCols - 1) / kSlabCols};
}
/// [slab_grid]

/// [slab_copies]
// The leader's loads of a slab: four boxes side by side, box c holding tiles (0, c) and (1, c).
__device__ void load_slab(const CUtensorMap* map, SlabOrigin at, unsigned char* smem_slab,
                          std::uint64_t* bar) {
  // The phase's one arrival, plus the bytes of the four boxes (zeros past the edge count too).
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                       std::uint32_t{kSlabBytes});
  for (int c = 0; c < kSlabTileCols; ++c) {
    const std::int32_t coords[2] = {at.col + c * kTileDim, at.row};  // innermost first
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_slab + c * kBoxBytes, map,
                              coords, bar);
  }
}
// The leader's stores: transposed tile (r, c) goes to the mirrored place (output row = input col).
__device__ void store_slab(const CUtensorMap* map, SlabOrigin at, const unsigned char* smem_slab) {
  for (int c = 0; c < kSlabTileCols; ++c) {
    for (int r = 0; r < kSlabTileRows; ++r) {
      const std::int32_t coords[2] = {at.row + r * kTileDim, at.col + c * kTileDim};  // mirrored
      ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords,
                                smem_slab + (c * kSlabTileRows + r) * kTileBytes);
    }
  }
  ptx::cp_async_bulk_commit_group();  // the eight stores: one bulk group, for wait_group_read
}
// Every thread's share of a slab: group g of 64 threads transposes tiles g and g + 4.
__device__ __forceinline__ void transpose_slab(Swizzle mode, const unsigned char* smem_in_slab,
                                               unsigned char* smem_out_slab, int offset) {
#pragma unroll
  for (int tile = threadIdx.x / kTileThreads; tile < kTilesPerSlab; tile += kTileGroups) {
    transpose_quad(mode, smem_in_slab + tile * kTileBytes, smem_out_slab + tile * kTileBytes,
                   threadIdx.x % kTileThreads, offset);
  }
}
/// [slab_copies]

/// [tma_transpose]
// TUTORIAL: a persistent block, kStages input slabs in flight, two output slabs. The leader takes
// each next slab from a global counter, records its number beside the stage and starts the loads;
// with none left, a plain arrival completes the stage's phase: "none left", the end. A stage's
// number is read kStages iterations after it is written; the block sync in between orders them.
template <Swizzle kMode>
__global__ void __launch_bounds__(kTmaThreads)
    tma_transpose_kernel(const __grid_constant__ CUtensorMap in_map,
                         const __grid_constant__ CUtensorMap out_map, SlabGrid slabs,
                         unsigned long long* gmem_next_slab) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // the slab in input buffer s landed
  __shared__ int stage_slab[kStages];  // the slab in input buffer s (>= count: none left)
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_in = smem_raw + (kPatternAlign - raw_addr % kPatternAlign) % kPatternAlign;
  unsigned char* smem_out = smem_in + kStages * kSlabBytes;  // [kStages + kOutBuffers][32 KiB]
  // Every tile starts a multiple of 1024 bytes after smem_in: this is every tile's offset (0).
  const int offset = swizzle_offset(kMode, __cvta_generic_to_shared(smem_in));
  const bool is_leader = course::elect_tma_leader();
  const auto take_and_load = [&](int stage) {  // leader only
    const int slab = static_cast<int>(atomicAdd(gmem_next_slab, 1ull));
    stage_slab[stage] = slab;
    if (slab < slabs.count()) {
      load_slab(&in_map, slabs.origin(slab), smem_in + stage * kSlabBytes, &full_bar[stage]);
    } else {  // no bytes: the arrival alone completes the phase
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                 &full_bar[stage]);
    }
  };
  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // the leader's arrival
    // the initialised barriers are visible to the TMA unit (the async proxy)
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    for (int s = 0; s < kStages; ++s) take_and_load(s);
  }
  __syncthreads();  // barriers initialised, first slabs recorded, before anyone reads them

  course::StageCursor<kStages> cursor;
  for (int out_buffer = 0;; cursor.advance(), out_buffer ^= 1) {
    // The stage's phase completed: its slab has landed, or the leader signalled the end.
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});
    const int slab = stage_slab[cursor.stage];
    if (slab >= slabs.count()) break;  // the same answer in every thread
    unsigned char* smem_out_slab = smem_out + out_buffer * kSlabBytes;
    transpose_slab(kMode, smem_in + cursor.stage * kSlabBytes, smem_out_slab, offset);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared visible to the TMA store
    // The previous slab's stores have read the other output buffer (their writes may be in flight).
    if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
    __syncthreads();  // the tiles are complete and fenced; input buffer `stage` is read
    if (is_leader) {
      store_slab(&out_map, slabs.origin(slab), smem_out_slab);
      take_and_load(cursor.stage);  // refill the buffer everyone just finished reading
    }
  }
  // Shared memory must outlive the last stores' reads; the kernel's end publishes their writes.
  if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
}
/// [tma_transpose]

/// [classic_padded]
// The textbook transpose: 32 x 8 threads, ordinary loads and stores through a padded tile.
__global__ void classic_padded_kernel(const float* __restrict__ gmem_in,
                                      float* __restrict__ gmem_out, int rows, int cols) {
  __shared__ float tile[kTileDim][kTileDim + kClassicPad];  // (y, x) in bank (y + x) % 32
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t in_col = blockIdx.x * kTileDim + tx, in_row = blockIdx.y * kTileDim + ty;
  for (int r = 0; r < kTileDim; r += kClassicRows)
    tile[ty + r][tx] = gmem_in[(in_row + r) * cols + in_col];
  __syncthreads();  // the whole tile is in shared memory
  const std::size_t out_col = blockIdx.y * kTileDim + tx, out_row = blockIdx.x * kTileDim + ty;
  for (int r = 0; r < kTileDim; r += kClassicRows)
    gmem_out[(out_row + r) * rows + out_col] = tile[tx][ty + r];
}
/// [classic_padded]

struct TransposeMaps {
  CUtensorMap in, out;  // host copies, passed by value as __grid_constant__ parameters
};
// Everything a launcher needs. in: rows x cols floats; out: cols x rows.
struct Operands {
  const float* gmem_in = nullptr;
  float* gmem_out = nullptr;
  int rows = 0, cols = 0;
  TransposeMaps plain{}, swizzled{};  // no swizzle; CU_TENSOR_MAP_SWIZZLE_128B
};

/// [maps]
// Loads take 64 x 32-float boxes of the input, stores put 32 x 32-float tiles into the output:
// 128 bytes per box row, the whole span of the 128B mode.
TransposeMaps transpose_maps(const float* gmem_in, float* gmem_out, int rows, int cols,
                             Swizzle mode) {
  constexpr CUtensorMapDataType kFloat = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  return {
      course::encode_tiled(matrix_request(kFloat, gmem_in, rows, cols, kSlabRows, kTileDim, mode)),
      course::encode_tiled(matrix_request(kFloat, gmem_out, cols, rows, kTileDim, kTileDim, mode))};
}
/// [maps]

/// [launch_tma]
// A persistent grid: as many blocks as fit on the GPU at once, never more than slabs.
// 129 KiB of dynamic shared memory is more than the default 48 KiB: the kernel must opt in.
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, int num_slabs, const Args&... args) {
  // Opted in above 48 KiB, then blocks per SM x SMs from the occupancy calculator (in_flight.hpp).
  const unsigned resident =
      course::resident_blocks((const void*)kernel, kTmaThreads, kTmaSmemBytes);
  if (resident == 0) throw course::CudaError("no block fits on an SM");
  const int blocks = std::min(num_slabs, static_cast<int>(resident));
  kernel<<<blocks, kTmaThreads, kTmaSmemBytes>>>(args...);
  COURSE_CHECK_LAUNCH();
}

// The count of taken slabs, zeroed before every launch (two launches at once would share it).
__device__ unsigned long long gmem_next_slab;

template <Swizzle kMode>
void launch_tma(const Operands& ops) {
  void* counter = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&counter, gmem_next_slab));  // a __device__ variable's address
  COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));  // before the kernel
  const TransposeMaps& maps = kMode == Swizzle::none ? ops.plain : ops.swizzled;
  const SlabGrid slabs = slab_grid(ops.rows, ops.cols);
  launch_resident(tma_transpose_kernel<kMode>, slabs.count(), maps.in, maps.out, slabs,
                  static_cast<unsigned long long*>(counter));
}
/// [launch_tma]

void launch_classic(const Operands& ops) {
  const dim3 grid(ops.cols / kTileDim, ops.rows / kTileDim), block(kTileDim, kClassicRows);
  classic_padded_kernel<<<grid, block>>>(ops.gmem_in, ops.gmem_out, ops.rows, ops.cols);
  COURSE_CHECK_LAUNCH();
}

using Launch = void (*)(const Operands& ops);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"classic_padded", "ordinary loads, 32x33 padded tile, ordinary stores", &launch_classic},
    {"tma_unswizzled", "TMA load, quad transpose, TMA store; plain layout: 8-way conflicts",
     &launch_tma<Swizzle::none>},
    {"tma_swizzled", "the same with CU_TENSOR_MAP_SWIZZLE_128B: conflict-free",
     &launch_tma<Swizzle::b128>},
};

struct Problem {
  Problem(int rows, int cols)
      : rows(rows), cols(cols), host_in(static_cast<std::size_t>(rows) * cols),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    course::fill_pattern(host_in);  // position-dependent; multiples of 1/256, exact through a copy
    gmem_in.upload(host_in.data());
    expected = reference_transpose(host_in, rows, cols);
  }
  // The maps of input and output, encoded once per problem, not per launch.
  Operands operands() const {
    const auto maps = [&](Swizzle mode) {
      return transpose_maps(gmem_in.data(), gmem_out.data(), rows, cols, mode);
    };
    return {gmem_in.data(), gmem_out.data(), rows, cols, maps(Swizzle::none), maps(Swizzle::b128)};
  }
  int rows, cols;
  std::vector<float> host_in, expected;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  const Operands ops = p.operands();
  p.gmem_out.poison();
  v.launch(ops);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected, p.rows);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(*square_side(opts.size_bytes), *square_side(opts.size_bytes));
  const Operands ops = problem.operands();  // encoded once, outside the timed launches
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(ops); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "swizzle";
  info.title = "08 swizzle: TMA swizzle modes and a conflict-free shared-memory transpose";
  info.explanation =
      "Transposes an N x N fp32 matrix: a classic padded-tile transpose, and TMA load ->\n"
      "shared-memory transpose -> TMA store without and with the 128B swizzle.";
  info.requirement = {9, 0, false, "TMA tensor copies (cp.async.bulk.tensor)"};
  info.verify_bytes = 4u << 20;  // 1024 x 1024
  info.bench_bytes = 1u << 30;   // 16384 x 16384
  info.size_rule = size_problem;
  info.host_model = print_swizzle_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
