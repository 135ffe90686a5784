// Exercise 08.4 (GPU, compute capability 9.0): a box narrower than the swizzle span.
//
// The kernel copies a float matrix panel by panel through shared memory. Each block loads one
// panel of 32 rows x 16 floats with CU_TENSOR_MAP_SWIZZLE_128B: 64 bytes per box row, half the
// 128-byte span. The buffer is sized for that (a whole span per box row) and every element is read
// from the place the chapter's model gives it (box_smem_byte(), swizzle_model.hpp); both are right.
// Where the matrix ends inside a panel, the load fills zeros and the threads write nothing.
//
// One thing is wrong. Run the test first: the bounded wait stops the kernel and names the barrier,
// the stage and the phase it gave up on. Work out what that phase waits for that never arrives,
// and repair it. Exercise 08.1 asks the same question on the CPU.
// Needs: compute capability 9.0 (cp.async.bulk.tensor); on other GPUs the test is skipped.
// Check: scripts/exercise.py narrow_box
#include <cuda.h>  // CUtensorMap
#include <cuda/ptx>

#include <cstdint>

#include "course/elect.cuh"
#include "course/tensor_map.hpp"  // course::TensorMapRequest, course::encode_tiled
#include "course/wait.cuh"
#include "swizzle_model.hpp"  // Swizzle, box_smem_byte, swizzle_offset

namespace exercise {

namespace ptx = cuda::ptx;

constexpr Swizzle kMode = Swizzle::b128;
constexpr int kPanelRows = 32;
constexpr int kPanelCols = 16;                                                      // floats
constexpr int kPanelRowBytes = kPanelCols * sizeof(float);                          // 64: a box row
constexpr int kPanelSmemBytes = box_smem_bytes(kMode, kPanelRowBytes, kPanelRows);  // 4 KiB: a span per row
constexpr int kPanelTxBytes = kPanelSmemBytes;                                      // announced on full_bar
constexpr int kThreads = 128;
constexpr float kNotLanded = -1000.0f;  // shared memory holds this until the panel lands (no input value is)
static_assert(box_fits_span(kMode, kPanelRowBytes), "a box row may not be wider than the swizzle span");

// in and out: rows x cols floats, row-major. Block (x, y) copies panel (y, x).
__global__ void __launch_bounds__(kThreads)
    narrow_box_kernel(const __grid_constant__ CUtensorMap map, const int rows, const int cols, float* gmem_out) {
  // TODO: the test stops this kernel in its bounded wait. Find out why, and repair it.
  __shared__ alignas(1024) unsigned char smem_panel[kPanelSmemBytes];  // where the 128B pattern starts
  __shared__ alignas(8) std::uint64_t full_bar;                        // the panel has landed
  for (int i = threadIdx.x; i < kPanelSmemBytes / 4; i += blockDim.x) {
    reinterpret_cast<float*>(smem_panel)[i] = kNotLanded;
  }
  ptx::fence_proxy_async(ptx::space_shared);  // the marker is written before the TMA unit writes the panel
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1);                                // one arrival: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // barrier and marker in place before the load starts
  const int row0 = blockIdx.y * kPanelRows, col0 = blockIdx.x * kPanelCols;
  if (is_leader) {
    const std::int32_t coords[2] = {col0, row0};  // innermost first
    // The phase's one arrival, plus the bytes it waits for.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar,
                                         std::uint32_t{kPanelTxBytes});
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_panel, &map, coords, &full_bar);
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // phase 0: the panel has landed

  const int offset = swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_panel)));
  for (int e = threadIdx.x; e < kPanelRows * kPanelCols; e += blockDim.x) {
    const int r = e / kPanelCols, c = e % kPanelCols;
    if (row0 + r >= rows || col0 + c >= cols) continue;  // past the matrix's edge: zeros, not copied
    const std::uint32_t at = box_smem_byte(kMode, kPanelRowBytes, r, c * sizeof(float), offset);
    gmem_out[static_cast<std::size_t>(row0 + r) * cols + col0 + c] = *reinterpret_cast<const float*>(smem_panel + at);
  }
}

// The map of the rows x cols matrix (cols a multiple of 4: rows 16-byte aligned), panel by panel.
inline CUtensorMap panel_map(const float* gmem_in, int rows, int cols) {
  course::TensorMapRequest r;
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  r.rank = 2;
  r.global_address = gmem_in;
  r.global_dim[0] = static_cast<std::uint64_t>(cols);  // innermost first
  r.global_dim[1] = static_cast<std::uint64_t>(rows);
  r.global_strides[0] = static_cast<std::uint64_t>(cols) * sizeof(float);
  r.box_dim[0] = kPanelCols;
  r.box_dim[1] = kPanelRows;
  r.swizzle = tensor_map_swizzle(kMode);
  return course::encode_tiled(r);
}

// One block per panel; returns without waiting.
inline void launch_narrow_box(const float* gmem_in, float* gmem_out, int rows, int cols) {
  const dim3 grid((cols + kPanelCols - 1) / kPanelCols, (rows + kPanelRows - 1) / kPanelRows);
  narrow_box_kernel<<<grid, kThreads>>>(panel_map(gmem_in, rows, cols), rows, cols, gmem_out);
}

}  // namespace exercise
