// 10_stas_cluster: thread block clusters, and st.async into a neighbour's shared memory.
//
// What you learn: launching clusters (__cluster_dims__, or cudaLaunchKernelEx with a cluster
// dimension); mapping another block's shared memory (map_shared_rank, PTX mapa); st.async, which
// writes registers into it and completes on the *receiver's* mbarrier; why those waits acquire at
// cluster scope; when a block may exit. First the minimal kernel (stas_pair: two blocks, one
// st.async per thread each way), then the ring: eight blocks pass messages through filled/ready
// barriers, with two buffers or the guide's one. Model: stas_cluster_model.hpp; lab: other sizes.
// What changed from 09: no data comes from global memory; the blocks of a cluster make it and
// hand it on, and the barrier a transfer completes on belongs to another block.
// Hardware: compute capability 9.0 (clusters, distributed shared memory, st.async).
// Run: build/10_stas_cluster/stas_cluster [--bench] [--variant=NAME] [--size=BYTES_PER_BLOCK]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/ 04-special-topics/async-copies.html
//        #using-stas, 01-introduction/programming-model.html#thread-block-clusters
// API and PTX: cuda::ptx::st_async, mbarrier_*, cg::cluster_group; st.async, mapa, mbarrier,
//        barrier.cluster in https://docs.nvidia.com/cuda/parallel-thread-execution/index.html
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/bandwidth.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"         // course::WaitSite and the report of a wait that gave up
#include "stas_cluster_model.hpp"  // the message, reference(), the ring tables
#include "cluster_launch.cuh"      // the launchers (both cluster styles); the cluster queries

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kStages = 2;  // buffers per block: a sender may run one message ahead of its reader
static_assert(kVecElems * sizeof(std::uint32_t) == 16, "st.async moves at most 16 bytes (v4)");
static_assert(kMessageBytes <= kMaxTxBytes, "an mbarrier phase counts less than 2^20 bytes");

/// [cluster_wait]
// TUTORIAL: the phases waited on here are completed by *other* blocks (releases at cluster
// scope), so the wait acquires at cluster scope, as in the minimal kernel. The loop is the
// course's bounded wait (docs/bounded_wait.md): past the limit, it names barrier, stage, phase.
__device__ inline void wait_parity_cluster(std::uint64_t* bar, std::uint32_t parity,
                                           const course::WaitSite& site) {
  if (ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, bar, parity)) return;
  const unsigned long long start_ns = course::wait_clock_ns();
  while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, bar, parity)) {
    course::give_up_if_stuck(site, course::wait_clock_ns() - start_ns);  // reports, then traps
  }
}
/// [cluster_wait]

// This thread's vector `k` of the message that this block sends in `iteration`.
__device__ inline uint4 message_vector(std::uint32_t iteration, int k) {
  auto word = [&](int i) {
    return message_word(blockIdx.x, iteration, message_index(threadIdx.x, k, i), gridDim.x);
  };
  return make_uint4(word(0), word(1), word(2), word(3));
}

/// [minimal_kernel]
// The minimal kernel: a cluster of two blocks. Every thread writes one 16-byte vector into the
// other block's shared memory with st.async, which completes on the *other* block's mbarrier;
// each block waits on its own barrier for the 4 KiB it receives, then uses them.
constexpr std::uint32_t kPairBytes = kPairElemsPerBlock * sizeof(std::uint32_t);  // per block

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads)
    stas_pair_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(16) std::uint32_t smem_inbox[kPairElemsPerBlock];  // the other block writes
  __shared__ std::uint64_t inbox_bar;  // phase 0 completes when all kPairBytes have landed
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned other = cluster.block_rank() ^ 1u;  // rank 0 writes into 1, rank 1 into 0

  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&inbox_bar, 1);  // one arrival per phase: our own arrive.expect_tx below
    // Release the init at cluster scope: the other block's st.async will complete on this barrier.
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();  // both barriers initialised, both blocks running, before anyone writes remotely

  // Announce the bytes the other block sends, and make the phase's one arrival.
  if (threadIdx.x == 0) {
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                         &inbox_bar, std::uint32_t{kPairBytes});
  }
  std::uint32_t* dsmem_inbox = cluster.map_shared_rank(smem_inbox, other);  // the other's inbox
  std::uint64_t* dsmem_bar = cluster.map_shared_rank(&inbox_bar, other);     // and its barrier
  const uint4 vector = message_vector(0, 0);
  const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
  // 16 bytes from registers into the other block; when they land: complete-tx(16) on its barrier.
  ptx::st_async(dsmem_inbox + message_index(threadIdx.x, 0, 0), words, dsmem_bar);

  // Phase 0 is completed by the other block's bytes: acquire at cluster scope to see them.
  while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, &inbox_bar, 0)) {
  }
  const int from = kThreads - 1 - threadIdx.x;  // another sender's vector: the phase covers all
  const uint4 received = reinterpret_cast<const uint4*>(smem_inbox)[from];
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kPairElemsPerBlock;
  reinterpret_cast<uint4*>(gmem_block)[from] = received;
  cluster.sync();  // no block exits while the other may still touch its shared memory
}
/// [minimal_kernel]

/// [ring_steps]
// One block's place in the ring: its own buffers and barriers, the neighbours' it writes into
// or arrives on (join_ring() maps them), and one member function per step of the protocol.
template <int kRingStages>
struct RingBlock {
  using Cursor = course::StageCursor<kRingStages>;
  std::uint32_t (*smem_message)[kMessageElems];  // [stage]: written by the left neighbour
  std::uint64_t* filled_bar;  // [stage] phase k: the k-th message into this stage has landed
  std::uint64_t* ready_bar;   // [stage] phase k: the right neighbour has read our k-th message
  std::uint32_t* dsmem_right_message;  // the right neighbour's smem_message,
  std::uint64_t* dsmem_right_filled;   // the right neighbour's filled_bar,
  std::uint64_t* dsmem_left_ready;     // the left neighbour's ready_bar
  cg::thread_block_tile<32> warp;
  bool is_leader_warp;  // warp 0: one elected lane of it arrives for the whole block

  // Producer: the right neighbour's buffer for this stage is free once it has read the message
  // we sent kRingStages iterations ago (parity phase ^ 1; a fresh barrier counts it complete).
  __device__ void wait_until_right_is_free(const Cursor& cursor) const {
    wait_parity_cluster(&ready_bar[cursor.stage], cursor.phase ^ 1u,
                        {"ready", cursor.stage, cursor.phase ^ 1u});
  }
  // Every thread writes its part of message `it` into that buffer, 16 bytes per st.async;
  // when they land: complete-tx(16) on the right neighbour's filled barrier.
  __device__ void send_right(const Cursor& cursor, std::uint32_t it) const {
    for (int k = 0; k < kVecsPerThread; ++k) {
      const uint4 vector = message_vector(it, k);
      const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
      ptx::st_async(
          dsmem_right_message + cursor.stage * kMessageElems + message_index(threadIdx.x, k, 0),
          words, dsmem_right_filled + cursor.stage);
    }
  }
  // Consumer: one thread announces the bytes the left neighbour sends here, and arrives.
  __device__ void expect_from_left(const Cursor& cursor) const {
    if (is_leader_warp) cg::invoke_one(warp, [&] {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                           &filled_bar[cursor.stage], std::uint32_t{kMessageBytes});
    });
  }
  // The phase completes once that arrival is made and all the announced bytes have landed.
  __device__ void wait_until_landed(const Cursor& cursor) const {
    wait_parity_cluster(&filled_bar[cursor.stage], cursor.phase,
                        {"filled", cursor.stage, cursor.phase});
  }
  // Use the message: each thread reads its vectors and folds them into its digest.
  __device__ void read_message(const Cursor& cursor, uint4 (&received)[kVecsPerThread],
                               std::uint32_t& digest) const {
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] =
          reinterpret_cast<const uint4*>(smem_message[cursor.stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
  }
  // Called after a block barrier: every warp has read its part of the message, so one remote
  // arrival, with release at cluster scope, tells the left neighbour for all of them.
  __device__ void release_to_left(const Cursor& cursor) const {
    if (is_leader_warp) cg::invoke_one(warp, [&] {
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster,
                           dsmem_left_ready + cursor.stage);
    });
  }
};
/// [ring_steps]

/// [join_ring]
template <int kRingStages>
__device__ RingBlock<kRingStages> join_ring() {
  __shared__ alignas(16) std::uint32_t smem_message[kRingStages][kMessageElems];
  __shared__ std::uint64_t filled_bar[kRingStages];
  __shared__ std::uint64_t ready_bar[kRingStages];
  cg::cluster_group cluster = cg::this_cluster();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const unsigned rank = cluster.block_rank(), ring_size = cluster.num_blocks();
  const bool is_leader_warp = warp.meta_group_rank() == 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      ptx::mbarrier_init(&filled_bar[s], 1);  // one arrival per phase: our own arrive.expect_tx
      ptx::mbarrier_init(&ready_bar[s], 1);   // one per phase: the right neighbour's, for its block
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible cluster-wide...
  }
  cluster.sync();  // ...before any block writes into or arrives on another; all have started
  // map_shared_rank (mapa): our variable's address in the shared memory of block r.
  return {smem_message, filled_bar, ready_bar,
          cluster.map_shared_rank(&smem_message[0][0], ring_right(rank, ring_size)),
          cluster.map_shared_rank(&filled_bar[0], ring_right(rank, ring_size)),
          cluster.map_shared_rank(&ready_bar[0], ring_left(rank, ring_size)), warp, is_leader_warp};
}
/// [join_ring]

// Each thread's digest, then its part of the last message received.
__device__ void write_result(std::uint32_t* gmem_out, std::uint32_t digest,
                             const uint4 (&received)[kVecsPerThread]) {
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kOutElemsPerBlock;
  gmem_block[threadIdx.x] = digest;
  uint4* gmem_last_message = reinterpret_cast<uint4*>(gmem_block + kThreads);
  for (int k = 0; k < kVecsPerThread; ++k)
    gmem_last_message[k * kThreads + threadIdx.x] = received[k];
}

/// [stas_ring]
template <int kRingStages>
__device__ void stas_ring(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  const RingBlock<kRingStages> ring = join_ring<kRingStages>();  // barriers set, neighbours mapped
  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  course::StageCursor<kRingStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    ring.wait_until_right_is_free(cursor);        // 1. ready: our last message there was read
    ring.send_right(cursor, it);                  // 2. st.async into the right neighbour
    ring.expect_from_left(cursor);                // 3. announce the bytes coming from the left
    ring.wait_until_landed(cursor);               // 4. filled: they have all landed
    ring.read_message(cursor, received, digest);  // 5. use them
    __syncthreads();                              // 6. every warp of the block has read them...
    ring.release_to_left(cursor);                 // 7. ...so the left neighbour may write again
  }
  write_result(gmem_out, digest, received);
  // TUTORIAL: no wait of ours covers the right neighbour's arrivals on ready_bar for our last
  // kRingStages messages; it makes them before it arrives here, so after this, none can come.
  cg::this_cluster().sync();
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
__global__ void __launch_bounds__(kThreads)
    stas_ring_any_cluster_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  stas_ring<kStages>(gmem_out, num_iterations);
}
/// [kernels]

// ---- Launchers (cluster_launch.cuh has the others), cluster queries, the variant table ------
// The minimal kernel on the ring's grid, in clusters of two (the grid counts blocks).
void launch_pair(const RingShape& shape, std::uint32_t* gmem_out) {
  if (shape.num_blocks() % 2 != 0) throw std::invalid_argument("clusters of 2 need an even grid");
  stas_pair_kernel<<<shape.num_blocks(), kThreads>>>(gmem_out);
  COURSE_CHECK_LAUNCH();
}

// The queries take the kernel: its registers and shared memory decide what fits.
ClusterLimits query_cluster_limits() { return query_cluster_limits(stas_ring_any_cluster_kernel); }

using RingLaunch = void (*)(const RingShape& shape, std::uint32_t* gmem_out);
struct Variant { const char* name; const char* summary; RingLaunch launch; };
const Variant kVariants[] = {
    {"stas_pair", "the minimal kernel: clusters of 2, one st.async per thread into the other block "
                  "(verified, not timed)", &launch_pair},
    {"stas_ring", "st.async + filled/ready mbarriers, 2 buffers per block, __cluster_dims__(8,1,1)",
     &launch_cluster_dims<stas_ring_kernel<kStages>>},
    {"stas_ring_1stage", "the guide's one buffer: every message waits for the last to be read",
     &launch_cluster_dims<stas_ring_kernel<1>>},
};

// ---- run(): verify every variant, then time the correct ones: the problem, its check -------
struct Problem {
  Problem(const RingShape& shape, std::vector<std::uint32_t> expected, int elems_per_block)
      : shape(shape), expected(std::move(expected)), elems_per_block(elems_per_block),
        gmem_out(this->expected.size()) {}
  explicit Problem(const RingShape& shape) : Problem(shape, reference(shape), kOutElemsPerBlock) {}
  RingShape shape;
  std::vector<std::uint32_t> expected;
  int elems_per_block;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// The minimal kernel writes what it received; the rings write digests and the last message.
Problem problem_for(RingLaunch launch, const RingShape& shape) {
  if (launch != &launch_pair) return Problem(shape);
  return Problem(shape, pair_reference(shape.num_blocks()), kPairElemsPerBlock);
}

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(RingLaunch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.shape, problem.gmem_out.data());
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, problem.elems_per_block);
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  const ClusterLimits limits = query_cluster_limits();
  const RingShape shape{static_cast<unsigned>(limits.resident_clusters), kClusterBlocks,
                        static_cast<std::uint32_t>(opts.size_bytes / kMessageBytes)};
  log << "clusters: portable maximum " << limits.max_portable << " blocks, "
      << limits.max_nonportable << " with non-portable sizes allowed; " << shape.num_clusters
      << " clusters of " << kClusterBlocks << " fit at once\ngrid: " << shape.num_blocks()
      << " blocks, each sending " << shape.num_iterations << " messages of " << kMessageBytes / 1024
      << " KiB; size = bytes written into remote shared memory\n";
  course::Options verify_only = opts;  // one message per block would time the launch, not a ring
  verify_only.bench = false;
  Problem ring(shape);
  Problem pair = problem_for(&launch_pair, shape);
  for (const Variant& v : kVariants) {
    const bool is_pair = v.launch == &launch_pair;
    Problem& problem = is_pair ? pair : ring;
    // The row's size is the bytes written into remote shared memory, and each crosses once.
    course::check_and_time(
        is_pair ? verify_only : opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(shape, problem.gmem_out.data()); }, shape.dsmem_bytes(),
        shape.dsmem_bytes());
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "stas_cluster";
  info.title = "10 stas_cluster: thread block clusters and st.async into distributed shared memory";
  info.explanation =
      "Clusters of 8 blocks form a ring: each block writes a message into its right neighbour's\n"
      "shared memory with st.async, completing on that block's 'filled' mbarrier; the neighbour\n"
      "reads it and arrives on the sender's 'ready' mbarrier. The minimal kernel (two blocks, one\n"
      "st.async each way) first; then two buffers and the guide's one. --size: bytes per block.";
  info.requirement = {9, 0, false, "thread block clusters and st.async"};
  info.verify_bytes = 256u << 10;
  info.bench_bytes = 2u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kMessageBytes != 0 || bytes / kMessageBytes > (1u << 30))
      return "--size is the bytes each block sends: a whole number of 8 KiB messages, at most "
             "8 TiB";
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
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
