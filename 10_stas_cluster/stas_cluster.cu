// 10_stas_cluster: thread block clusters, and st.async into a neighbour's shared memory.
//
// What you learn: how to launch clusters of blocks (__cluster_dims__, or cudaLaunchKernelEx with a
// cluster-dimension attribute) and how large they may be; how a block maps another block's shared
// memory (map_shared_rank, PTX mapa); how st.async writes registers into it and completes on the
// *receiver's* mbarrier; why those waits acquire at cluster scope; when a block may exit. Eight
// blocks form a ring and pass messages through filled/ready barriers; plain stores + cluster.sync
// do the same. Message, reference and ring model: stas_cluster_model.hpp; release per warp,
// buffer and cluster-size sweeps: the lab (stas_cluster_lab.cu).
// What changed from 09: no data comes from global memory; the blocks of a cluster make it and hand
// it on, and the barrier a transfer completes on belongs to another block.
// Hardware: compute capability 9.0 (clusters, distributed shared memory, st.async).
// Run: build/10_stas_cluster/stas_cluster [--bench] [--variant=NAME] [--size=BYTES_PER_BLOCK];
//      the lab: build/10_stas_cluster/stas_cluster_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-stas
//        https://docs.nvidia.com/cuda/cuda-programming-guide/01-introduction/programming-model.html#thread-block-clusters
// API: cooperative_groups::cluster_group https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
//      cudaLaunchKernelEx, cudaOccupancyMaxPotentialClusterSize, cudaOccupancyMaxActiveClusters
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
//      cuda::ptx::st_async, mbarrier_arrive, mbarrier_try_wait_parity
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/st_async.html (mbarrier_arrive.html, mbarrier_try_wait.html)
//      PTX st.async, mapa, mbarrier, barrier.cluster
//        https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-st-async
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/bandwidth.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"        // course::WaitSite and the report of a wait that gave up
#include "stas_cluster_model.hpp"  // the message (kThreads, kMessageBytes, ...), reference(), the ring tables

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kStages = 2;  // buffers per block: a sender may run one message ahead of its reader
static_assert(kVecElems * sizeof(std::uint32_t) == 16, "st.async moves at most 16 bytes (v4.b32), 16-byte aligned");
static_assert(kMessageBytes <= kMaxTxBytes, "an mbarrier's transaction count holds less than 2^20 bytes per phase");

// ---- Kernels ---------------------------------------------------------------------------------

/// [cluster_wait]
// TUTORIAL: the phases waited on here are completed by *other* blocks: the left neighbour's
// st.async (complete-tx on our filled barrier) and the right neighbour's remote arrive (on our
// ready barrier), both releases at cluster scope. A try_wait with the default semantics,
// .acquire.cta, does not pair with them; .acquire.cluster does, so what the other block wrote
// before it released is visible once the wait returns. The loop is bounded: after the process's
// wait limit the first stuck thread reports barrier, stage and phase (course/wait.cuh) and the
// grid stops, so a broken protocol is a diagnosis, not a hang.
__device__ inline void wait_parity_cluster(std::uint64_t* bar, std::uint32_t parity, const course::WaitSite& site) {
  if (ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, bar, parity)) return;
  const unsigned long long start_ns = course::wait_clock_ns();
  while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, bar, parity)) {
    course::give_up_if_stuck(site, course::wait_clock_ns() - start_ns);  // past the limit: reports, then traps
  }
}
/// [cluster_wait]

// This thread's vector `k` of the message that this block sends in `iteration`.
__device__ inline uint4 message_vector(std::uint32_t iteration, int k) {
  auto word = [&](int i) { return message_word(blockIdx.x, iteration, message_index(threadIdx.x, k, i), gridDim.x); };
  return make_uint4(word(0), word(1), word(2), word(3));
}

/// [stas_ring]
template <int kRingStages>
__device__ void stas_ring(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  __shared__ alignas(16) std::uint32_t smem_message[kRingStages][kMessageElems];  // written by the left neighbour
  __shared__ std::uint64_t filled_bar[kRingStages];  // phase k: the k-th message into this stage has landed
  __shared__ std::uint64_t ready_bar[kRingStages];   // phase k: the right neighbour has read our k-th message
  cg::cluster_group cluster = cg::this_cluster();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const unsigned rank = cluster.block_rank(), ring_size = cluster.num_blocks();
  const bool is_leader_warp = warp.meta_group_rank() == 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      ptx::mbarrier_init(&filled_bar[s], 1);  // one arrival per phase: our own arrive.expect_tx
      ptx::mbarrier_init(&ready_bar[s], 1);   // one arrival per phase: the right neighbour's, for its block
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the inits are visible cluster-wide...
  }
  cluster.sync();  // ...before any block writes into or arrives on another; also: every block has started

  // TUTORIAL: map_shared_rank(&x, r) (PTX mapa) turns the address of *our* variable x into the
  // address of the same variable in the shared memory of the cluster's block r.
  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(&smem_message[0][0], ring_right(rank, ring_size));
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar[0], ring_right(rank, ring_size));
  std::uint64_t* dsmem_left_ready = cluster.map_shared_rank(&ready_bar[0], ring_left(rank, ring_size));

  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  course::StageCursor<kRingStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    // Producer: the right neighbour's buffer for this stage is free once it has read the message we
    // sent kRingStages iterations ago (parity phase ^ 1; a fresh barrier counts that phase as complete).
    wait_parity_cluster(&ready_bar[cursor.stage], cursor.phase ^ 1u, {"ready", cursor.stage, cursor.phase ^ 1u});
    for (int k = 0; k < kVecsPerThread; ++k) {
      const uint4 vector = message_vector(it, k);
      const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
      // TUTORIAL: 16 bytes from registers into the neighbour's shared memory; when they have
      // landed, the hardware performs complete-tx(16) on the neighbour's filled barrier.
      ptx::st_async(dsmem_right_message + cursor.stage * kMessageElems + message_index(threadIdx.x, k, 0), words,
                    dsmem_right_filled + cursor.stage);
    }
    // Consumer: one thread announces the bytes the left neighbour's st.async will deliver, and arrives.
    if (is_leader_warp) {
      cg::invoke_one(warp, [&] {
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                             &filled_bar[cursor.stage], std::uint32_t{kMessageBytes});
      });
    }
    wait_parity_cluster(&filled_bar[cursor.stage], cursor.phase, {"filled", cursor.stage, cursor.phase});  // landed
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] = reinterpret_cast<const uint4*>(smem_message[cursor.stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
    // Release: tell the left neighbour that this stage may be written again.
    __syncthreads();  // every warp of the block has read its part of the message...
    if (is_leader_warp) {
      cg::invoke_one(warp, [&] {  // ...so one remote arrival, with release at cluster scope, speaks for all
        ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, dsmem_left_ready + cursor.stage);
      });
    }
  }
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kOutElemsPerBlock;
  gmem_block[threadIdx.x] = digest;
  uint4* gmem_last_message = reinterpret_cast<uint4*>(gmem_block + kThreads);
  for (int k = 0; k < kVecsPerThread; ++k) gmem_last_message[k * kThreads + threadIdx.x] = received[k];
  // TUTORIAL: our last waits do not cover the right neighbour's arrivals for our last kRingStages
  // messages: they may still be on their way to ready_bar. Each block makes its remote
  // arrivals before it arrives at this cluster barrier (with release), and no block passes
  // the barrier before all have arrived: when we exit, nothing can still reach our memory.
  cluster.sync();
}
/// [stas_ring]

/// [kernels]
// The cluster size fixed at compile time: an ordinary <<<grid, block>>> launch makes clusters.
template <int kRingStages>
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    stas_ring_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  stas_ring<kRingStages>(gmem_out, num_iterations);
}

// No compile-time size: the launch chooses it (cudaLaunchKernelEx), 1 to 8, or 16 where allowed.
__global__ void __launch_bounds__(kThreads) stas_ring_any_cluster_kernel(std::uint32_t* gmem_out,
                                                                          std::uint32_t num_iterations) {
  stas_ring<kStages>(gmem_out, num_iterations);
}
/// [kernels]

/// [dsmem_stores]
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    dsmem_stores_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  __shared__ alignas(16) std::uint32_t smem_message[kStages][kMessageElems];  // two: see the cluster.sync below
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  std::uint32_t* dsmem_right_message =
      cluster.map_shared_rank(&smem_message[0][0], ring_right(rank, cluster.num_blocks()));
  cluster.sync();  // every block of the cluster has started before anyone writes into its shared memory

  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  for (std::uint32_t it = 0; it < num_iterations; ++it) {
    const int stage = it % kStages;
    for (int k = 0; k < kVecsPerThread; ++k) {
      reinterpret_cast<uint4*>(dsmem_right_message + stage * kMessageElems)[k * kThreads + threadIdx.x] =
          message_vector(it, k);
    }
    // One barrier for the whole cluster: our stores into the right neighbour are visible to it, the
    // left neighbour's are visible to us, and everybody has finished reading iteration it - 1, whose
    // buffer (same stage as it + 1) is written next. With one buffer it would take two barriers.
    cluster.sync();
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] = reinterpret_cast<const uint4*>(smem_message[stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
  }
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kOutElemsPerBlock;
  gmem_block[threadIdx.x] = digest;
  uint4* gmem_last_message = reinterpret_cast<uint4*>(gmem_block + kThreads);
  for (int k = 0; k < kVecsPerThread; ++k) gmem_last_message[k * kThreads + threadIdx.x] = received[k];
  // No cluster.sync here: the last remote store into this block came before the last one in the loop.
}
/// [dsmem_stores]

// ---- Launchers, cluster queries and the variant table ----------------------------------------

/// [launch_dims]
template <auto kKernel>
void launch_cluster_dims(const RingShape& shape, std::uint32_t* gmem_out) {
  if (shape.cluster_blocks != kClusterBlocks) throw std::invalid_argument("this kernel's cluster size is fixed at 8");
  kKernel<<<shape.num_blocks(), kThreads>>>(gmem_out, shape.num_iterations);  // the grid counts blocks, not clusters
  COURSE_CHECK_LAUNCH();
}
/// [launch_dims]

/// [launch_ex]
// The launch attribute that groups the grid into clusters of `blocks` blocks along x.
cudaLaunchAttribute cluster_dimension(unsigned blocks) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = blocks;  // gridDim.x must be a multiple of it
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

template <auto kKernel>
void launch_ex(const RingShape& shape, std::uint32_t* gmem_out) {
  // More than the portable 8 blocks per cluster needs the kernel's permission.
  if (shape.cluster_blocks > kClusterBlocks) {
    COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  cudaLaunchAttribute attribute = cluster_dimension(shape.cluster_blocks);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(shape.num_blocks());
  config.blockDim = dim3(kThreads);
  config.attrs = &attribute;
  config.numAttrs = 1;
  COURSE_CHECK(cudaLaunchKernelEx(&config, kKernel, gmem_out, shape.num_iterations));
}
/// [launch_ex]

/// [queries]
struct ClusterLimits {
  int max_portable = 0;       // largest cluster of this kernel without special permission
  int max_nonportable = 0;    // with cudaFuncAttributeNonPortableClusterSizeAllowed
  int resident_clusters = 0;  // clusters of kClusterBlocks that fit on the GPU at once
};

ClusterLimits query_cluster_limits() {
  auto* kernel = stas_ring_any_cluster_kernel;
  ClusterLimits limits;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  // The permission is an attribute of the kernel that stays set: ask without it first, and put it back.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 0));
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_portable, kernel, &config));
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_nonportable, kernel, &config));
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 0));
  cudaLaunchAttribute attribute = cluster_dimension(kClusterBlocks);
  config.attrs = &attribute;
  config.numAttrs = 1;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&limits.resident_clusters, kernel, &config));
  if (limits.resident_clusters < 1) throw std::runtime_error("no cluster of 8 blocks fits on this GPU");
  return limits;
}
/// [queries]

using RingLaunch = void (*)(const RingShape& shape, std::uint32_t* gmem_out);
struct Variant {
  const char* name;
  const char* summary;
  RingLaunch launch;
};
const Variant kVariants[] = {
    {"stas_ring", "st.async + filled/ready mbarriers, 2 buffers per block, __cluster_dims__(8,1,1)",
     &launch_cluster_dims<stas_ring_kernel<kStages>>},
    {"stas_ring_1stage", "the guide's buffer count: one, so every message waits for the last to be read",
     &launch_cluster_dims<stas_ring_kernel<1>>},
    {"stas_ring_launch_ex", "the 2-buffer ring, cluster size given at launch (cudaLaunchKernelEx)",
     &launch_ex<stas_ring_any_cluster_kernel>},
    {"dsmem_stores", "plain 16-byte stores through map_shared_rank + one cluster.sync per message",
     &launch_cluster_dims<dsmem_stores_kernel>},
};

// ---- run(): verify every variant, then time the correct ones --------------------------------

struct Problem {
  explicit Problem(const RingShape& shape) : shape(shape), expected(reference(shape)), gmem_out(expected.size()) {}
  RingShape shape;
  std::vector<std::uint32_t> expected;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(RingLaunch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.shape, problem.gmem_out.data());
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kOutElemsPerBlock);
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  const ClusterLimits limits = query_cluster_limits();
  const RingShape shape{static_cast<unsigned>(limits.resident_clusters), kClusterBlocks,
                        static_cast<std::uint32_t>(opts.size_bytes / kMessageBytes)};
  log << "clusters: portable maximum " << limits.max_portable << " blocks, " << limits.max_nonportable
      << " with non-portable sizes allowed; " << shape.num_clusters << " clusters of " << kClusterBlocks
      << " fit at once\ngrid: " << shape.num_blocks() << " blocks, each sending " << shape.num_iterations
      << " messages of " << kMessageBytes / 1024 << " KiB; size = bytes written into remote shared memory\n";
  Problem problem(shape);
  for (const Variant& v : kVariants) {
    // The row's size is the bytes written into remote shared memory, and each crosses once.
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(shape, problem.gmem_out.data()); }, shape.dsmem_bytes(), shape.dsmem_bytes());
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "stas_cluster";
  info.title = "10 stas_cluster: thread block clusters and st.async into distributed shared memory";
  info.explanation =
      "Clusters of 8 blocks form a ring: each block writes a message into its right neighbour's\n"
      "shared memory with st.async, which completes on the neighbour's 'filled' mbarrier; the\n"
      "neighbour reads it and arrives on the sender's 'ready' mbarrier. Two buffers and the guide's\n"
      "one, __cluster_dims__ and cudaLaunchKernelEx, and plain stores + cluster.sync. --size is the\n"
      "bytes each block sends; every received word is folded into a digest checked against a host model.";
  info.requirement = {9, 0, false, "thread block clusters and st.async"};
  info.verify_bytes = 256u << 10;
  info.bench_bytes = 2u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kMessageBytes != 0 || bytes / kMessageBytes > (1u << 30)) {
      return "--size is the bytes each block sends: a whole number of 8 KiB messages, at most 8 TiB";
    }
    return std::nullopt;
  };
  info.bench_reads_device_memory = false;  // messages go from shared memory to shared memory
  info.host_model = [](std::ostream& out) {
    print_ring(out, kClusterBlocks);
    print_phase_counts(out, Release::per_block);
    print_ring_waits<kStages>(out, "2 buffers");
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
