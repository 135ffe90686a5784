// Assignment 4 (GPU, compute capability 9.0): tiles exchanged between the two blocks of a cluster.
//
// The input is num_elems 32-bit words (any number from 1 up, both pointers 16-byte aligned), cut
// into tiles of kTileElems words; tiles 2q and 2q + 1 form pair q. Output word i must be
// mix(in[i], in[i ^ kTileElems]): the word and the one at the same place of the other tile of its
// pair, or mix(in[i], 0) where that place is past the end. Nothing is written past the output.
// The kernel runs in clusters of 2 blocks (the launch below); block rank r of cluster c takes tile
// 2q + r of pairs q = c, c + num_clusters, ... It reads only its own tile from global memory and
// gets the other from its partner, which pushes it into this block's shared memory with st.async
// (or a bulk copy shared::cta -> shared::cluster) completing on this block's mbarrier, whose
// expect-tx the receiver posts; a ring of kStages buffers with filled and ready barriers lets a
// block send its next tile while its partner still reads this one. Initialise the barriers,
// release the init at cluster scope and cluster.sync() before any remote access; every wait
// acquires at cluster scope through course::bounded_wait_parity (docs/bounded_wait.md); no block
// exits while its partner may still write into it or arrive on its barriers. Graded bit-exact
// from one word to the whole GPU, then on speed: 512 MiB read (as many written) at least 0.80x
// as fast as cudaMemcpy device-to-device of the same bytes, on the GPU the check runs on.
// Reread stas_cluster.cu: stas_pair, then stas_ring (this is its ring of two, fed from memory).
// Needs: compute capability 9.0 (clusters, st.async); on other GPUs the test is skipped.
// Check: scripts/exercise.py cluster_exchange
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "course/check.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"

namespace exercise {

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kClusterBlocks = 2;  // a block and its partner
constexpr int kThreads = 256;
constexpr int kVecsPerThread = 4;                            // 16-byte vectors per thread and tile
constexpr int kTileElems = kThreads * kVecsPerThread * 4;    // 4096 words, a power of two
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);  // 16 KiB
constexpr int kStages = 2;                                   // buffers for the partner's tiles
// Dynamic shared memory per block: kStages tiles from the partner, then kStages filled and
// kStages ready mbarriers (8 bytes each).
constexpr std::size_t kSmemBytes = kStages * kTileBytes + 2 * kStages * sizeof(std::uint64_t);
// 4 blocks of 256 threads per SM (registers capped to fit): 4 tiles, 64 KiB, of loads in flight.
constexpr int kBlocksPerSm = 4;

__host__ __device__ constexpr std::uint32_t mix(std::uint32_t mine, std::uint32_t partner) {
  return mine * 0x9E3779B1u + (partner << 11 | partner >> 21);  // wraps modulo 2^32 on host and device
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    cluster_exchange_kernel(const std::uint32_t* __restrict__ gmem_in, std::uint32_t* __restrict__ gmem_out,
                            std::size_t num_elems) {
  // TODO: write this kernel (the spec is above)
}

// Clusters of kClusterBlocks blocks, as many clusters as fit on the GPU at once (at most
// max_clusters when it is not 0, then each cluster takes more pairs), kSmemBytes of dynamic
// shared memory per block. The grid counts blocks; a cluster is blocks 2c and 2c + 1.
inline void launch_cluster_exchange(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems,
                                    unsigned max_clusters = 0) {
  if (num_elems == 0) return;  // nothing to exchange
  cudaLaunchAttribute cluster_dim = {};
  cluster_dim.id = cudaLaunchAttributeClusterDimension;
  cluster_dim.val.clusterDim.x = kClusterBlocks;
  cluster_dim.val.clusterDim.y = 1;
  cluster_dim.val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmemBytes;
  config.attrs = &cluster_dim;
  config.numAttrs = 1;
  static const int resident_clusters = [&config] {  // asked once: the timed launches skip it
    COURSE_CHECK(cudaFuncSetAttribute(cluster_exchange_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kSmemBytes)));
    int clusters = 0;
    COURSE_CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_exchange_kernel, &config));
    return std::max(clusters, 1);
  }();
  const unsigned num_clusters =
      max_clusters != 0 ? std::min(max_clusters, static_cast<unsigned>(resident_clusters)) : resident_clusters;
  config.gridDim = dim3(num_clusters * kClusterBlocks);
  COURSE_CHECK(cudaLaunchKernelEx(&config, cluster_exchange_kernel, gmem_in, gmem_out, num_elems));
}

}  // namespace exercise
