// Exercise 09.4 (GPU, compute capability 9.0, sm_90a): publish the map the block rewrote.
//
// One block walks the tensors of a batch through a single map slot in global memory. For each
// tensor, warp 0 copies the driver's template into shared memory and replaces the five fields that
// differ (as the lesson's encoder does); then the leader loads the tensor's tiles through the slot,
// and every thread writes the elements of each box that lie inside the matrix to the output.
// Two steps are missing:
//   TODO 1: the map built in shared memory never reaches the slot. tensormap.replace changed shared
//           memory only, and TMA reads the map from the slot, through the tensor-map proxy.
//   TODO 2: the leader's copies read a slot that was just rewritten, and nothing tells the
//           tensor-map proxy so.
// Until TODO 1 is done, the slot holds what the host wrote there before the launch: the template,
// whose box is 32 x 4 floats. The bounded wait then stops the kernel and names the barrier, stage
// and phase it gave up on: work out from the byte count why that phase cannot complete. A kernel
// without TODO 2 may still give the right output on a given run; the test also reads the kernel's
// machine code (where cuobjdump is installed) for the instruction that the acquire becomes.
// Needs: compute capability 9.0 exactly (tensormap.replace exists for sm_90a only); elsewhere the
// test is skipped.
// Check: scripts/exercise.py publish_map
#include <cuda.h>  // CUtensorMap (types only)
#include <cuda/ptx>

#include <cstdint>

#include "course/elect.cuh"
#include "course/stage_cursor.hpp"
#include "course/tensor_map.hpp"
#include "course/wait.cuh"
#include "device_tensormap_model.hpp"  // TensorLayout, Batch, tile_origin, kTileRows (no GPU needed)

namespace exercise {

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;
constexpr int kWarpThreads = 32;
constexpr int kMapBytes = sizeof(CUtensorMap);                // tensormap.cp_fenceproxy copies exactly this
constexpr int kMapWords = kMapBytes / sizeof(std::uint64_t);  // lanes that copy the template
constexpr int kPlaceholderCols = 4;                           // the template's matrix: 32 x 4 floats
constexpr std::size_t kSmemAlignBytes = 128;                  // TMA shared-memory boxes: 128-byte aligned

// The fields that differ from one tensor to the next (the lesson's replace_tensor_fields).
__device__ void replace_tensor_fields(CUtensorMap* smem_map, const float* gmem_matrix, const TensorLayout& t) {
  ptx::tensormap_replace_global_address(ptx::space_shared, smem_map, gmem_matrix);
  ptx::tensormap_replace_global_dim(ptx::space_shared, smem_map, ptx::n32_t<0>{}, static_cast<std::uint32_t>(t.cols));
  ptx::tensormap_replace_global_dim(ptx::space_shared, smem_map, ptx::n32_t<1>{}, static_cast<std::uint32_t>(t.rows));
  ptx::tensormap_replace_global_stride(ptx::space_shared, smem_map, ptx::n32_t<0>{},
                                       static_cast<std::uint64_t>(t.pitch_elems) * sizeof(float));
  ptx::tensormap_replace_box_dim(ptx::space_shared, smem_map, ptx::n32_t<0>{}, static_cast<std::uint32_t>(t.box_cols));
}

__global__ void __launch_bounds__(kBlockThreads)
    retarget_kernel(const __grid_constant__ CUtensorMap template_map, const __grid_constant__ Batch batch,
                    const float* gmem_in, float* gmem_out, CUtensorMap* gmem_map) {
  __shared__ CUtensorMap smem_map;                             // the map under construction (128-byte aligned)
  __shared__ alignas(kSmemAlignBytes) float smem_box[kTileElems];  // [kTileRows][box_cols] of the current tensor
  __shared__ alignas(8) std::uint64_t full_bar;                // the box has landed
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / kWarpThreads), 0);
  const int lane_idx = static_cast<int>(threadIdx.x % kWarpThreads);
  const bool is_leader = course::elect_tma_leader();  // a lane of warp 0
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival per phase: the leader's arrive.expect_tx
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // ...and to every thread, before anyone waits on it
  course::StageCursor<1> cursor;  // one box: the parity flips every tile
  for (int t = 0; t < batch.num_tensors; ++t) {
    const TensorLayout& layout = batch.tensors[t];
    if (warp_idx == 0) {
      if (lane_idx < kMapWords) smem_map.opaque[lane_idx] = template_map.opaque[lane_idx];
      __syncwarp();  // the template is in shared memory before one lane modifies it
      if (course::elect_one_lane()) replace_tensor_fields(&smem_map, gmem_in + layout.offset_elems, layout);
      __syncwarp();  // the finished map is visible to every lane of the warp
      // TODO 1: the whole warp copies the finished map to the slot gmem_map and releases it to the
      //         tensor-map proxy, at the narrowest scope that holds the threads that will use it.
    }
    __syncthreads();  // warp 0 has finished with the map of tensor t before the leader uses it
    if (is_leader) {
      // TODO 2: before its first copy through the rewritten slot, the leader acquires the slot's
      //         128 bytes for the tensor-map proxy, at the scope of the release.
    }
    const int box_elems = layout.box_cols * kTileRows;
    const int num_tiles = batch.first_tile[t + 1] - batch.first_tile[t];
    for (int local = 0; local < num_tiles; ++local, cursor.advance()) {
      const TileCoords at = tile_origin(layout, local);
      if (is_leader) {
        const std::int32_t coords[2] = {at.x, at.y};  // innermost first; outside the matrix: zero fill
        // The one arrival, and the whole box in transaction bytes (the zero fill counts too).
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar,
                                             static_cast<std::uint32_t>(box_elems * sizeof(float)));
        ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, gmem_map, coords, &full_bar);
      }
      course::bounded_wait_parity(&full_bar, cursor.phase, {"full", cursor.stage, cursor.phase});  // the box landed
      for (int i = threadIdx.x; i < box_elems; i += kBlockThreads) {
        const int row = at.y + i / layout.box_cols, col = at.x + i % layout.box_cols;
        if (row < layout.rows && col < layout.cols) {
          gmem_out[layout.offset_elems + std::int64_t{row} * layout.pitch_elems + col] = smem_box[i];
        }
      }
      // The box is read before the next load overwrites it, and the last load through the slot has
      // completed before warp 0 rewrites the slot.
      __syncthreads();
    }
  }
}

// The template: a valid map of a 32 x 4 placeholder matrix, one box of 32 x 4 floats. Type, rank,
// box height, element strides, swizzle and fill are what every tensor needs; the kernel replaces
// the rest. Before the launch the host writes it into the slot too, so the slot always holds a
// valid map.
inline course::TensorMapRequest placeholder_request(const float* gmem_placeholder) {
  course::TensorMapRequest r;  // float32, element strides 1, no interleave/swizzle/L2 promotion, zero fill
  r.rank = 2;
  r.global_address = gmem_placeholder;
  r.global_dim[0] = kPlaceholderCols;
  r.global_dim[1] = kTileRows;
  r.global_strides[0] = kPlaceholderCols * sizeof(float);
  r.box_dim[0] = kPlaceholderCols;
  r.box_dim[1] = kTileRows;
  return r;
}

// One block walks every tensor of the batch through the one slot.
inline void launch_retarget(const CUtensorMap& template_map, const Batch& batch, const float* gmem_in, float* gmem_out,
                            CUtensorMap* gmem_map) {
  retarget_kernel<<<1, kBlockThreads>>>(template_map, batch, gmem_in, gmem_out, gmem_map);
}

}  // namespace exercise
