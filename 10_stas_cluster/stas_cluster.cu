// 10_stas_cluster: thread block clusters, and st.async into a neighbour's shared memory.
//
// What you learn: how to launch clusters of thread blocks (the compile-time __cluster_dims__
// attribute, or cudaLaunchKernelEx with a cluster-dimension attribute), how large a cluster
// may be (cudaOccupancyMaxPotentialClusterSize), how a block finds its rank and maps another
// block's shared memory (map_shared_rank, PTX mapa), and how st.async writes registers into
// that memory and completes on the *receiver's* mbarrier. Eight blocks form a ring and pass
// messages to the right through filled/ready barriers; no block exits while a neighbour can
// still reach its shared memory. Plain stores + cluster.sync do the same for comparison.
// What changed: the data no longer comes from global memory; the blocks of a cluster make it
// and hand it on, and the barrier a transfer completes on belongs to another block.
// Hardware: compute capability 9.0 (clusters, distributed shared memory, st.async).
// Run: build/10_stas_cluster/stas_cluster [--bench] [--variant=NAME] [--size=BYTES_PER_BLOCK]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-stas
//        https://docs.nvidia.com/cuda/cuda-programming-guide/01-introduction/programming-model.html#thread-block-clusters
// API: cooperative_groups::cluster_group (block_rank, num_blocks, map_shared_rank, sync)
//        https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
//      cudaLaunchKernelEx, cudaOccupancyMaxPotentialClusterSize, cudaOccupancyMaxActiveClusters
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
//      cuda::ptx::st_async https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/st_async.html
//      cuda::ptx::mbarrier_arrive https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/mbarrier_arrive.html
//      cuda::ptx::mbarrier_try_wait_parity https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/mbarrier_try_wait.html
//      PTX st.async, mapa, mbarrier, barrier.cluster
//        https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-st-async
#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cuda/std/chrono>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/bandwidth.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/wait.cuh"

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kClusterBlocks = 8;  // the portable maximum: every cluster-capable GPU runs it
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVecsPerThread = 2;                 // 16-byte st.async (v4.b32) per thread per message
constexpr int kVecElems = 4;                      // uint32 per 16-byte vector
constexpr int kMessageElems = kThreads * kVecsPerThread * kVecElems;
constexpr std::size_t kMessageBytes = kMessageElems * sizeof(std::uint32_t);  // 8 KiB per block per iteration
constexpr int kOutElemsPerBlock = kThreads + kMessageElems;  // one digest per thread, then the last message
constexpr std::uint32_t kDigestStart = 0x811C9DC5u;
static_assert(kVecElems * sizeof(std::uint32_t) == 16, "st.async moves at most 16 bytes (v4.b32), 16-byte aligned");
static_assert(kMessageBytes < (1u << 20), "an mbarrier's transaction count holds less than 2^20 bytes per phase");

// ---- The ring and the host model of what every block receives -------------------------------

/// [ring]
// Block `rank` of a ring of `size` sends to its right neighbour and receives from its left.
__host__ __device__ constexpr unsigned ring_right(unsigned rank, unsigned size) {
  return rank + 1 == size ? 0 : rank + 1;
}
__host__ __device__ constexpr unsigned ring_left(unsigned rank, unsigned size) {
  return rank == 0 ? size - 1 : rank - 1;
}

// Which buffer an iteration uses and the parity of the phase its barriers complete. Every
// kStages iterations the stage wraps and each barrier has completed one more phase.
template <int kStages>
struct RingCursor {
  int stage = 0;
  std::uint32_t phase = 0;  // parity bit: 0, 1, 0, ...
  __host__ __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};
/// [ring]

// Word `elem` of the message that block `sender` (blockIdx.x) sends in `iteration`: a
// bijective mix of a counter, so a word from another sender, iteration or place differs.
__host__ __device__ inline std::uint32_t message_word(std::uint32_t sender, std::uint32_t iteration,
                                                      std::uint32_t elem, std::uint32_t num_blocks) {
  std::uint32_t x = (iteration * num_blocks + sender) * kMessageElems + elem;  // wraps after 16 GiB in all
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Each receiving thread folds every word it reads into a digest (FNV-1a on words): a single
// wrong word always changes the final value, because each step is a bijection of the state.
__host__ __device__ inline std::uint32_t digest_step(std::uint32_t digest, std::uint32_t word) {
  return (digest ^ word) * 0x01000193u;
}

__host__ __device__ inline std::uint32_t digest_step(std::uint32_t digest, uint4 v) {
  return digest_step(digest_step(digest_step(digest_step(digest, v.x), v.y), v.z), v.w);
}

// Element `i` (0..3) of vector `k` read by thread `t` sits at this index of a message.
__host__ __device__ constexpr int message_index(int t, int k, int i) { return (k * kThreads + t) * kVecElems + i; }

// This thread's vector `k` of the message that this block sends in `iteration`.
__device__ inline uint4 message_vector(std::uint32_t iteration, int k) {
  auto word = [&](int i) { return message_word(blockIdx.x, iteration, message_index(threadIdx.x, k, i), gridDim.x); };
  return make_uint4(word(0), word(1), word(2), word(3));
}

struct RingShape {
  unsigned num_clusters = 1;
  unsigned cluster_blocks = kClusterBlocks;
  std::uint32_t num_iterations = 1;
  unsigned num_blocks() const { return num_clusters * cluster_blocks; }
  std::size_t dsmem_bytes() const { return std::size_t{num_blocks()} * num_iterations * kMessageBytes; }
};

// What every block must write: per thread the digest of all it received, then the last message.
std::vector<std::uint32_t> reference(const RingShape& shape) {
  const unsigned n = shape.num_blocks(), size = shape.cluster_blocks;
  std::vector<std::uint32_t> out(std::size_t{n} * kOutElemsPerBlock);
  for (unsigned block = 0; block < n; ++block) {
    const unsigned sender = block - block % size + ring_left(block % size, size);
    std::uint32_t* block_out = out.data() + std::size_t{block} * kOutElemsPerBlock;
    for (int t = 0; t < kThreads; ++t) block_out[t] = kDigestStart;
    for (std::uint32_t it = 0; it < shape.num_iterations; ++it) {
      for (int t = 0; t < kThreads; ++t) {
        for (int k = 0; k < kVecsPerThread; ++k) {
          for (int i = 0; i < kVecElems; ++i) {
            const std::uint32_t word = message_word(sender, it, message_index(t, k, i), n);
            block_out[t] = digest_step(block_out[t], word);
            if (it + 1 == shape.num_iterations) block_out[kThreads + message_index(t, k, i)] = word;
          }
        }
      }
    }
  }
  return out;
}

// ---- Kernels ---------------------------------------------------------------------------------

/// [stas_ring]
// How a block tells its left neighbour that a message has been read: one remote arrival per
// block after a block barrier, or one per warp after a warp barrier.
enum class Release { per_block, per_warp };

template <int kStages, Release kRelease>
__device__ void stas_ring(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  __shared__ alignas(16) std::uint32_t smem_message[kStages][kMessageElems];  // written by the left neighbour
  __shared__ std::uint64_t filled_bar[kStages];  // phase k: the k-th message into this stage has landed
  __shared__ std::uint64_t ready_bar[kStages];   // phase k: the right neighbour has read our k-th message
  cg::cluster_group cluster = cg::this_cluster();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const unsigned rank = cluster.block_rank(), ring_size = cluster.num_blocks();

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&filled_bar[s], 1);       // one arrival per phase: our own arrive.expect_tx
      // one remote arrival per block (or per warp) of the right neighbour:
      ptx::mbarrier_init(&ready_bar[s], kRelease == Release::per_block ? 1 : kWarps);
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
  RingCursor<kStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    // Producer: the right neighbour's buffer for this stage is free once it has read the message we
    // sent kStages iterations ago (phase parity ^ 1; a fresh barrier counts that phase as complete).
    // Both barriers' phases are completed by other blocks: every wait acquires at cluster scope.
    course::bounded_wait_parity(&ready_bar[cursor.stage], cursor.phase ^ 1u, {"ready", cursor.stage, cursor.phase ^ 1u},
                                ptx::scope_cluster);
    for (int k = 0; k < kVecsPerThread; ++k) {
      const uint4 vector = message_vector(it, k);
      const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
      // TUTORIAL: 16 bytes from registers into the neighbour's shared memory; when they have
      // landed, the hardware performs complete-tx(16) on the neighbour's filled barrier.
      ptx::st_async(dsmem_right_message + cursor.stage * kMessageElems + message_index(threadIdx.x, k, 0), words,
                    dsmem_right_filled + cursor.stage);
    }
    // Consumer: one thread announces the bytes the left neighbour's st.async will deliver, and arrives.
    if (warp.meta_group_rank() == 0) {
      cg::invoke_one(warp, [&] {
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                             &filled_bar[cursor.stage], std::uint32_t{kMessageBytes});
      });
    }
    course::bounded_wait_parity(&filled_bar[cursor.stage], cursor.phase, {"filled", cursor.stage, cursor.phase},
                                ptx::scope_cluster);  // message landed
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] = reinterpret_cast<const uint4*>(smem_message[cursor.stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
    // Release: tell the left neighbour that this stage may be written again.
    auto arrive_left_ready = [&] {
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, dsmem_left_ready + cursor.stage);
    };
    if constexpr (kRelease == Release::per_block) {
      __syncthreads();  // every warp of the block has read its part of the message...
      if (warp.meta_group_rank() == 0) cg::invoke_one(warp, arrive_left_ready);  // ...one arrival speaks for all
    } else {
      warp.sync();                              // every lane of this warp has read its part...
      cg::invoke_one(warp, arrive_left_ready);  // ...one arrival speaks for the warp
    }
  }
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kOutElemsPerBlock;
  gmem_block[threadIdx.x] = digest;
  uint4* gmem_last_message = reinterpret_cast<uint4*>(gmem_block + kThreads);
  for (int k = 0; k < kVecsPerThread; ++k) gmem_last_message[k * kThreads + threadIdx.x] = received[k];
  // TUTORIAL: our last waits do not cover the right neighbour's arrivals for our last kStages
  // messages: they may still be on their way to ready_bar. Each block makes its remote
  // arrivals before it arrives at this cluster barrier (with release), and no block passes
  // the barrier before all have arrived: when we exit, nothing can still reach our memory.
  cluster.sync();
}
/// [stas_ring]

/// [kernels]
// The cluster size fixed at compile time: an ordinary <<<grid, block>>> launch makes clusters.
template <int kStages, Release kRelease>
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    stas_ring_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  stas_ring<kStages, kRelease>(gmem_out, num_iterations);
}

// No compile-time size: the launch chooses it (cudaLaunchKernelEx), 1 to 8, or 16 where allowed.
template <int kStages>
__global__ void __launch_bounds__(kThreads) stas_ring_any_cluster_kernel(std::uint32_t* gmem_out,
                                                                          std::uint32_t num_iterations) {
  stas_ring<kStages, Release::per_block>(gmem_out, num_iterations);
}
/// [kernels]

/// [dsmem_stores]
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    dsmem_stores_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  constexpr int kStages = 2;  // with one buffer each iteration would need a second cluster.sync
  __shared__ alignas(16) std::uint32_t smem_message[kStages][kMessageElems];
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
    // buffer (same stage as it + 1) is written next.
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

template <int kStages>
void launch_ex(const RingShape& shape, std::uint32_t* gmem_out) {
  auto* kernel = stas_ring_any_cluster_kernel<kStages>;
  // More than the portable 8 blocks per cluster needs the kernel's permission.
  if (shape.cluster_blocks > kClusterBlocks) {
    COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  cudaLaunchAttribute attribute = cluster_dimension(shape.cluster_blocks);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(shape.num_blocks());
  config.blockDim = dim3(kThreads);
  config.attrs = &attribute;
  config.numAttrs = 1;
  COURSE_CHECK(cudaLaunchKernelEx(&config, kernel, gmem_out, shape.num_iterations));
}
/// [launch_ex]

/// [queries]
struct ClusterLimits {
  int max_portable = 0;      // largest cluster of this kernel without special permission
  int max_nonportable = 0;   // with cudaFuncAttributeNonPortableClusterSizeAllowed
  int resident_clusters = 0; // clusters of kClusterBlocks that fit on the GPU at once
};

ClusterLimits query_cluster_limits() {
  auto* kernel = stas_ring_any_cluster_kernel<2>;
  ClusterLimits limits;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_portable, kernel, &config));
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_nonportable, kernel, &config));
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
     &launch_cluster_dims<stas_ring_kernel<2, Release::per_block>>},
    {"stas_ring_warp_release", "the same, each warp arrives on the sender's ready barrier (8 per message)",
     &launch_cluster_dims<stas_ring_kernel<2, Release::per_warp>>},
    {"stas_ring_1stage", "the guide's buffer count: one, so every message waits for the last to be read",
     &launch_cluster_dims<stas_ring_kernel<1, Release::per_block>>},
    {"stas_ring_launch_ex", "the 2-buffer ring, cluster size given at launch (cudaLaunchKernelEx)", &launch_ex<2>},
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
course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  variant.launch(problem.shape, problem.gmem_out.data());
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
  for (const Variant& variant : kVariants) {
    // The row's size is the bytes written into remote shared memory, and each crosses once.
    course::check_and_time(
        opts, report, variant.name, [&] { return verify(variant, problem); },
        [&] { variant.launch(shape, problem.gmem_out.data()); }, shape.dsmem_bytes(), shape.dsmem_bytes());
  }
}

void print_host_model(std::ostream& out) {
  out << "ring of " << kClusterBlocks << " blocks per cluster:";
  for (unsigned r = 0; r < kClusterBlocks; ++r) out << ' ' << r << "->" << ring_right(r, kClusterBlocks);
  out << "\niteration: stage / filled parity / ready parity (2 buffers):";
  RingCursor<2> cursor;
  for (int it = 0; it < 6; ++it, cursor.advance()) {
    out << "  " << it << ": " << cursor.stage << '/' << cursor.phase << '/' << (cursor.phase ^ 1u);
  }
  out << '\n';
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "stas_cluster";
  info.title = "10 stas_cluster: thread block clusters and st.async into distributed shared memory";
  info.explanation =
      "Clusters of 8 blocks form a ring: each block writes a message into its right neighbour's\n"
      "shared memory with st.async, which completes on the neighbour's 'filled' mbarrier; the\n"
      "neighbour reads it and arrives on the sender's 'ready' mbarrier. Launched with __cluster_dims__\n"
      "and with cudaLaunchKernelEx, compared with plain stores + cluster.sync. --size is the bytes\n"
      "each block sends; every received word is folded into a digest checked against a host model.";
  info.requirement = {9, 0, false, "thread block clusters and st.async"};
  info.verify_bytes = 256u << 10;
  info.bench_bytes = 2u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes % kMessageBytes != 0 || bytes / kMessageBytes > (1u << 30)) {
      return "--size is the bytes each block sends: a whole number of 8 KiB messages, at most 8 TiB";
    }
    return std::nullopt;
  };
  info.bench_reads_device_memory = false;  // messages go from shared memory to shared memory
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
