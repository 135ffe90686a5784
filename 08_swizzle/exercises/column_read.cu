// Exercise 08.3 (GPU, compute capability 9.0): read a column of a swizzled tile.
//
// The guide's transpose, cut down to its reads. Each block loads one 8 x 8 tile of int4 (16-byte)
// elements with CU_TENSOR_MAP_SWIZZLE_128B, one 128-byte row per tile row. The eight lanes of each
// quarter-warp read one column of the tile, top to bottom: element (i, j) for i = 0..7, which the
// thread writes to global memory where the transposed matrix has it. The tile does not always
// start where the 128B pattern starts: the kernel places it `shift_bytes` (a multiple of 128)
// past a 1024-byte boundary, as it would be in a buffer holding several smaller boxes.
//
// Your task: tile_index() returns where element (i, j) of the tile is stored, counted in int4
// elements from the tile's first, given the tile's shared-memory address. The starter reads the
// tile as if TMA had stored it without a swizzle. The test names the first element of the output
// that is wrong and which element of the tile was read instead.
// Needs: compute capability 9.0 (cp.async.bulk.tensor); on other GPUs the test is skipped.
// Check: scripts/exercise.py column_read
#include <cuda.h>  // CUtensorMap
#include <cuda/ptx>

#include <cstdint>

#include "course/elect.cuh"
#include "course/tensor_map.hpp"  // course::TensorMapRequest, course::encode_tiled
#include "course/wait.cuh"

namespace exercise {

namespace ptx = cuda::ptx;

constexpr int kTileDim = 8;  // 8 x 8 int4: a row is 128 bytes
constexpr int kTileElems = kTileDim * kTileDim;
constexpr int kTileBytes = kTileElems * sizeof(int4);  // 1 KiB
constexpr int kThreads = kTileElems;                   // one element each
constexpr int kPatternBytes = 1024;                    // the 128B pattern starts over every 1 KiB
constexpr int kMaxShiftBytes = kPatternBytes - 128;
constexpr int kSmemBytes = kPatternBytes + kMaxShiftBytes + kTileBytes;  // room to align, shift, and the tile
constexpr int kNotLanded = 0x0BADF00D;  // what shared memory holds where TMA wrote nothing

// Where element (i, j) of a tile loaded with CU_TENSOR_MAP_SWIZZLE_128B to shared-memory address
// `smem_tile_addr` is stored, in int4 elements from the tile's first.
__host__ __device__ inline int tile_index(int i, int j, std::uint32_t smem_tile_addr) {
  (void)smem_tile_addr;
  return i * kTileDim + j;  // TODO: where the 128B swizzle stored element (i, j)
}

// in: rows x cols int4, row-major; out: cols x rows int4. Block (x, y) reads tile (y, x).
__global__ void __launch_bounds__(kThreads)
    column_read_kernel(const __grid_constant__ CUtensorMap map, int shift_bytes, int rows, int4* gmem_out) {
  extern __shared__ unsigned char smem_raw[];    // the runtime promises 16-byte alignment only
  __shared__ alignas(8) std::uint64_t full_bar;  // the tile has landed
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  auto* smem_tile = reinterpret_cast<int4*>(smem_raw + (kPatternBytes - raw_addr % kPatternBytes) % kPatternBytes +
                                            shift_bytes);  // [kTileDim][kTileDim], swizzled
  for (int e = threadIdx.x; e < kTileElems; e += blockDim.x) {
    smem_tile[e] = make_int4(kNotLanded, kNotLanded, kNotLanded, kNotLanded);
  }
  ptx::fence_proxy_async(ptx::space_shared);  // the marker is written before the TMA unit writes the tile
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1);                                // one arrival: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // barrier and marker in place before the load starts
  if (is_leader) {
    const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.x * kTileDim * 4),  // int32 words
                                    static_cast<std::int32_t>(blockIdx.y * kTileDim)};     // rows
    // The phase's one arrival, plus the tile's bytes.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar,
                                         std::uint32_t{kTileBytes});
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_tile, &map, coords, &full_bar);
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // phase 0: the tile has landed

  // Quarter-warp j reads column j: lane i of it takes element (i, j).
  const int i = threadIdx.x % kTileDim, j = threadIdx.x / kTileDim;
  const auto tile_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_tile));
  const int4 element = smem_tile[tile_index(i, j, tile_addr)];
  const std::size_t out_row = blockIdx.x * kTileDim + j, out_col = blockIdx.y * kTileDim + i;
  gmem_out[out_row * rows + out_col] = element;
}

// The map of a rows x cols int4 matrix: each int4 is four INT32 to the map, as in the guide; boxes of
// 8 rows x 32 words, 128 bytes per row: the whole span of the 128B mode.
inline CUtensorMap tile_map(const int4* gmem_in, int rows, int cols) {
  course::TensorMapRequest r;
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_INT32;
  r.rank = 2;
  r.global_address = gmem_in;
  r.global_dim[0] = static_cast<std::uint64_t>(cols) * 4;  // innermost first: int32 words
  r.global_dim[1] = static_cast<std::uint64_t>(rows);
  r.global_strides[0] = static_cast<std::uint64_t>(cols) * sizeof(int4);
  r.box_dim[0] = kTileDim * 4;
  r.box_dim[1] = kTileDim;
  r.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  return course::encode_tiled(r);
}

// rows and cols: multiples of kTileDim. Returns without waiting.
inline void launch_column_read(const int4* gmem_in, int4* gmem_out, int rows, int cols, int shift_bytes) {
  const dim3 grid(cols / kTileDim, rows / kTileDim);
  column_read_kernel<<<grid, kThreads, kSmemBytes>>>(tile_map(gmem_in, rows, cols), shift_bytes, rows, gmem_out);
}

}  // namespace exercise
