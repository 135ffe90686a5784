// 10_stas_cluster, third lesson: a histogram in distributed shared memory, remote atomics.
//
// What you learn: how the blocks of a cluster hold one histogram between them, each a slice of
// the bins in its own shared memory, and count every input word with atomicAdd on the *owning*
// block's shared memory through cluster.map_shared_rank (mapa + an atomic on the mapped address);
// why cluster.sync() must come before the first remote add (the owner has zeroed its bins and is
// running) and before any block exits (a block's shared memory must outlive every access to it);
// and the trade-off of the cluster size: more blocks per cluster means fewer bins, and so less
// shared memory, per block (more blocks fit on an SM), but a larger share of remote adds.
// What changed from stas_cluster.cu: no barriers of our own and no messages: many small
// read-modify-writes into the cluster's shared memory, from every thread, in no fixed order.
// 32768 bins (128 KiB of counters) are more than a block may hold without the opt-in (48 KiB)
// and more than half an SM: alone (cluster size 1) a block holds them all and one fits per SM.
// Hardware: compute capability 9.0 (clusters, distributed shared memory).
// Run: build/10_stas_cluster/dsmem_histogram [--bench] [--variant=NAME] [--size=INPUT_BYTES]
// Guide: programming-model.html#thread-block-clusters (blocks of a cluster read, write and perform
//        atomics on each other's shared memory) under
//        https://docs.nvidia.com/cuda/cuda-programming-guide/01-introduction/, and the histogram
//        of https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html (distributed shared
//        memory)
// API: cooperative_groups::cluster_group (map_shared_rank, sync, block_rank), cudaLaunchKernelEx,
//      cudaOccupancyMaxActiveClusters, cudaFuncSetAttribute:
//      https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
// PTX: mapa, atom in https://docs.nvidia.com/cuda/parallel-thread-execution/index.html
#include <cooperative_groups.h>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"  // COURSE_HOST_DEVICE

// The chapter's tests may include this lesson next to others: its names live in `histogram`.
namespace histogram {

namespace cg = cooperative_groups;

constexpr int kNumBins = 32768;
constexpr std::size_t kHistogramBytes = kNumBins * sizeof(std::uint32_t);  // 128 KiB of counters
constexpr int kThreads = 512;
constexpr int kLoadsPerThread = 4;  // 16-byte loads a thread has in flight before its adds
constexpr std::size_t kTileWords = std::size_t{kThreads} * kLoadsPerThread * 4;  // 32 KiB of input
constexpr std::size_t kMaxInputBytes = std::size_t{8} << 30;  // 2^31 words: counts fit 32 bits
static_assert((kNumBins & (kNumBins - 1)) == 0, "a word's bin is its low bits");
static_assert(kHistogramBytes > 48 * 1024,
              "alone, a block needs the opt-in above 48 KiB for every bin");

/// [bins]
// Word -> bin, and which block of a cluster of `cluster_blocks` owns that bin, at which place.
COURSE_HOST_DEVICE constexpr unsigned bin_of(std::uint32_t word) { return word & (kNumBins - 1); }
COURSE_HOST_DEVICE constexpr int bins_per_block(int cluster_blocks) {
  return kNumBins / cluster_blocks;
}
COURSE_HOST_DEVICE constexpr unsigned owner_rank(unsigned bin, int cluster_blocks) {
  return bin / bins_per_block(cluster_blocks);
}
COURSE_HOST_DEVICE constexpr unsigned local_bin(unsigned bin, int cluster_blocks) {
  return bin % bins_per_block(cluster_blocks);
}
constexpr std::size_t block_smem_bytes(int cluster_blocks) {
  return bins_per_block(cluster_blocks) * sizeof(std::uint32_t);
}
/// [bins]

// The host reference: how many words fall into each bin.
std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& words) {
  std::vector<std::uint32_t> counts(kNumBins, 0);
  for (std::uint32_t word : words) ++counts[bin_of(word)];
  return counts;
}

// ---- The kernel ------------------------------------------------------------------------------

// Block b of the grid reads tiles b, b + gridDim.x, ... of the input (then the words after the
// last whole tile, one per thread of the grid); its cluster counts them into one histogram.
template <int kClusterBlocks>
__global__ void __launch_bounds__(kThreads)
    histogram_kernel(const std::uint32_t* __restrict__ gmem_in, std::size_t num_words,
                     std::uint32_t* gmem_hist) {
  constexpr int kBlockBins = bins_per_block(kClusterBlocks);
  extern __shared__ std::uint32_t smem_bins[];  // [kBlockBins]: our slice of the cluster's bins
  cg::cluster_group cluster = cg::this_cluster();
  for (int b = threadIdx.x; b < kBlockBins; b += kThreads) smem_bins[b] = 0;
  // TUTORIAL: another block is about to add into these bins. It may do so only once they are
  // zero and once this block is running at all: a block's shared memory exists only while the
  // block does. cluster.sync() gives both (every block has arrived, so all have started and
  // zeroed). A cluster of one block is an ordinary block: its own barrier is enough.
  if constexpr (kClusterBlocks == 1) {
    __syncthreads();  // the bins are zero before anyone adds
  } else {
    cluster.sync();  // every block of the cluster has started and zeroed its bins
  }
  /// [remote_add]
  auto count = [&](std::uint32_t word) {
    const unsigned bin = bin_of(word);
    if constexpr (kClusterBlocks == 1) {
      atomicAdd(&smem_bins[bin], 1u);  // our own shared memory: atom.shared
    } else {
      // mapa: our smem_bins' address in the owner's shared memory (our own rank included); the
      // add is an atomic on that address, through the cluster's shared-memory window.
      std::uint32_t* dsmem_owner_bins =
          cluster.map_shared_rank(smem_bins, owner_rank(bin, kClusterBlocks));
      atomicAdd(dsmem_owner_bins + local_bin(bin, kClusterBlocks), 1u);
    }
  };
  /// [remote_add]
  const uint4* gmem_vecs = reinterpret_cast<const uint4*>(gmem_in);  // cudaMalloc'd: 256 B aligned
  const std::size_t num_tiles = num_words / kTileWords;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    uint4 v[kLoadsPerThread];  // every load in flight before the first add waits on one
    for (int j = 0; j < kLoadsPerThread; ++j) {
      v[j] = gmem_vecs[tile * (kTileWords / 4) + j * kThreads + threadIdx.x];
    }
    for (int j = 0; j < kLoadsPerThread; ++j) {
      count(v[j].x);
      count(v[j].y);
      count(v[j].z);
      count(v[j].w);
    }
  }
  const std::size_t grid_threads = std::size_t{gridDim.x} * kThreads;
  for (std::size_t i = num_tiles * kTileWords + std::size_t{blockIdx.x} * kThreads + threadIdx.x;
       i < num_words; i += grid_threads) {
    count(gmem_in[i]);
  }
  // TUTORIAL: before this block reads its bins, every add into them, from any block of the
  // cluster, must be done; and no block may exit while another may still add into its shared
  // memory. One cluster.sync() gives both: each block arrives (with release) after its last
  // remote add, and none passes before all have arrived. After it, a block touches its own only.
  unsigned rank = 0;
  if constexpr (kClusterBlocks == 1) {
    __syncthreads();  // every thread's adds are done before the bins are read
  } else {
    cluster.sync();  // every block's adds into our bins are done; nobody touches another's after
    rank = cluster.block_rank();
  }
  std::uint32_t* gmem_slice = gmem_hist + std::size_t{rank} * kBlockBins;  // our bins, globally
  for (int b = threadIdx.x; b < kBlockBins; b += kThreads) {
    const std::uint32_t counted = smem_bins[b];
    if (counted != 0) atomicAdd(&gmem_slice[b], counted);  // every other cluster adds here too
  }
}

// ---- Launchers and the variant table ---------------------------------------------------------

struct HistogramJob {
  const std::uint32_t* gmem_in;
  std::size_t num_words;
  std::uint32_t* gmem_hist;  // zeroed by the launch, then added into
  unsigned num_clusters;
};

/// [launch]
// Clusters of kClusterBlocks along x (1: an ordinary block), each block with its slice of the
// bins in dynamic shared memory: above 48 KiB only after
// cudaFuncAttributeMaxDynamicSharedMemorySize.
template <int kClusterBlocks>
cudaLaunchConfig_t histogram_config(unsigned num_clusters, cudaLaunchAttribute* cluster_dim) {
  COURSE_CHECK(cudaFuncSetAttribute(histogram_kernel<kClusterBlocks>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(block_smem_bytes(kClusterBlocks))));
  cluster_dim->id = cudaLaunchAttributeClusterDimension;
  cluster_dim->val.clusterDim.x = kClusterBlocks;  // gridDim.x is a multiple of it
  cluster_dim->val.clusterDim.y = 1;
  cluster_dim->val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(num_clusters * kClusterBlocks);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = block_smem_bytes(kClusterBlocks);
  config.attrs = cluster_dim;
  config.numAttrs = 1;
  return config;
}

template <int kClusterBlocks>
void launch_histogram(const HistogramJob& job) {
  cudaLaunchAttribute cluster_dim = {};
  const cudaLaunchConfig_t config =
      histogram_config<kClusterBlocks>(job.num_clusters, &cluster_dim);
  COURSE_CHECK(cudaMemsetAsync(job.gmem_hist, 0, kHistogramBytes));  // the blocks add into it
  COURSE_CHECK(cudaLaunchKernelEx(&config, histogram_kernel<kClusterBlocks>, job.gmem_in,
                                  job.num_words, job.gmem_hist));
}

// How many such clusters fit on the GPU at once: the grid of --bench.
template <int kClusterBlocks>
unsigned resident_clusters() {
  cudaLaunchAttribute cluster_dim = {};
  const cudaLaunchConfig_t config = histogram_config<kClusterBlocks>(1, &cluster_dim);
  int clusters = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveClusters(&clusters, histogram_kernel<kClusterBlocks>, &config));
  if (clusters < 1) throw std::runtime_error("no cluster of this histogram fits on this GPU");
  return static_cast<unsigned>(clusters);
}
/// [launch]

struct Variant {
  const char* name;
  const char* summary;
  int cluster_blocks;
  void (*launch)(const HistogramJob& job);
  unsigned (*resident_clusters)();
};
const Variant kVariants[] = {
    {"histogram_c1",
     "no cluster: every block holds all 32768 bins (128 KiB), shared-memory atomics only", 1,
     &launch_histogram<1>, &resident_clusters<1>},
    {"histogram_c2",
     "clusters of 2: 16384 bins (64 KiB) per block, half the adds go to the other block", 2,
     &launch_histogram<2>, &resident_clusters<2>},
};

// ---- run(): verify every variant, then time the correct ones --------------------------------

struct Problem {
  explicit Problem(std::size_t num_words)
      : words(num_words), gmem_in(num_words), gmem_hist(kNumBins) {
    course::fill_pattern(words, 10);  // a position-dependent word per place: counts differ per bin
    expected = reference(words);
    gmem_in.upload(words.data());
  }
  std::vector<std::uint32_t> words, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_hist;
  HistogramJob job(unsigned num_clusters) const {
    return {gmem_in.data(), words.size(), gmem_hist.data(), num_clusters};
  }
};

// Poison, launch (which zeroes the histogram first), synchronise, compare bit-exactly.
course::Comparison verify(const Variant& v, Problem& problem, unsigned num_clusters) {
  problem.gmem_hist.poison();
  v.launch(problem.job(num_clusters));
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_hist.check(problem.expected);
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const unsigned clusters = v.resident_clusters();
    log << v.name << ": " << clusters << " clusters of " << v.cluster_blocks << " fit at once ("
        << clusters * v.cluster_blocks << " blocks of " << block_smem_bytes(v.cluster_blocks) / 1024
        << " KiB)\n";
    // Bytes: the input read, the counts written.
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem, clusters); },
        [&] { v.launch(problem.job(clusters)); }, opts.size_bytes + kHistogramBytes);
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "dsmem_histogram";
  info.title =
      "10 dsmem_histogram: one histogram per cluster, split across its blocks' shared memory";
  info.explanation =
      "Each input word (32 bits) counts into bin word % 32768. A cluster holds one histogram,\n"
      "each block a slice of the bins in its shared memory; every thread adds with atomicAdd on\n"
      "the owning block's shared memory (cluster.map_shared_rank), with cluster.sync() before\n"
      "the first remote add and before exit; then each block adds its slice into the global\n"
      "histogram. Clusters of 1 and 2 blocks; the counts are compared bit for bit with the host's.";
  info.requirement = {9, 0, false, "thread block clusters and distributed shared memory"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % sizeof(std::uint32_t) != 0 || bytes > kMaxInputBytes) {
      return "--size is the input bytes: a whole number of 4-byte words, at most 8 GiB (any "
             "number of 32 KiB tiles and words)";
    }
    return std::nullopt;
  };
  info.host_model = [](std::ostream& out) {
    out << kNumBins << " bins = " << kHistogramBytes / 1024
        << " KiB of counters per cluster; a block may hold 48 KiB without the opt-in, 227 KiB"
        << " with it on 9.0\n";
    for (const Variant& v : kVariants) {
      const int c = v.cluster_blocks;
      out << "  cluster of " << c << ": " << bins_per_block(c) << " bins ("
          << block_smem_bytes(c) / 1024 << " KiB) per block; adds into another block's shared"
          << " memory: " << c - 1 << " in " << c << '\n';
    }
  };
  return info;
}

}  // namespace histogram

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, histogram::chapter_info(), histogram::kVariants,
                              histogram::run);
}
#endif
