// Exercise 07.3 (GPU, compute capability 9.0): encode a map, load one box. Solution.
//
// The kernel below fetches one box of kBoxRows x kBoxCols floats from a row-major matrix into
// shared memory with a tensor copy and writes it out unchanged, so that the test can see every
// element, the zero fill where the box leaves the matrix included. Two things are missing: the
// request for the tensor map, and the load itself. Until the request is right, the course's
// encoder (course/tensor_map.hpp) refuses it and names the broken rule; until the load is
// right, either the bounded wait stops the kernel and names the barrier and phase it waited for,
// or the test shows the first element that did not land where it belongs.
// The matrix of the test is not square, and its boxes start inside it, at negative coordinates
// and over its right and bottom edges.
// Needs: compute capability 9.0 (cp.async.bulk.tensor); on other GPUs the test is skipped.
// Check: scripts/exercise.py box_load
#include <cuda.h>  // CUtensorMap
#include <cuda/ptx>

#include <cstdint>

#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/tensor_map.hpp"  // course::TensorMapRequest, course::encode_tiled
#include "course/wait.cuh"

namespace exercise {

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 128;
constexpr int kBoxRows = 16;
constexpr int kBoxCols = 64;  // 256 bytes per box row: a multiple of 16, as boxDim[0] must be
constexpr int kBoxElems = kBoxRows * kBoxCols;
constexpr float kNotLanded = -1000.0f;  // shared memory holds this until the box lands (no input value is)

// A row-major float matrix: `rows` x `cols` elements, consecutive rows `pitch_elems` floats apart.
struct MatrixShape {
  int rows;
  int cols;
  int pitch_elems;
};

// The map of the matrix, for boxes of kBoxRows x kBoxCols floats.
inline course::TensorMapRequest box_map_request(const float* gmem_matrix, const MatrixShape& m) {
  course::TensorMapRequest r;  // FLOAT32, rank 2, element strides 1, no interleave or swizzle, zero fill
  r.global_address = gmem_matrix;
  r.global_dim[0] = static_cast<std::uint64_t>(m.cols);  // innermost first: columns...
  r.global_dim[1] = static_cast<std::uint64_t>(m.rows);  // ...then rows
  r.global_strides[0] = static_cast<std::uint64_t>(m.pitch_elems) * sizeof(float);  // bytes, not elements
  r.box_dim[0] = kBoxCols;
  r.box_dim[1] = kBoxRows;
  return r;
}

// Loads the box whose top-left element is (column x, row y) and writes it to gmem_box, row by row.
__global__ void __launch_bounds__(kBlockThreads)
    box_load_kernel(const __grid_constant__ CUtensorMap map, int x, int y, float* gmem_box) {
  __shared__ alignas(128) float smem_box[kBoxElems];  // [kBoxRows][kBoxCols]; TMA boxes: 128-byte aligned
  __shared__ alignas(8) std::uint64_t full_bar;       // the box has landed
  const bool is_leader = course::elect_tma_leader();
  for (int i = threadIdx.x; i < kBoxElems; i += blockDim.x) smem_box[i] = kNotLanded;
  ptx::fence_proxy_async(ptx::space_shared);  // the marker is ordered before the copy's writes (another proxy)
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1u);                               // one arrival: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // barrier initialised and marker written before the load starts
  if (is_leader) {
    const std::int32_t coords[2] = {x, y};  // innermost first: column, then row
    // The only arrival of the phase, with the whole box's bytes: the zero fill counts as delivered.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar,
                                         std::uint32_t{kBoxElems * sizeof(float)});
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, &map, coords, &full_bar);
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // phase 0: the whole box is in shared memory
  for (int i = threadIdx.x; i < kBoxElems; i += blockDim.x) gmem_box[i] = smem_box[i];
}

// Encodes the map (rules first, then the driver) and launches one block; returns without waiting.
inline void launch_box_load(const float* gmem_matrix, const MatrixShape& m, int x, int y, float* gmem_box) {
  const CUtensorMap map = course::encode_tiled(box_map_request(gmem_matrix, m));
  box_load_kernel<<<1, kBlockThreads>>>(map, x, y, gmem_box);
}

}  // namespace exercise
