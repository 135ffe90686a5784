// 08_swizzle, the first program: the guide's 8 x 8 int4 transpose, complete, without and with
// the swizzle. It is the chapter's minimal kernel, in the standard API only.
//
// What you learn: the guide's own swizzle example (4.11.2.2.5), made into a program that runs: a
// TMA load brings an 8 x 8 tile of 16-byte int4 elements into shared memory, eight threads write
// its transpose into a second buffer (thread j moves column j of the tile into row j), and a TMA
// store puts that buffer at the mirrored tile of the output. Without a swizzle the eight stores of
// a step all hit one chunk column, eight-way conflicts; with CU_TENSOR_MAP_SWIZZLE_128B the
// element (i, j) sits at chunk ((i + offset) % 8) ^ j, and loads and stores are conflict-free.
// What the guide leaves out (REFERENCE.md, "Differences from the guide"): the store's
// coordinates, the barrier's fence, the offset of a buffer that does not start on the pattern.
// What changed from 07: the maps get a swizzle mode; one block of eight threads per 1 KiB tile.
// The pipelined fp32 transpose that follows is swizzle.cu.
// Hardware: compute capability 9.0 (TMA tensor copies).
// Run: build/08_swizzle/transpose_guide [--bench] [--variant=NAME] [--size=4M|64M|1G]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
// API: https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives.html
//      https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
#include <cuda.h>  // CUtensorMap (types only: the driver library is never linked)
#include <cuda/barrier>
#include <cuda/ptx>

#include <cstdint>
#include <cstring>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/tensor_map.hpp"
#include "swizzle_model.hpp"  // the swizzle, guide_load_index / guide_store_index, the bank model

namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() below does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kGuideTileBytes = kGuideDim * kGuideDim * sizeof(int4);  // 1 KiB
constexpr int kInt4Words = sizeof(int4) / sizeof(std::int32_t);  // the map sees 4 x INT32
static_assert(kGuideTileBytes == 1024, "one tile is exactly one repeat of the 128B pattern");

// ---- Host reference -----------------------------------------------------------------------

// The guide's problem on the fp32 matrix's bytes: each row of `cols` floats read as cols / 4 int4
// elements, and that rows x cols / 4 matrix of int4 transposed.
std::vector<float> reference_int4_transpose(const std::vector<float>& in, int rows, int cols) {
  std::vector<int4> elements(in.size() / kInt4Words);
  std::memcpy(elements.data(), in.data(), in.size() * sizeof(float));
  const std::vector<int4> transposed = reference_transpose(elements, rows, cols / kInt4Words);
  std::vector<float> out(in.size());
  std::memcpy(out.data(), transposed.data(), out.size() * sizeof(float));
  return out;
}

// ---- The kernel -----------------------------------------------------------------------------

/// [guide_transpose_column]
// Thread j's part of the guide's loop: step i moves element (i, j) of the tile to element (j, i)
// of the transposed tile, each found through the swizzle of its own buffer (swizzle_offset).
__host__ __device__ inline void guide_transpose_column(Swizzle mode, const int4* smem_tile,
                                                       int4* smem_tile_tr, int j, int in_offset,
                                                       int out_offset) {
  for (int i = 0; i < kGuideDim; ++i) {
    smem_tile_tr[guide_store_index(mode, i, j, out_offset)] =
        smem_tile[guide_load_index(mode, i, j, in_offset)];
  }
}
/// [guide_transpose_column]

/// [guide_kernel]
// One block of 8 threads per 8 x 8 tile of int4: load it with TMA, transpose it in shared memory,
// store it with TMA to the mirrored tile position.
template <Swizzle kMode>
__global__ void guide_int4_kernel(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map) {
  // The 128B pattern repeats every 1024 bytes: both tiles start where it starts.
  __shared__ alignas(1024) int4 smem_tile[kGuideDim][kGuideDim];
  __shared__ alignas(1024) int4 smem_tile_tr[kGuideDim][kGuideDim];
  __shared__ block_barrier full_bar;  // phase 0 completes when the tile has landed
  std::uint64_t* full_word = cuda::device::barrier_native_handle(full_bar);  // its mbarrier
  if (threadIdx.x == 0) {
    init(&full_bar, 1);  // one arrival per phase: thread 0's, which also announces the bytes
    // The TMA unit (the async proxy) will complete this barrier: make the init visible to it.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // nobody waits on the barrier before it is initialised

  if (threadIdx.x == 0) {
    const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.x) * kInt4Words * kGuideDim,
                                    static_cast<std::int32_t>(blockIdx.y) * kGuideDim};  // {x, y}
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, &smem_tile, &in_map, coords,
                              full_word);
    // arrive (the one expected arrival) and add the tile's bytes to what this phase waits for
    (void)cuda::device::barrier_arrive_tx(full_bar, 1, sizeof(smem_tile));
  }
  // Every thread waits for phase 0 to complete: the 1 KiB has landed and is visible to it.
  while (!ptx::mbarrier_try_wait_parity(full_word, 0)) {
  }

  // The swizzle follows shared-memory addresses; the guide's formula gives each buffer's offset
  // (0 for both, with alignas(1024), but computed rather than assumed).
  const int in_offset =
      swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_tile)));
  const int out_offset =
      swizzle_offset(kMode, static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_tile_tr)));
  for (int j = threadIdx.x; j < kGuideDim; j += blockDim.x) {
    guide_transpose_column(kMode, &smem_tile[0][0], &smem_tile_tr[0][0], j, in_offset, out_offset);
  }
  ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared visible to the TMA store
  __syncthreads();  // every thread's stores are done and fenced

  if (threadIdx.x == 0) {
    // The guide leaves {x, y} undefined here: it is the mirrored tile, tile column y, tile row x.
    const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.y) * kInt4Words * kGuideDim,
                                    static_cast<std::int32_t>(blockIdx.x) * kGuideDim};
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &out_map, coords,
                              &smem_tile_tr);
    ptx::cp_async_bulk_commit_group();  // close the bulk group holding this store
    // shared memory is read: the block may exit
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
}
/// [guide_kernel]

// ---- Launcher and the variant table --------------------------------------------------------

struct GuideMaps {
  CUtensorMap in, out;  // host copies, passed by value as __grid_constant__ parameters
};
// Everything a launcher needs. in: rows x cols floats = rows x cols / 4 int4; out: cols / 4 x rows
// int4.
struct Operands {
  const float* gmem_in = nullptr;
  float* gmem_out = nullptr;
  int rows = 0, cols = 0;
  GuideMaps plain{}, swizzled{};  // no swizzle; CU_TENSOR_MAP_SWIZZLE_128B
};

/// [guide_maps]
// The guide's encoding: int4 elements described as 4 x INT32, a box of 32 x 8 int32 (8 x 8 int4,
// 128 bytes per row: the whole span of the 128B mode).
GuideMaps guide_maps(const float* gmem_in, float* gmem_out, int rows, int cols, Swizzle mode) {
  constexpr CUtensorMapDataType kInt = CU_TENSOR_MAP_DATA_TYPE_INT32;
  constexpr int kBoxWords = kInt4Words * kGuideDim;
  return {
      course::encode_tiled(matrix_request(kInt, gmem_in, rows, cols, kGuideDim, kBoxWords, mode)),
      course::encode_tiled(matrix_request(kInt, gmem_out, cols / kInt4Words, kInt4Words * rows,
                                          kGuideDim, kBoxWords, mode))};
}
/// [guide_maps]

template <Swizzle kMode>
void launch_guide(const Operands& ops) {
  const GuideMaps& maps = kMode == Swizzle::none ? ops.plain : ops.swizzled;
  // one block per 8 x 8 int4 tile
  const dim3 grid(ops.cols / kInt4Words / kGuideDim, ops.rows / kGuideDim);
  guide_int4_kernel<kMode><<<grid, kGuideThreads>>>(maps.in, maps.out);
  COURSE_CHECK_LAUNCH();
}

using Launch = void (*)(const Operands& ops);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"guide_int4_unswizzled",
     "the guide's 8x8 int4 tile transpose, no swizzle (8-way store conflicts)",
     &launch_guide<Swizzle::none>},
    {"guide_int4_swizzled", "the guide's 8x8 int4 tile transpose with the 128B swizzle",
     &launch_guide<Swizzle::b128>},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct Problem {
  Problem(int rows, int cols)
      : rows(rows),
        cols(cols),
        host_in(static_cast<std::size_t>(rows) * cols),
        gmem_in(host_in.size()),
        gmem_out(host_in.size()) {
    course::fill_pattern(host_in);  // position-dependent, so a misplaced element shows
    gmem_in.upload(host_in.data());
    expected = reference_int4_transpose(host_in, rows, cols);
  }
  // The maps of input and output, encoded once per problem, not per launch.
  Operands operands() const {
    const auto maps = [&](Swizzle mode) {
      return guide_maps(gmem_in.data(), gmem_out.data(), rows, cols, mode);
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
  return p.gmem_out.check(p.expected, kInt4Words * p.rows);  // an output row: `rows` int4
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
  info.program = "transpose_guide";
  info.title = "08 swizzle, transpose_guide: the guide's 8 x 8 int4 tile transpose";
  info.explanation =
      "The N x N fp32 matrix of the chapter read as N x N/4 int4 elements, transposed one 8 x 8 "
      "tile\n"
      "per block of 8 threads as in the guide: TMA load, transpose in shared memory, TMA store to "
      "the\n"
      "mirrored tile; without a swizzle and with the 128B swizzle. Tables: swizzle_model.hpp.";
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
