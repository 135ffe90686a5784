// 10_stas_cluster lab: how many buffers, and DSMEM stores against st.async.
//
// The lesson's ring keeps two buffers and runs clusters of 8. This program asks "what if":
//   dsmem_stores: the neighbour's buffer written with plain stores through a cluster address, and a
//     cluster barrier for each message, instead of st.async completing on the receiver's barrier;
//   stas_ring_s1_c2, stas_ring_s2_c2: the lesson's ring with 1 or 2 buffers in clusters of 2.
// Every row is verified bit for bit before it is timed, as in the lesson.
// --timeline=FILE runs the lesson's stas_ring once more with per-message events recorded (send
// issued, landed, consumed, released, in blocks 0-3) and writes them as CSV for
// scripts/draw_timelines.py.
// Hardware: compute capability 9.0 (clusters, distributed shared memory, st.async), as the lesson.
// Run: build/10_stas_cluster/stas_cluster_lab [--bench] [--variant=NAME] [--size=BYTES_PER_BLOCK] [--timeline=FILE]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-stas
#include <map>
#include <stdexcept>
#include <string>

#include "stas_cluster.cu"  // the lesson: the ring, its wait, launchers, queries, Problem, verify

#include "course/timeline.hpp"  // --timeline: the recorder and the CSV (measurement only)

namespace lab {

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

// The lesson's ring with kRingStages buffers, cluster size chosen at launch.
template <int kRingStages>
__global__ void __launch_bounds__(kThreads) stas_ring_any_cluster_kernel(std::uint32_t* gmem_out,
                                                                          std::uint32_t num_iterations) {
  stas_ring<kRingStages>(gmem_out, num_iterations);
}

// ---- Timeline: the lesson's ring with its events recorded (--timeline=FILE) -------------------

constexpr int kTimelineStages = 2;

/// [recorded_stas_ring]
// The lesson's stas_ring<2> in clusters of 8: its steps, in its order, with the four recording
// points of course/timeline.hpp between them (blocks 0-3, their first 16 messages, by thread 0):
// issue (sender), land, consume and release (receiver), the last before the remote arrival.
__global__ void __cluster_dims__(kClusterBlocks, 1, 1) __launch_bounds__(kThreads)
    recorded_stas_ring_kernel(std::uint32_t* gmem_out, std::uint32_t num_iterations,
                              course::timeline::Recorder recorder) {
  using course::timeline::Kind;
  using course::timeline::Role;
  const RingBlock<kTimelineStages> ring = join_ring<kTimelineStages>();
  const bool is_recorder = threadIdx.x == 0;
  std::uint32_t digest = kDigestStart;
  uint4 received[kVecsPerThread];
  course::StageCursor<kTimelineStages> cursor;
  for (std::uint32_t it = 0; it < num_iterations; ++it, cursor.advance()) {
    ring.wait_until_right_is_free(cursor);
    if (is_recorder) recorder.record(Kind::issue, Role::producer, cursor.stage, it);
    ring.send_right(cursor, it);
    ring.expect_from_left(cursor);
    ring.wait_until_landed(cursor);
    if (is_recorder) recorder.record(Kind::land, Role::consumer, cursor.stage, it);
    ring.read_message(cursor, received, digest);
    if (is_recorder) recorder.record(Kind::consume, Role::consumer, cursor.stage, it);
    __syncthreads();
    if (is_recorder) recorder.record(Kind::release, Role::consumer, cursor.stage, it);
    ring.release_to_left(cursor);
  }
  write_result(gmem_out, digest, received);
  cg::this_cluster().sync();  // no block exits while a neighbour's arrival may still come
}
/// [recorded_stas_ring]

constexpr const char* kTimelineVariant = "stas_ring";  // the lesson's row: its ring, clusters of 8

struct TimelineRun {
  std::vector<course::timeline::Event> events;
  course::Comparison result;  // the recorded run's output against the reference
};

// One run of the recorded ring in `problem`'s shape (clusters of 8) with blocks
// 0 .. max_blocks - 1 recording their first max_iterations messages; poisoned, launched,
// synchronised and compared like every row.
TimelineRun record_stas_ring(Problem& problem, std::uint32_t max_blocks, std::uint32_t max_iterations) {
  if (problem.shape.cluster_blocks != kClusterBlocks) {
    throw std::invalid_argument("the recorded ring's clusters are 8 blocks (__cluster_dims__)");
  }
  course::timeline::Recording recording(max_blocks, max_iterations);
  problem.gmem_out.poison();
  recorded_stas_ring_kernel<<<problem.shape.num_blocks(), kThreads>>>(
      problem.gmem_out.data(), problem.shape.num_iterations, recording.recorder());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  return {recording.events(), problem.gmem_out.check(problem.expected, kOutElemsPerBlock)};
}

// --timeline=FILE: verified first (chapter_main), then recorded, checked again, and written.
void write_timeline(const course::Options& opts, std::ostream& log) {
  using namespace course::timeline;
  const ClusterLimits limits = query_cluster_limits();
  Problem problem({static_cast<unsigned>(limits.resident_clusters), kClusterBlocks,
                   static_cast<std::uint32_t>(opts.size_bytes / kMessageBytes)});
  const TimelineRun run = record_stas_ring(problem, kDefaultBlocks, kDefaultIterations);
  Header header = header_of_run("stas_cluster_lab", kTimelineVariant, opts.size_bytes);
  header.notes = {"rings of " + std::to_string(kClusterBlocks) + " blocks (one cluster each), " +
                      std::to_string(kTimelineStages) + " buffers of " + std::to_string(kMessageBytes / 1024) +
                      " KiB per block, st.async into the right neighbour; " +
                      std::to_string(problem.shape.num_clusters) + " clusters, " +
                      std::to_string(problem.shape.num_iterations) + " messages per block",
                  "recorded: blocks 0-" + std::to_string(kDefaultBlocks - 1) + " (ranks of cluster 0), their first " +
                      std::to_string(kDefaultIterations) + " messages, all events by thread 0",
                  "issue = ready wait returned, sending into the right neighbour; land = filled wait returned; "
                  "release = the block has read the message (the remote arrival follows)"};
  header.role_names[0] = "sender";
  header.role_names[1] = "receiver";
  header.peer = "ring " + std::to_string(kClusterBlocks);
  write_checked(opts.timeline, log, run.result, header, run.events, "ring");
}

// ---- The rows ---------------------------------------------------------------------------------

struct Variant {
  const char* name;
  const char* summary;
  unsigned cluster_blocks;  // the row's ring size
  RingLaunch launch;
};

template <int kRingStages>
constexpr RingLaunch sweep = &launch_ex<stas_ring_any_cluster_kernel<kRingStages>>;

const Variant kVariants[] = {
    {"dsmem_stores", "plain 16-byte stores through map_shared_rank + one cluster.sync per message",
     kClusterBlocks, &launch_cluster_dims<dsmem_stores_kernel>},
    {"stas_ring_s1_c2", "the lesson's ring, 1 buffer, clusters of 2 (cudaLaunchKernelEx)", 2, sweep<1>},
    {"stas_ring_s2_c2", "the lesson's ring, 2 buffers, clusters of 2 (cudaLaunchKernelEx)", 2, sweep<2>},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

// Every row runs the lesson's grid: as many blocks as clusters of 8 fit at once.
RingShape row_shape(const Variant& v, unsigned num_blocks, std::uint32_t num_iterations) {
  return {num_blocks / v.cluster_blocks, v.cluster_blocks, num_iterations};
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  const ClusterLimits limits = query_cluster_limits();
  const unsigned num_blocks = static_cast<unsigned>(limits.resident_clusters) * kClusterBlocks;
  const auto num_iterations = static_cast<std::uint32_t>(opts.size_bytes / kMessageBytes);
  log << "grid: " << num_blocks << " blocks in clusters of 2, 4 or 8, each sending " << num_iterations
      << " messages of " << kMessageBytes / 1024 << " KiB; size = bytes written into remote shared memory\n";
  std::map<unsigned, Problem> problems;  // one reference per cluster size: the senders differ
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const RingShape shape = row_shape(v, num_blocks, num_iterations);
    Problem& problem = problems.try_emplace(v.cluster_blocks, shape).first->second;
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(shape, problem.gmem_out.data()); }, shape.dsmem_bytes(), shape.dsmem_bytes());
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "stas_cluster_lab";
  info.title = "10 stas_cluster lab: plain stores + cluster.sync, and the ring in clusters of 2";
  info.explanation =
      "The lesson's ring with one thing changed per row: plain stores through map_shared_rank with\n"
      "one cluster.sync per message instead of st.async and mbarriers, or clusters of 2 blocks\n"
      "(one and two buffers) launched with cudaLaunchKernelEx. Every row runs the same grid and\n"
      "sends the same bytes.";
  info.host_model = [](std::ostream& out) {
    print_ring(out, 2);
    print_ring_waits<1>(out, "1 buffer");
  };
  info.timeline = write_timeline;
  info.timeline_variant = kTimelineVariant;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
