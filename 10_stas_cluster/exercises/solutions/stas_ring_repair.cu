// Exercise 10.3 (GPU, compute capability 9.0): repair a ring that never finishes. Solution.
//
// The kernel below is the lesson's two-buffer stas_ring in clusters of four blocks: each block
// writes its message into its right neighbour's shared memory with st.async, waits on its filled
// barrier for the message of its left neighbour, and, once the whole block has read it, arrives on
// the left neighbour's ready barrier. The message, its words and the digest are the chapter's
// (stas_cluster_model.hpp). Two numbers were wrong. The receiver announced sizeof(smem_message),
// the bytes of both buffers, where one message's st.async deliver kMessageBytes: the first filled
// phase waited for 8 KiB that never come ('filled', stage 0, phase 0). And ready expected one
// arrival per thread of the right neighbour, which arrives once for its block: the first wait on
// a phase of ready that had to be completed by arrivals, in iteration kRingStages, never returned
// ('ready', stage 0, phase 0). Making every thread arrive would repair it as well, at the price of
// 256 remote arrivals per message, each with a cluster-scope release.
// Needs: compute capability 9.0 (clusters, st.async); on other GPUs the test is skipped.
// Check: scripts/exercise.py stas_ring_repair
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>

#include "course/check.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "stas_cluster_model.hpp"  // kThreads, kVecsPerThread, kMessageElems, kMessageBytes, message_word, ...

namespace exercise {

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr unsigned kRingBlocks = 4;  // blocks per cluster, and so per ring
constexpr int kRingStages = 2;       // buffers per block

__device__ inline uint4 message_vector(std::uint32_t iteration, int k) {
  auto word = [&](int i) { return message_word(blockIdx.x, iteration, message_index(threadIdx.x, k, i), gridDim.x); };
  return make_uint4(word(0), word(1), word(2), word(3));
}

__global__ void __cluster_dims__(kRingBlocks, 1, 1) __launch_bounds__(kThreads)
    ring_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  __shared__ alignas(16) std::uint32_t smem_message[kRingStages][kMessageElems];  // written by the left neighbour
  __shared__ std::uint64_t filled_bar[kRingStages];  // phase k: the k-th message into this stage has landed
  __shared__ std::uint64_t ready_bar[kRingStages];   // phase k: the right neighbour has read our k-th message
  cg::cluster_group cluster = cg::this_cluster();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const unsigned rank = cluster.block_rank(), ring_size = cluster.num_blocks();
  const bool is_leader_warp = warp.meta_group_rank() == 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      ptx::mbarrier_init(&filled_bar[s], 1);       // one arrival per phase: our own arrive.expect_tx
      ptx::mbarrier_init(&ready_bar[s], 1);  // one arrival per phase: the right neighbour's, for its block
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the inits are visible cluster-wide...
  }
  cluster.sync();  // ...before any block writes into or arrives on another

  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(&smem_message[0][0], ring_right(rank, ring_size));
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar[0], ring_right(rank, ring_size));
  std::uint64_t* dsmem_left_ready = cluster.map_shared_rank(&ready_bar[0], ring_left(rank, ring_size));

  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  course::StageCursor<kRingStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    // The right neighbour has read what we sent into this stage kRingStages iterations ago.
    course::bounded_wait_parity(&ready_bar[cursor.stage], cursor.phase ^ 1u, {"ready", cursor.stage, cursor.phase ^ 1u},
                                ptx::scope_cluster);
    for (int k = 0; k < kVecsPerThread; ++k) {
      const uint4 vector = message_vector(it, k);
      const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
      ptx::st_async(dsmem_right_message + cursor.stage * kMessageElems + message_index(threadIdx.x, k, 0), words,
                    dsmem_right_filled + cursor.stage);  // complete-tx(16) on the neighbour's filled barrier
    }
    if (is_leader_warp) {
      cg::invoke_one(warp, [&] {  // the bytes the left neighbour's st.async will deliver, and our arrival
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                             &filled_bar[cursor.stage], std::uint32_t{kMessageBytes});
      });
    }
    course::bounded_wait_parity(&filled_bar[cursor.stage], cursor.phase, {"filled", cursor.stage, cursor.phase},
                                ptx::scope_cluster);  // the left neighbour's message has landed
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] = reinterpret_cast<const uint4*>(smem_message[cursor.stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
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
  cluster.sync();  // no block exits while a neighbour's arrival may still be on its way to it
}

// `num_clusters` rings of kRingBlocks blocks, each block sending `num_iterations` messages.
inline void launch_ring(std::uint32_t* gmem_out, unsigned num_clusters, std::uint32_t num_iterations) {
  ring_kernel<<<num_clusters * kRingBlocks, kThreads>>>(gmem_out, num_iterations);  // the grid counts blocks
  COURSE_CHECK_LAUNCH();
}

}  // namespace exercise
