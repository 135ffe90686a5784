// 02_memcpy_async: global -> shared copies that skip the register file (LDGSTS).
//
// What you learn: the three APIs that issue an asynchronous global->shared copy
// (cooperative_groups::memcpy_async, cuda::memcpy_async with a cuda::barrier, the
// __pipeline_* primitives), which overloads are collective and which per-thread,
// how alignment decides between 16-byte L1-bypassing copies, 4-byte copies through
// L1 and a plain synchronous fallback, and the guide's halo stencil done right.
// What changed from 01: the copy line `smem[i] = gmem[j]` becomes one call; the
// compute phase and both block barriers stay.
// Hardware: compute capability 8.0+ (LDGSTS); older GPUs would run a software copy.
// Run: build/02_memcpy_async/memcpy_async [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-ldgsts
//        (4.11.1, 4.11.1.1 "Batching loads in conditional code")
// API: cuda::memcpy_async  https://nvidia.github.io/cccl/libcudacxx/extended_api/asynchronous_operations/memcpy_async.html
//      cuda::aligned_size_t https://nvidia.github.io/cccl/libcudacxx/extended_api/memory/aligned_size.html
//      cuda::barrier        https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/barrier.html
//      cooperative_groups::memcpy_async / wait
//        https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
//      __pipeline_memcpy_async  https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#pipeline-primitives-interface
//      PTX cp.async  https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda_pipeline.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() below does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kChunkBytes = 16;                                            // the widest LDGSTS
constexpr int kChunkElems = kChunkBytes / sizeof(std::uint32_t);
static_assert(kBatchBytes == kBlockThreads * kChunkBytes, "per-thread variants copy one 16-byte chunk per thread");
static_assert(std::is_trivially_copyable_v<std::uint32_t> && std::is_trivially_copyable_v<float>,
              "memcpy_async copies bytes: only trivially copyable types can use the hardware copy");

// ---- Batch problem: the same copy-and-compute as chapter 01 -------------------------------

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      out[base + i] = smooth(in[base + ((i - 1) & (kBatchElems - 1))], in[base + i],
                             in[base + ((i + 1) & (kBatchElems - 1))]);
    }
  }
  return out;
}

// The compute phase every batch kernel shares: read neighbours from shared memory.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
    gmem_out_batch[i] = smooth(smem_batch[(i - 1) & (kBatchElems - 1)], smem_batch[i],
                               smem_batch[(i + 1) & (kBatchElems - 1)]);
  }
}

// Chapter 01's kernel, kept for comparison: the copy goes through registers.
__global__ void sync_copy_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = gmem_in[batch * kBatchElems + i];
    __syncthreads();  // the batch is complete in shared memory
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    __syncthreads();  // the batch is no longer read
  }
}

/// [cg_memcpy_async]
__global__ void cg_memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // TUTORIAL: collective call: every thread of `block` passes the same arguments and
    // the library splits the 4 KiB into per-thread cp.async instructions. aligned_size_t<16>
    // promises 16-byte aligned pointers and size, which allows 16-byte copies.
    cg::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes));
    cg::wait(block);  // waits for this thread's copies, then joins the block: the whole batch is visible
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [cg_memcpy_async]

/// [cuda_memcpy_async_block]
// kAlign is the alignment promised to the library: 16 (L1-bypassing 16-byte copies) or 4.
template <std::size_t kAlign>
__global__ void cuda_memcpy_async_block_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                               std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());  // one thread initialises: every thread will arrive
  block.sync();  // nobody may use the barrier before its initialisation is visible

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // Collective overload (group first): the copy counts as a pending arrival on `bar`.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<kAlign>(kBatchBytes),
                       bar);
    bar.arrive_and_wait();  // the phase ends when all threads arrived and every bound copy landed
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read
  }
}
/// [cuda_memcpy_async_block]

/// [cuda_memcpy_async_thread]
__global__ void cuda_memcpy_async_thread_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                                std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);  // every thread of the block arrives once per batch
  __syncthreads();  // the initialised barrier is visible before first use

  const int chunk = threadIdx.x * kChunkElems;  // this thread's 16 bytes of the batch
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // Per-thread overload (no group): this thread alone copies its 16 bytes.
    cuda::memcpy_async(smem_batch + chunk, gmem_in + batch * kBatchElems + chunk,
                       cuda::aligned_size_t<kChunkBytes>(kChunkBytes), bar);
    bar.arrive_and_wait();  // all threads' chunks landed: the barrier covers the whole block
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    __syncthreads();  // the batch is no longer read
  }
}
/// [cuda_memcpy_async_thread]

/// [pipeline_primitives]
__global__ void pipeline_primitives_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                           std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  const int chunk = threadIdx.x * kChunkElems;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    __pipeline_memcpy_async(smem_batch + chunk, gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    __pipeline_commit();       // close this thread's batch of copies
    __pipeline_wait_prior(0);  // wait for this thread's own copies: not for anyone else's
    __syncthreads();           // so the block synchronises to see the chunks the other threads copied
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    __syncthreads();  // the batch is no longer read
  }
}
/// [pipeline_primitives]

/// [misaligned]
// The source is 4 bytes past a 16-byte boundary, and byte pointers tell the library nothing.
// cooperative_groups checks alignment at run time and still uses hardware copies of the
// widest size the two addresses allow (4 bytes here); cuda::memcpy_async, given only
// `char` pointers and a plain size, falls back to a synchronous byte-by-byte copy.
__global__ void misaligned_cg_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cg::memcpy_async(block, reinterpret_cast<char*>(smem_batch),
                     reinterpret_cast<const char*>(gmem_in + batch * kBatchElems), std::size_t{kBatchBytes});
    cg::wait(block);  // copies done and block joined
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read
  }
}

__global__ void misaligned_cuda_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());  // every thread arrives
  block.sync();  // barrier initialised before use
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cuda::memcpy_async(block, reinterpret_cast<char*>(smem_batch),
                       reinterpret_cast<const char*>(gmem_in + batch * kBatchElems), std::size_t{kBatchBytes}, bar);
    bar.arrive_and_wait();  // the (synchronous) copy and every arrival are complete
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read
  }
}
/// [misaligned]

// ---- Stencil problem: the guide's 4.11.1.1 example, made correct ----------------------------

constexpr int kHalo = 8;
constexpr int kTileElems = 32;                             // one output per lane of the one warp
constexpr int kTileBufferElems = kHalo + kTileElems + kHalo;  // left halo | centre | right halo
constexpr int kStencilThreads = 32;

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
    const int right = kHalo + kTileElems + (lane - (kTileElems - kHalo));  // the guide reads right[lane] here
    return {2, {kHalo + lane, right}, {kHalo + lane, right}};
  }
  return {1, {kHalo + lane, 0}, {kHalo + lane, 0}};
}
/// [stencil_plan]

/// [stencil_sync]
__global__ void stencil_sync_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_tile[kTileBufferElems];
  const int lane = threadIdx.x;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* gmem_window = gmem_padded + tile * kTileElems;
    const TileCopies copies = stencil_copies(lane);
    for (int c = 0; c < copies.count; ++c) smem_tile[copies.slot[c]] = gmem_window[copies.from[c]];
    __syncthreads();  // halos come from other lanes
    gmem_out[tile * kTileElems + lane] = stencil_point(smem_tile, lane);
    __syncthreads();  // the tile is no longer read
  }
}
/// [stencil_sync]

/// [stencil_cuda]
__global__ void stencil_cuda_memcpy_async_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_tile[kTileBufferElems];
  __shared__ block_barrier bar;
  const int lane = threadIdx.x;
  if (lane == 0) init(&bar, blockDim.x);  // every lane arrives once per tile
  __syncthreads();  // barrier initialised before use
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* gmem_window = gmem_padded + tile * kTileElems;
    const TileCopies copies = stencil_copies(lane);
    // All of a lane's loads are in flight before anyone waits: the point of async copies here.
    for (int c = 0; c < copies.count; ++c) {
      cuda::memcpy_async(smem_tile + copies.slot[c], gmem_window + copies.from[c],
                         cuda::aligned_size_t<alignof(float)>(sizeof(float)), bar);
    }
    bar.arrive_and_wait();  // every lane's copies landed; no extra __syncthreads needed
    gmem_out[tile * kTileElems + lane] = stencil_point(smem_tile, lane);
    __syncthreads();  // the tile is no longer read
  }
}
/// [stencil_cuda]

/// [stencil_cg]
__global__ void stencil_cg_memcpy_async_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ float smem_tile[kTileBufferElems];
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* left = gmem_padded + tile * kTileElems;
    const float* centre = left + kHalo;
    const float* right = centre + kTileElems;
    cg::memcpy_async(block, smem_tile, left, kHalo * sizeof(float));
    cg::memcpy_async(block, smem_tile + kHalo, centre, kTileElems * sizeof(float));
    cg::memcpy_async(block, smem_tile + kHalo + kTileElems, right, kHalo * sizeof(float));
    cg::wait(block);  // all three copies landed and the block joined
    gmem_out[tile * kTileElems + threadIdx.x] = stencil_point(smem_tile, threadIdx.x);
    block.sync();  // the tile is no longer read
  }
}
/// [stencil_cg]

/// [stencil_primitives]
__global__ void stencil_primitives_kernel(const float* gmem_padded, float* gmem_out, std::size_t num_tiles) {
  __shared__ alignas(16) float smem_tile[kTileBufferElems];
  const int lane = threadIdx.x;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const float* gmem_window = gmem_padded + tile * kTileElems;
    const TileCopies copies = stencil_copies(lane);
    for (int c = 0; c < copies.count; ++c) {
      __pipeline_memcpy_async(smem_tile + copies.slot[c], gmem_window + copies.from[c], sizeof(float));
    }
    __pipeline_commit();       // one batch for all of this lane's copies
    __pipeline_wait_prior(0);  // this lane's copies landed...
    __syncthreads();           // ...and now everyone's
    gmem_out[tile * kTileElems + lane] = stencil_point(smem_tile, lane);
    __syncthreads();  // the tile is no longer read
  }
}
/// [stencil_primitives]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// Fill every SM with resident blocks, never more blocks than work items.
template <class Kernel, class In, class Out>
void launch_resident(Kernel kernel, int block_threads, const In* in, Out* out, std::size_t num_items) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block_threads, 0));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  kernel<<<static_cast<unsigned>(num_items < resident ? num_items : resident), block_threads>>>(in, out, num_items);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using BatchLaunch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches);
using StencilLaunch = void (*)(const float* gmem_padded, float* gmem_out, std::size_t num_tiles);

template <auto kKernel>
void batch_launch(const std::uint32_t* in, std::uint32_t* out, std::size_t num_batches) {
  launch_resident(kKernel, kBlockThreads, in, out, num_batches);
}
template <auto kKernel>
void stencil_launch(const float* in, float* out, std::size_t num_tiles) {
  launch_resident(kKernel, kStencilThreads, in, out, num_tiles);
}

struct Variant {
  const char* name;
  const char* summary;
  BatchLaunch batch = nullptr;      // batch problem, or
  StencilLaunch stencil = nullptr;  // stencil problem
  bool shifted_input = false;       // batch input starts 4 bytes past a 16-byte boundary
};
const Variant kVariants[] = {
    {"sync_copy", "chapter 01: through registers (LDG + STS)", &batch_launch<sync_copy_kernel>},
    {"cg_memcpy_async", "cooperative_groups::memcpy_async + wait, 16-byte copies",
     &batch_launch<cg_memcpy_async_kernel>},
    {"cuda_memcpy_async_block", "cuda::memcpy_async(block, ..., barrier), aligned_size_t<16>",
     &batch_launch<cuda_memcpy_async_block_kernel<16>>},
    {"cuda_memcpy_async_thread", "cuda::memcpy_async per thread, one 16-byte chunk each",
     &batch_launch<cuda_memcpy_async_thread_kernel>},
    {"pipeline_primitives", "__pipeline_memcpy_async + commit + wait_prior(0)",
     &batch_launch<pipeline_primitives_kernel>},
    {"align4", "cuda::memcpy_async with aligned_size_t<4>: 4-byte copies through L1",
     &batch_launch<cuda_memcpy_async_block_kernel<4>>},
    {"misaligned_cg", "source 4 bytes off a 16-byte boundary: cg picks 4-byte copies at run time",
     &batch_launch<misaligned_cg_kernel>, nullptr, true},
    {"misaligned_cuda", "same source via char pointers: cuda::memcpy_async falls back to byte copies",
     &batch_launch<misaligned_cuda_kernel>, nullptr, true},
    {"stencil_sync", "4.11.1.1 halo stencil, ordinary loads", nullptr, &stencil_launch<stencil_sync_kernel>},
    {"stencil_cuda_memcpy_async", "stencil, per-lane cuda::memcpy_async + barrier", nullptr,
     &stencil_launch<stencil_cuda_memcpy_async_kernel>},
    {"stencil_cg_memcpy_async", "stencil, three collective cooperative_groups copies", nullptr,
     &stencil_launch<stencil_cg_memcpy_async_kernel>},
    {"stencil_primitives", "stencil, __pipeline_memcpy_async per lane", nullptr,
     &stencil_launch<stencil_primitives_kernel>},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct BatchProblem {
  explicit BatchProblem(std::size_t num_batches)
      : num_batches(num_batches), host_in(num_batches * kBatchElems), gmem_in(host_in.size()),
        gmem_in_shifted(host_in.size() + kChunkElems), gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
    COURSE_CHECK(cudaMemcpy(gmem_in_shifted.data() + 1, host_in.data(), host_in.size() * sizeof(std::uint32_t),
                            cudaMemcpyHostToDevice));
  }
  const std::uint32_t* input(const Variant& v) const { return v.shifted_input ? gmem_in_shifted.data() + 1 : gmem_in.data(); }
  std::size_t num_batches;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in, gmem_in_shifted;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

struct StencilProblem {
  explicit StencilProblem(std::size_t num_tiles)
      : num_tiles(num_tiles), host_padded(num_tiles * kTileElems + 2 * kHalo), gmem_padded(host_padded.size()),
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

course::Comparison verify(const Variant& v, BatchProblem& p) {
  p.gmem_out.poison();
  v.batch(p.input(v), p.gmem_out.data(), p.num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected, kBatchElems);
}

course::Comparison verify(const Variant& v, StencilProblem& p) {
  p.gmem_out.poison();
  v.stencil(p.gmem_padded.data(), p.gmem_out.data(), p.num_tiles);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected, kTileElems);
}

void run(const course::Options& opts, course::Report& report) {
  BatchProblem batches(opts.size_bytes / kBatchBytes);
  StencilProblem stencil(opts.size_bytes / (kTileElems * sizeof(float)));
  for (const Variant& v : kVariants) {
    if (v.batch) {
      course::check_and_time(
          opts, report, v.name, [&] { return verify(v, batches); },
          [&] { v.batch(batches.input(v), batches.gmem_out.data(), batches.num_batches); },
          2 * opts.size_bytes);  // each element read once and written once
    } else {
      course::check_and_time(
          opts, report, v.name, [&] { return verify(v, stencil); },
          [&] { v.stencil(stencil.gmem_padded.data(), stencil.gmem_out.data(), stencil.num_tiles); },
          2 * opts.size_bytes + 2 * kHalo * sizeof(float));  // the padded input once, the output once
    }
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "memcpy_async";
  info.title = "02 memcpy_async: global -> shared without the register round trip";
  info.explanation =
      "The batch problem of chapter 01, with the copy issued by cooperative_groups::memcpy_async,\n"
      "cuda::memcpy_async (collective and per-thread, completing on a cuda::barrier) and the\n"
      "__pipeline_* primitives; 16-byte vs 4-byte copies and misaligned sources; and the guide's\n"
      "halo stencil (4.11.1.1) in the same three flavours, with its indexing mistakes fixed.";
  info.host_model = [](std::ostream& out) {
    out << "Stencil copy plan, from stencil_copies(): lane -> buffer slots it fills (slot k holds window "
           "element k)\n";
    for (int lane = 0; lane < kStencilThreads; ++lane) {
      const TileCopies copies = stencil_copies(lane);
      char cell[32];
      std::snprintf(cell, sizeof cell, copies.count == 2 ? "  %2d -> %2d,%2d" : "  %2d -> %2d   ", lane,
                    copies.slot[0], copies.slot[1]);
      out << cell << (lane % 8 == 7 ? "\n" : "");
    }
  };
  info.requirement = {8, 0, false, "cp.async (LDGSTS)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBatchBytes, "--size must be a whole number of 4 KiB batches (1024 uint32 elements)");
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
