// 08_swizzle lab: which slab a block takes next, what the same boxes cost as a plain copy, and cuBLAS.
//
// The lesson's tma_swizzled takes its slabs in order from a counter, numbered column by column,
// and measures about 0.96 x cudaMemcpy. Each row here changes one thing against it, and is
// verified bit for bit before it is timed:
//   tma_swizzled (the lesson's kernel, for comparison in the same run);
//   tma_swizzled_taken_rows: the same counter, the slabs numbered row by row (the output is then
//     written in scattered rows);
//   tma_swizzled_dealt_rows: no counter, block b takes slabs b, b + grid, ..., row by row;
//   tma_tiles_in_place: taken row by row, each transposed tile stored back where it was loaded:
//     the global traffic of a plain copy made of the same boxes;
//   cublas_geam: cublasSgeam with C = A^T, the library's transpose.
// Hardware: compute capability 9.0, as the lesson.
// Run: build/08_swizzle/swizzle_lab [--bench] [--variant=NAME] [--size=4M|64M|1G]
// API: cublasSgeam https://docs.nvidia.com/cuda/cublas/index.html#cublas-t-geam
#include <cublas_v2.h>

#include "swizzle.cu"  // the lesson: the model, the quad and slab building blocks, launch_resident

namespace lab {

// ---- Slab orders and the in-place store ---------------------------------------------------------

/// [slab_orders]
enum class SlabOrder {
  dealt_rows,  // block b takes slabs b, b + grid, b + 2 grid, ...: no counter
  taken_rows,  // each next slab comes from the counter, as in the lesson
};
// Slab i numbered row by row: consecutive slabs lie side by side in the input, so they read
// neighbouring stretches of the same 64 input rows, and write into scattered output rows.
__host__ __device__ inline SlabOrigin row_major_origin(const SlabGrid& grid, int slab) {
  return {slab / grid.cols * kSlabRows, slab % grid.cols * kSlabCols};
}
/// [slab_orders]

/// [store_in_place]
// tma_tiles_in_place: tile (r, c) of the slab, transposed in shared memory as usual, goes back to
// where it was loaded from; the output map sees the output as rows x cols, like the input.
__device__ void store_slab_in_place(const CUtensorMap* map, SlabOrigin at, const unsigned char* smem_slab) {
  for (int c = 0; c < kSlabTileCols; ++c) {
    for (int r = 0; r < kSlabTileRows; ++r) {
      const std::int32_t coords[2] = {at.col + c * kTileDim, at.row + r * kTileDim};  // {col, row}, as loaded
      ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords,
                                smem_slab + (c * kSlabTileRows + r) * kTileBytes);
    }
  }
  ptx::cp_async_bulk_commit_group();  // the eight stores form one bulk group, counted by wait_group_read
}
/// [store_in_place]

// ---- The kernel: the lesson's, with the slab order and the store as parameters -------------------

/// [ordered_kernel]
// The lesson's tma_transpose_kernel with the 128B swizzle, line for line, but for two parameters:
// where the next slab comes from (kOrder, numbered row by row) and where its tiles go (kInPlace).
// A dealt slab number is known to every thread; it is still recorded beside the stage, so that
// every row ends the same way: on a plain arrival that says "none left".
template <SlabOrder kOrder, bool kInPlace>
__global__ void __launch_bounds__(kTmaThreads)
    ordered_transpose_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                             SlabGrid slabs, unsigned long long* gmem_next_slab) {
  extern __shared__ unsigned char smem_raw[];             // the runtime promises 16-byte alignment only
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // the slab in input buffer s landed
  __shared__ int stage_slab[kStages];                     // the slab in input buffer s (>= count: none left)
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_in = smem_raw + (kPatternAlign - raw_addr % kPatternAlign) % kPatternAlign;  // [kStages][32 KiB]
  unsigned char* smem_out = smem_in + kStages * kSlabBytes;  // [kOutBuffers][32 KiB]
  const int offset = swizzle_offset(Swizzle::b128, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_in)));
  const bool is_leader = course::elect_tma_leader();
  // Leader only. `dealt`: the slab the fixed deal gives this load (dealt_rows).
  const auto take_and_load = [&](int stage, int dealt) {
    const int slab = kOrder == SlabOrder::dealt_rows ? dealt : static_cast<int>(atomicAdd(gmem_next_slab, 1ull));
    stage_slab[stage] = slab;
    if (slab < slabs.count()) {
      load_slab(&in_map, row_major_origin(slabs, slab), smem_in + stage * kSlabBytes, &full_bar[stage]);
    } else {  // no bytes: the arrival alone completes the phase
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
    }
  };
  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barriers are visible to TMA
    for (int s = 0; s < kStages; ++s) take_and_load(s, static_cast<int>(blockIdx.x + s * gridDim.x));
  }
  __syncthreads();  // barriers initialised, first slabs recorded, before anyone waits or reads stage_slab

  course::StageCursor<kStages> cursor;
  for (int out_buffer = 0;; cursor.advance(), out_buffer ^= 1) {
    // The stage's phase completed: its slab has landed, or the leader signalled the end.
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const int slab = stage_slab[cursor.stage];
    if (slab >= slabs.count()) break;  // the same answer in every thread; a block's slabs only grow
    unsigned char* smem_out_slab = smem_out + out_buffer * kSlabBytes;
    transpose_slab(Swizzle::b128, smem_in + cursor.stage * kSlabBytes, smem_out_slab, offset);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
    // The previous slab's stores have read the other output buffer, which the next iteration fills.
    if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
    __syncthreads();  // the tiles are complete and fenced; nobody reads input buffer `stage` any more
    if (is_leader) {
      const SlabOrigin at = row_major_origin(slabs, slab);
      if constexpr (kInPlace) {
        store_slab_in_place(&out_map, at, smem_out_slab);
      } else {
        store_slab(&out_map, at, smem_out_slab);
      }
      take_and_load(cursor.stage, slab + kStages * static_cast<int>(gridDim.x));  // refill the buffer just read
    }
  }
  // Shared memory must outlive the last stores' reads; the kernel's end publishes their writes.
  if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
}
/// [ordered_kernel]

// ---- Launchers and the table of rows ------------------------------------------------------------

// The lesson's operands, and the map of tma_tiles_in_place's output (rows x cols, 32 x 32 tiles).
struct Operands : ::Operands {
  CUtensorMap out_in_place{};
};

using Launch = void (*)(const Operands& ops);

// A lesson variant's launcher as a row of the lab (same-run comparisons).
template <::Launch kLessonLaunch>
void launch_lesson(const Operands& ops) {
  kLessonLaunch(ops);
}

template <SlabOrder kOrder, bool kInPlace>
void launch_ordered(const Operands& ops) {
  unsigned long long* counter = nullptr;
  if (kOrder == SlabOrder::taken_rows) {
    COURSE_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&counter), gmem_next_slab));  // the lesson's counter
    COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(*counter)));  // ordered before the kernel
  }
  const SlabGrid slabs = slab_grid(ops.rows, ops.cols);
  launch_resident(ordered_transpose_kernel<kOrder, kInPlace>, slabs.count(), ops.swizzled.in,
                  kInPlace ? ops.out_in_place : ops.swizzled.out, slabs, counter);
}

/// [cublas]
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
/// [cublas]

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  bool in_place = false;  // the output holds every 32 x 32 tile transposed where it is, not the transpose
};
const Variant kVariants[] = {
    {"tma_swizzled", "the lesson's kernel: 128B swizzle, slabs taken in order, column by column",
     &launch_lesson<&::launch_tma<Swizzle::b128>>},
    {"tma_swizzled_taken_rows", "tma_swizzled, slabs taken row by row: the output is written in scattered rows",
     &launch_ordered<SlabOrder::taken_rows, false>},
    {"tma_swizzled_dealt_rows", "tma_swizzled, slabs dealt to the blocks round-robin, row by row",
     &launch_ordered<SlabOrder::dealt_rows, false>},
    {"tma_tiles_in_place", "tma_swizzled_taken_rows, each tile stored where it was loaded: a copy in the same boxes",
     &launch_ordered<SlabOrder::taken_rows, true>, true},
    {"cublas_geam", "cublasSgeam (C = A^T), for comparison", &launch_cublas},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------------

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

// The lesson's problem, with the in-place reference and the in-place map.
struct Problem : ::Problem {
  Problem(int rows, int cols)
      : ::Problem(rows, cols), expected_in_place(reference_tiles_in_place(host_in, rows, cols)) {}
  Operands operands() const {
    Operands ops{::Problem::operands()};
    constexpr CUtensorMapDataType kFloat = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    ops.out_in_place =
        course::encode_tiled(matrix_request(kFloat, gmem_out.data(), rows, cols, kTileDim, kTileDim, Swizzle::b128));
    return ops;
  }
  std::vector<float> expected_in_place;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  const Operands ops = p.operands();
  p.gmem_out.poison();
  v.launch(ops);
  COURSE_CHECK(cudaDeviceSynchronize());
  return v.in_place ? p.gmem_out.check(p.expected_in_place, p.cols) : p.gmem_out.check(p.expected, p.rows);
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
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "swizzle_lab";
  info.title = "08 swizzle lab: slab orders, the same boxes as a copy, cuBLAS";
  info.explanation =
      "The lesson's N x N fp32 transpose with the 128B swizzle, one thing changed per row: the slabs\n"
      "taken row by row or dealt round-robin, each tile stored back in place (a copy made of the same\n"
      "boxes), and cublasSgeam for comparison.";
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
