// 02_memcpy_async, second lesson: the guide's halo stencil, copies made per lane under conditions.
//
// What you learn: how a warp stages a tile *plus its neighbours* (a halo) in shared memory,
// why ordinary loads under conditions serialise (load, store, load, store) while asynchronous
// copies put all of a lane's loads in flight before anyone waits, how per-lane copies of one
// float (4 bytes: below the 16 of the L1-bypassing copy) complete on a barrier, and the mistakes
// in the guide's example, caught by a host check of the copy plan.
// What changed from memcpy_async.cu: a batch of 4 KiB copied by 256 threads in 16-byte chunks
// becomes a 32-float tile and 8 floats on each side copied by one warp, one float at a time:
// lanes 0-7 and 24-31 copy two elements, the others one.
// Hardware: compute capability 8.0+ (LDGSTS).
// Run: build/02_memcpy_async/halo_stencil [--bench] [--variant=NAME] [--size=64M]
// Guide, 4.11.1.1 Batching loads in conditional code:
// https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
#include <cuda/barrier>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "memcpy_async_model.hpp"  // which instruction each variant's copy becomes

// A __shared__ cuda::barrier has a constructor that must not run; init() does the work.
#pragma nv_diag_suppress static_var_with_dynamic_init

// The chapter's tests include this lesson next to memcpy_async.cu: its names live in `halo`.
namespace halo {

using block_barrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int kHalo = 8;                                      // neighbours on each side of a tile
constexpr int kTileElems = 32;                                // one output per lane of the one warp
constexpr int kTileBufferElems = kHalo + kTileElems + kHalo;  // left halo | centre | right halo
constexpr int kStencilThreads = 32;                           // one warp per block
static_assert(kTileElems == kStencilThreads, "each lane computes one output of its tile");

// out[i] = in[i - 8] + ... + in[i + 8]. The input carries 8 elements of padding on each side
// (padded[k] = in[k - 8]), so tile t's window starts at padded + t * kTileElems.
std::vector<float> stencil_reference(const std::vector<float>& padded) {
  std::vector<float> out(padded.size() - 2 * kHalo);
  for (std::size_t i = 0; i < out.size(); ++i) {
    float sum = 0;
    for (int k = 0; k <= 2 * kHalo; ++k) sum += padded[i + k];
    out[i] = sum;
  }
  return out;
}

__device__ float stencil_point(const float* smem_tile, int lane) {
  float sum = 0;
  for (int k = 0; k <= 2 * kHalo; ++k) sum += smem_tile[lane + k];
  return sum;
}

/// [stencil_plan]
// Which element a lane copies into which buffer slot. Every lane copies one centre
// element; lanes 0-7 also copy the left halo, lanes 24-31 the right halo. Indices are
// relative to the tile's window start, where buffer slot k holds window element k.
struct TileCopies {
  int count;
  int slot[2];  // destination slots in the tile buffer
  int from[2];  // source offsets in the window (left halo starts at 0)
};
__host__ __device__ constexpr TileCopies stencil_copies(int lane) {
  if (lane < kHalo) return {2, {lane, kHalo + lane}, {lane, kHalo + lane}};
  if (lane >= kTileElems - kHalo) {
    // the guide reads right[lane] here, and has no upper bound on lane (require_one_warp)
    const int right = kHalo + kTileElems + (lane - (kTileElems - kHalo));
    return {2, {kHalo + lane, right}, {kHalo + lane, right}};
  }
  return {1, {kHalo + lane, 0}, {kHalo + lane, 0}};
}
/// [stencil_plan]

/// [stencil_sync]
__global__ void __launch_bounds__(kStencilThreads)
    stencil_sync_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_tile[kTileBufferElems];
  const int lane = threadIdx.x;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* gmem_window = gmem_padded + tile * kTileElems;
    const TileCopies copies = stencil_copies(lane);
    for (int c = 0; c < copies.count; ++c) smem_tile[copies.slot[c]] = gmem_window[copies.from[c]];
    __syncthreads();  // halos come from other lanes
    gmem_out[tile * kTileElems + lane] = stencil_point(smem_tile, lane);
    __syncthreads();  // the tile is no longer read when the next iteration overwrites it
  }
}
/// [stencil_sync]

/// [stencil_cuda]
__global__ void __launch_bounds__(kStencilThreads) stencil_cuda_memcpy_async_kernel(
    const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_tile[kTileBufferElems];
  __shared__ block_barrier full_bar;  // its phase completes when the whole window has landed
  const int lane = threadIdx.x;
  if (lane == 0) init(&full_bar, blockDim.x);  // every lane arrives once per tile
  __syncthreads();  // nobody touches the barrier before its initialisation is visible
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* gmem_window = gmem_padded + tile * kTileElems;
    const TileCopies copies = stencil_copies(lane);
    // TUTORIAL: all of a lane's copies are in flight before anyone waits: the point of
    // asynchronous copies here. Each is one float, 4 bytes (cp.async.ca, through L1): a
    // float pointer and aligned_size_t<4> prove no more, and one element is all there is.
    for (int c = 0; c < copies.count; ++c) {
      cuda::memcpy_async(smem_tile + copies.slot[c], gmem_window + copies.from[c],
                         cuda::aligned_size_t<alignof(float)>(sizeof(float)), full_bar);
    }
    full_bar.arrive_and_wait();  // every lane's copies landed; no extra __syncthreads needed
    gmem_out[tile * kTileElems + lane] = stencil_point(smem_tile, lane);
    __syncthreads();  // the tile is no longer read when the next iteration overwrites it
  }
}
/// [stencil_cuda]

/// [one_warp]
// The copy plan covers lanes 0-31: a block of more threads would copy past the 48-slot tile (the
// guide's `tid >= 32 - 8` holds for every thread above 23), a block of fewer would leave centre
// slots empty. The launcher refuses any other block size, and __launch_bounds__ on the kernels
// makes the driver refuse a launch of more than one warp that bypasses it.
void require_one_warp(int block_threads) {
  if (block_threads != kStencilThreads) {
    throw std::invalid_argument("halo_stencil: the copy plan covers lanes 0-31, so a block must be "
                                "one warp of 32 threads (got " +
                                std::to_string(block_threads) + ")");
  }
}
/// [one_warp]

/// [launch]
// Fill every SM with resident one-warp blocks, never more blocks than tiles.
void launch_tiles(void (*kernel)(const float*, float*, std::size_t), int block_threads,
                  const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  require_one_warp(block_threads);
  const std::size_t resident = course::resident_blocks((const void*)kernel, block_threads);
  const auto num_blocks = static_cast<unsigned>(num_tiles < resident ? num_tiles : resident);
  kernel<<<num_blocks, block_threads>>>(gmem_padded, gmem_out, num_tiles);
  COURSE_CHECK_LAUNCH();
}

template <auto kKernel>
void launch_resident(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  launch_tiles(kKernel, kStencilThreads, gmem_padded, gmem_out, num_tiles);
}
/// [launch]

using Launch = void (*)(const float* gmem_padded, float* gmem_out, std::size_t num_tiles);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"stencil_sync", "4.11.1.1 halo stencil, ordinary loads and stores",
     &launch_resident<stencil_sync_kernel>},
    {"stencil_cuda_memcpy_async", "per-lane cuda::memcpy_async of one float + barrier",
     &launch_resident<stencil_cuda_memcpy_async_kernel>},
};

// The padded input (multiples of 1/256 below 64 in magnitude: every 17-term sum is exact in
// any order), the expected output and device buffers for `num_tiles` tiles.
struct Problem {
  explicit Problem(std::size_t num_tiles)
      : num_tiles(num_tiles), host_padded(num_tiles * kTileElems + 2 * kHalo),
        gmem_padded(host_padded.size()),
        gmem_out(num_tiles * kTileElems) {
    course::fill_pattern(host_padded, 2);
    expected = stencil_reference(host_padded);
    gmem_padded.upload(host_padded.data());
  }
  std::size_t num_tiles;
  std::vector<float> host_padded, expected;
  course::DeviceBuffer<float> gmem_padded;
  course::GuardedOutput<float> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(Launch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.gmem_padded.data(), problem.gmem_out.data(), problem.num_tiles);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kTileElems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / (kTileElems * sizeof(float)));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_padded.data(), problem.gmem_out.data(), problem.num_tiles); },
        2 * opts.size_bytes + 2 * kHalo * sizeof(float));  // the padded input once, the output once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "halo_stencil";
  info.title = "02 halo_stencil: the guide's 4.11.1.1 stencil, a tile and its halo lane by lane";
  info.explanation =
      "out[i] = in[i-8] + ... + in[i+8]. One warp per block stages a 32-float tile and 8 floats\n"
      "on each side in shared memory, with ordinary loads and with per-lane cuda::memcpy_async on\n"
      "a barrier; the guide's indexing mistakes fixed (the copy plan below is checked on the\n"
      "host).";
  info.host_model = [](std::ostream& out) {
    out << "Copy plan, from stencil_copies(): lane -> buffer slots it fills "
           "(slot k holds window element k)\n";
    for (int lane = 0; lane < kStencilThreads; ++lane) {
      const TileCopies copies = stencil_copies(lane);
      char cell[32];
      const char* format = copies.count == 2 ? "  %2d -> %2d,%2d" : "  %2d -> %2d   ";
      std::snprintf(cell, sizeof cell, format, lane, copies.slot[0], copies.slot[1]);
      out << cell << (lane % 8 == 7 ? "\n" : "");
    }
    print_copy_paths(out, halo_copies(kTileElems, kHalo), "halo_stencil");
  };
  info.requirement = {8, 0, false, "cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kTileElems * sizeof(float), "--size must be a whole number of 128-byte tiles (32 floats)");
  return info;
}

}  // namespace halo

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, halo::chapter_info(), halo::kVariants, halo::run);
}
#endif
