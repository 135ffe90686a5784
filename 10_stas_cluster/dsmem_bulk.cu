// 10_stas_cluster, second lesson: TMA into another block's shared memory.
//
// What you learn: how a block pushes a message from its own shared memory into its neighbour's
// with one bulk copy, cp.async.bulk.shared::cluster.shared::cta (cuda::ptx::cp_async_bulk): the
// destination and the barrier it completes on are the *neighbour's* (mapped with mapa), the
// receiver announces the bytes on its own barrier (expect-tx), and the sender fences its ordinary
// stores into the outbox (fence.proxy.async.shared::cta) before the TMA unit reads it. Sixteen
// copies of 512 bytes complete the same phase as one of 8 KiB: the barrier counts bytes.
// What changed from stas_cluster.cu: the same ring, messages, barriers and parities
// (stas_cluster_model.hpp), but the sender stages its message in an outbox in its own shared
// memory and one thread (or one per warp) hands it to the TMA unit; st.async is the baseline.
// Hardware: compute capability 9.0 (clusters, cp.async.bulk into distributed shared memory).
// Run: build/10_stas_cluster/dsmem_bulk [--bench] [--variant=NAME] [--size=BYTES_PER_BLOCK]
// Guide: async-copies.html#using-tma-to-transfer-one-dimensional-arrays (its table of directions)
//        under https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/
// API: cuda::ptx::cp_async_bulk, cuda::ptx::fence_proxy_async:
//      https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk.html
// PTX: cp.async.bulk, fence.proxy.async in
//      https://docs.nvidia.com/cuda/parallel-thread-execution/index.html
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"         // bounded_wait_parity at cluster scope (as in stas_cluster.cu)
#include "stas_cluster_model.hpp"  // the message (kThreads, kMessageBytes, ...), reference(), ring

// The chapter's tests may include this lesson next to others: its names live in `bulk`.
namespace bulk {

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kStages = 2;  // buffers per direction: a sender runs one message ahead of its reader
constexpr int kWarpPartElems = 32 * kVecElems;  // one warp's 32 vectors of one k: contiguous, 512 B
constexpr std::uint32_t kWarpPartBytes = kWarpPartElems * sizeof(std::uint32_t);
static_assert(kMessageBytes % 16 == 0 && kWarpPartBytes % 16 == 0,
              "a bulk copy moves a multiple of 16 bytes");
static_assert(kMessageBytes <= kMaxTxBytes,
              "an mbarrier's transaction count holds less than 2^20 bytes per phase");
static_assert(2 * kStages * kMessageBytes <= 48 * 1024,
              "inbox and outbox fit the 48 KiB of static shared memory");

// How a message gets into the neighbour's shared memory.
enum class Push { stas, bulk_block, bulk_warp };

/// [push_plan]
// The writes that deliver one message: how many complete-tx each, and who issues them.
struct PushPlan {
  int writes;               // per message
  std::uint32_t bytes;      // per write; writes * bytes = kMessageBytes, the receiver's expect-tx
  const char* issued_by;
};
constexpr PushPlan push_plan(Push push) {
  return push == Push::stas
             ? PushPlan{kThreads * kVecsPerThread, 16, "every thread, from registers"}
         : push == Push::bulk_block
             ? PushPlan{1, static_cast<std::uint32_t>(kMessageBytes), "one thread of the block"}
             : PushPlan{kWarps * kVecsPerThread, kWarpPartBytes, "one lane of each warp"};
}
// Where warp `warp`'s part `k` starts: its lanes' vectors k * kThreads + 32 * warp + lane.
COURSE_HOST_DEVICE constexpr int warp_part_elem(int warp, int k) {
  return message_index(32 * warp, k, 0);
}
/// [push_plan]

// This thread's vector `k` of the message this block sends in `iteration` (as in stas_cluster.cu).
__device__ inline uint4 message_vector(std::uint32_t iteration, int k) {
  auto word = [&](int i) {
    return message_word(blockIdx.x, iteration, message_index(threadIdx.x, k, i), gridDim.x);
  };
  return make_uint4(word(0), word(1), word(2), word(3));
}

// ---- The ring: stas_cluster.cu's, with three ways to push a message ------------------------

template <Push kPush>
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    push_ring_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations) {
  __shared__ alignas(128) std::uint32_t smem_inbox[kStages][kMessageElems];   // the left one writes
  __shared__ alignas(128) std::uint32_t smem_outbox[kStages][kMessageElems];  // our bulk copy reads
  __shared__ std::uint64_t filled_bar[kStages];  // phase k: the k-th message into this stage landed
  __shared__ std::uint64_t ready_bar[kStages];   // phase k: the right one has read our k-th message
  cg::cluster_group cluster = cg::this_cluster();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const unsigned rank = cluster.block_rank(), ring_size = cluster.num_blocks();
  const bool is_leader_warp = warp.meta_group_rank() == 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&filled_bar[s], 1);  // one arrival per phase: our own arrive.expect_tx
      ptx::mbarrier_init(&ready_bar[s], 1);   // one arrival per phase: the right neighbour's block
    }
    // The inits are visible cluster-wide and to the async proxy, whose complete-tx updates them...
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();  // ...before any block copies into or arrives on another; all blocks started

  // mapa: the same variables in the neighbours' shared memory.
  const unsigned right = ring_right(rank, ring_size), left = ring_left(rank, ring_size);
  std::uint32_t* dsmem_right_inbox = cluster.map_shared_rank(&smem_inbox[0][0], right);
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar[0], right);
  std::uint64_t* dsmem_left_ready = cluster.map_shared_rank(&ready_bar[0], left);

  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  course::StageCursor<kStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    // The right neighbour has read what we pushed into this stage kStages iterations ago: its inbox
    // stage is free, and that copy has finished reading our outbox stage.
    course::bounded_wait_parity(&ready_bar[cursor.stage], cursor.phase ^ 1u,
                                {"ready", cursor.stage, cursor.phase ^ 1u}, ptx::scope_cluster);
    std::uint32_t* dsmem_inbox = dsmem_right_inbox + cursor.stage * kMessageElems;
    std::uint64_t* dsmem_filled = dsmem_right_filled + cursor.stage;
    if constexpr (kPush == Push::stas) {
      for (int k = 0; k < kVecsPerThread; ++k) {  // 16 B from registers: complete-tx(16) there
        const uint4 vector = message_vector(it, k);
        const std::uint32_t words[kVecElems] = {vector.x, vector.y, vector.z, vector.w};
        ptx::st_async(dsmem_inbox + message_index(threadIdx.x, k, 0), words, dsmem_filled);
      }
    } else {
      /// [bulk_push]
      std::uint32_t* smem_message = smem_outbox[cursor.stage];
      for (int k = 0; k < kVecsPerThread; ++k) {
        reinterpret_cast<uint4*>(smem_message)[k * kThreads + threadIdx.x] = message_vector(it, k);
      }
      // TUTORIAL: the outbox was written by ordinary stores (the generic proxy); the bulk copy
      // reads it through the async proxy, and the two are ordered only by a proxy fence. Each
      // writing thread fences its own stores; the barrier after it orders every thread's fenced
      // stores before the one thread that issues the copy.
      ptx::fence_proxy_async(ptx::space_shared);  // my st.shared become visible to the async proxy
      if constexpr (kPush == Push::bulk_block) {
        __syncthreads();  // every thread's part is staged and fenced...
        if (is_leader_warp) {
          // ...so one copy moves all 8 KiB: complete-tx(8192) on the neighbour's filled barrier.
          cg::invoke_one(warp, [&] {
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_shared, dsmem_inbox, smem_message,
                               std::uint32_t{kMessageBytes}, dsmem_filled);
          });
        }
      } else {
        warp.sync();  // this warp's lanes have staged and fenced (no wait for other warps)...
        cg::invoke_one(warp, [&] {  // ...so one lane copies them: complete-tx(512) per copy
          for (int k = 0; k < kVecsPerThread; ++k) {
            const int first = warp_part_elem(warp.meta_group_rank(), k);
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_shared, dsmem_inbox + first,
                               smem_message + first, std::uint32_t{kWarpPartBytes}, dsmem_filled);
          }
        });
      }
      /// [bulk_push]
    }
    // Consumer, as in stas_cluster.cu: announce the bytes the left neighbour delivers, and arrive.
    if (is_leader_warp) {
      cg::invoke_one(warp, [&] {
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                             &filled_bar[cursor.stage],
                                             std::uint32_t{kMessageBytes});
      });
    }
    // Landed: the copy's complete-tx released at cluster scope; this acquire pairs with it.
    course::bounded_wait_parity(&filled_bar[cursor.stage], cursor.phase,
                                {"filled", cursor.stage, cursor.phase}, ptx::scope_cluster);
    for (int k = 0; k < kVecsPerThread; ++k) {
      received[k] =
          reinterpret_cast<const uint4*>(smem_inbox[cursor.stage])[k * kThreads + threadIdx.x];
      digest = digest_step(digest, received[k]);
    }
    // Release. Our reads were ordinary loads and the left neighbour's next copy into this stage
    // writes through the async proxy; the barriers order them, as in every TMA ring.
    __syncthreads();  // every warp of the block has read its part of the message...
    if (is_leader_warp) {
      // ...so one remote arrival, with release at cluster scope, speaks for all.
      cg::invoke_one(warp, [&] {
        ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster,
                             dsmem_left_ready + cursor.stage);
      });
    }
  }
  std::uint32_t* gmem_block = gmem_out + std::size_t{blockIdx.x} * kOutElemsPerBlock;
  gmem_block[threadIdx.x] = digest;
  uint4* gmem_last_message = reinterpret_cast<uint4*>(gmem_block + kThreads);
  for (int k = 0; k < kVecsPerThread; ++k) {
    gmem_last_message[k * kThreads + threadIdx.x] = received[k];
  }
  // No block exits while the right neighbour's last arrivals may still be on their way to our
  // ready barrier (stas_cluster.cu). Our own copies need nothing more: each completed on the
  // neighbour's filled barrier, which the neighbour waited on before this barrier.
  cluster.sync();
}

// ---- Launcher, grid and the variant table ----------------------------------------------------

template <auto kKernel>
void launch_ring(const RingShape& shape, std::uint32_t* gmem_out) {
  if (shape.cluster_blocks != kClusterBlocks) {
    throw std::invalid_argument("this kernel's cluster size is fixed at 8");
  }
  // The grid counts blocks; __cluster_dims__ groups them.
  kKernel<<<shape.num_blocks(), kThreads>>>(gmem_out, shape.num_iterations);
  COURSE_CHECK_LAUNCH();
}

/// [grid]
// Clusters of 8 that fit at once with the bulk rings' 32 KiB of shared memory per block (inbox
// and outbox): every variant runs this grid, so all send the same bytes, every block resident.
unsigned resident_clusters() {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  int clusters = 0;  // the kernel's __cluster_dims__ give the cluster size
  COURSE_CHECK(
      cudaOccupancyMaxActiveClusters(&clusters, push_ring_kernel<Push::bulk_block>, &config));
  if (clusters < 1) {
    throw std::runtime_error("no cluster of 8 blocks with 32 KiB of shared memory each fits");
  }
  return static_cast<unsigned>(clusters);
}
/// [grid]

using RingLaunch = void (*)(const RingShape& shape, std::uint32_t* gmem_out);
struct Variant {
  const char* name;
  const char* summary;
  Push push;
  RingLaunch launch;
};
const Variant kVariants[] = {
    {"bulk_ring",
     "outbox in own smem, one 8 KiB cp.async.bulk shared::cta -> shared::cluster per message",
     Push::bulk_block, &launch_ring<push_ring_kernel<Push::bulk_block>>},
    {"bulk_ring_per_warp",
     "each warp pushes its own part when staged: 16 copies of 512 bytes, no block barrier",
     Push::bulk_warp, &launch_ring<push_ring_kernel<Push::bulk_warp>>},
    {"stas_ring", "the baseline: 16-byte st.async per thread from registers, as in stas_cluster",
     Push::stas, &launch_ring<push_ring_kernel<Push::stas>>},
};

// ---- run(): verify every variant, then time the correct ones --------------------------------

struct Problem {
  explicit Problem(const RingShape& shape)
      : shape(shape), expected(reference(shape)), gmem_out(expected.size()) {}
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
  const RingShape shape{resident_clusters(), kClusterBlocks,
                        static_cast<std::uint32_t>(opts.size_bytes / kMessageBytes)};
  log << "grid: " << shape.num_clusters << " clusters of " << kClusterBlocks
      << " (all that fit at once with 32 KiB per block), each block sending "
      << shape.num_iterations << " messages of " << kMessageBytes / 1024
      << " KiB; size = bytes written into remote shared memory\n";
  Problem problem(shape);
  for (const Variant& v : kVariants) {
    // As in stas_cluster: each byte written into remote shared memory counts once (the outbox
    // writes of the bulk rings are local and not counted).
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(shape, problem.gmem_out.data()); }, shape.dsmem_bytes(),
        shape.dsmem_bytes());
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "dsmem_bulk";
  info.title = "10 dsmem_bulk: TMA bulk copies from a block's shared memory into its neighbour's";
  info.explanation =
      "The ring of stas_cluster, the same messages and barriers, but each block stages its\n"
      "message in its own shared memory and pushes it with\n"
      "cp.async.bulk.shared::cluster.shared::cta, which completes on the neighbour's filled\n"
      "barrier: one 8 KiB copy per block, or one 512-byte copy per warp and vector row; 16-byte\n"
      "st.async as the baseline on the same grid. --size is the bytes each block sends; every\n"
      "received word is folded into a digest checked against a host model.";
  info.requirement = {9, 0, false,
                      "thread block clusters and cp.async.bulk into distributed shared memory"};
  info.verify_bytes = 256u << 10;
  info.bench_bytes = 2u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % kMessageBytes != 0 || bytes / kMessageBytes > (1u << 30)) {
      return "--size is the bytes each block sends: a whole number of 8 KiB messages, at most "
             "8 TiB";
    }
    return std::nullopt;
  };
  info.bench_reads_device_memory = false;  // messages go from shared memory to shared memory
  info.host_model = [](std::ostream& out) {
    print_ring(out, kClusterBlocks);
    for (const Variant& v : kVariants) {
      const PushPlan plan = push_plan(v.push);
      const char* writes = v.push == Push::stas ? "st.async"
                           : plan.writes == 1      ? "bulk copy"
                                                   : "bulk copies";
      out << v.name << ": filled completes on 1 arrival + " << kMessageBytes << " bytes = "
          << plan.writes << " x " << plan.bytes << "-byte " << writes << ", issued by "
          << plan.issued_by << '\n';
    }
  };
  return info;
}

}  // namespace bulk

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, bulk::chapter_info(), bulk::kVariants, bulk::run);
}
#endif
