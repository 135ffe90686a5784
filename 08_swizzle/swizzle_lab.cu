// 08_swizzle lab: when the swizzle pays in time, and the library's transpose.
//
// The lesson's transpose is memory-bound: tma_unswizzled and tma_swizzled take about the same
// time, although the unswizzled loads are eight-way bank conflicts. Here the same slab is
// transposed kRereads times over in shared memory, so that shared memory, not DRAM, sets the
// pace. Every row is verified bit for bit before it is timed:
//   tma_unswizzled_reread8, tma_swizzled_reread8: one block per slab; the lesson's load_slab,
//     kRereads = 8 passes of the lesson's transpose_slab over the same slab, the lesson's
//     store_slab: eight times the shared-memory work, the same global traffic;
//   cublas_geam: cublasSgeam with C = A^T, the library's transpose.
// Hardware: compute capability 9.0, as the lesson.
// Run: build/08_swizzle/swizzle_lab [--bench] [--variant=NAME] [--size=4M|64M|1G]
// API: cublasSgeam https://docs.nvidia.com/cuda/cublas/index.html#cublas-t-geam
#include <cublas_v2.h>

#include "swizzle.cu"  // the lesson: the model, the slab's load, transpose and store, the maps

namespace lab {

constexpr int kRereads = 8;  // transposes of each slab in shared memory
// One input and one output slab per block, the input on the pattern: 65 KiB, opt-in.
constexpr int kRereadSmemBytes = 2 * kSlabBytes + kPatternAlign;

/// [reread_kernel]
// One block per slab: the lesson's load, kPasses transposes of the same slab, the lesson's store.
// Every pass reads the whole input slab and writes the whole output slab (the same values each
// time), so the kernel's shared-memory traffic is kPasses times the lesson's, and its global
// traffic is the lesson's.
template <Swizzle kMode, int kPasses>
__global__ void __launch_bounds__(kTmaThreads)
    reread_transpose_kernel(const __grid_constant__ CUtensorMap in_map,
                            const __grid_constant__ CUtensorMap out_map, SlabGrid slabs) {
  extern __shared__ unsigned char smem_raw[];    // the runtime promises 16-byte alignment only
  __shared__ alignas(8) std::uint64_t full_bar;  // the slab landed
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_in = smem_raw + (kPatternAlign - raw_addr % kPatternAlign) % kPatternAlign;
  unsigned char* smem_out = smem_in + kSlabBytes;
  const auto in_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_in));
  const int offset = swizzle_offset(kMode, in_addr);  // 0: both slabs start on the pattern
  const SlabOrigin at = slabs.origin(static_cast<int>(blockIdx.x));
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1);  // one arrival: the leader's expect-tx in load_slab
    // the initialised barrier is visible to the TMA unit before the load completes on it
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    load_slab(&in_map, at, smem_in, &full_bar);
  }
  __syncthreads();  // nobody waits on the barrier before it is initialised
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // the slab has landed
#pragma unroll 1
  for (int pass = 0; pass < kPasses; ++pass) {
    transpose_slab(kMode, smem_in, smem_out, offset);
    // A compiler barrier: every pass loads and stores shared memory again, none is merged away.
    asm volatile("" ::: "memory");
  }
  ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to TMA
  __syncthreads();                            // the transposed slab is complete and fenced
  if (is_leader) {
    store_slab(&out_map, at, smem_out);
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // shared memory outlives the reads
  }
}
/// [reread_kernel]

template <Swizzle kMode>
void launch_reread(const Operands& ops) {
  const auto kernel = reread_transpose_kernel<kMode, kRereads>;
  COURSE_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRereadSmemBytes));
  const TransposeMaps& maps = kMode == Swizzle::none ? ops.plain : ops.swizzled;
  const SlabGrid slabs = slab_grid(ops.rows, ops.cols);
  kernel<<<slabs.count(), kTmaThreads, kRereadSmemBytes>>>(maps.in, maps.out, slabs);
  COURSE_CHECK_LAUNCH();
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
  const cublasStatus_t status =
      cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, ops.rows, ops.cols, &one, ops.gmem_in,
                  ops.cols, &zero, ops.gmem_out, ops.rows, ops.gmem_out, ops.rows);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw course::CudaError(std::string("cublasSgeam: ") + cublasGetStatusString(status));
  }
}
/// [cublas]

const Variant kVariants[] = {
    {"tma_unswizzled_reread8", "one block per slab, transposed 8 times in shared memory, no swizzle",
     &launch_reread<Swizzle::none>},
    {"tma_swizzled_reread8", "the same with CU_TENSOR_MAP_SWIZZLE_128B",
     &launch_reread<Swizzle::b128>},
    {"cublas_geam", "cublasSgeam (C = A^T), for comparison", &launch_cublas},
};

void run(const course::Options& opts, course::Report& report) {
  Problem problem(*square_side(opts.size_bytes), *square_side(opts.size_bytes));
  const Operands ops = problem.operands();  // encoded once, outside the timed launches
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(ops); },
        2 * opts.size_bytes);  // each element read once and written once (global memory)
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "swizzle_lab";
  info.title = "08 swizzle lab: when the swizzle pays, and cuBLAS";
  info.explanation =
      "The lesson's N x N fp32 transpose made shared-memory-bound: each slab transposed 8 times\n"
      "in shared memory, without and with the 128B swizzle; and cublasSgeam for comparison.";
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
