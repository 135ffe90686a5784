// Tests for 10_stas_cluster: the ring's schedule and host model, a model of the whole
// filled/ready protocol that looks for unsafe interleavings (exit safety included), what the
// kernels compile to, every variant bit-exact on the GPU for several shapes, cluster sizes and
// stage counts, and broken protocols stopped by the bounded waits.
#include "stas_cluster.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The ring's schedule and the host model --------------------------------------------------

TEST(HostRing, NeighboursFormOneCycleThroughEveryBlock) {
  for (unsigned size = 1; size <= 16; ++size) {
    unsigned rank = 0, steps = 0;
    do {
      EXPECT_EQ(ring_left(ring_right(rank, size), size), rank) << "size " << size;
      rank = ring_right(rank, size);
      ++steps;
    } while (rank != 0 && steps <= size);
    EXPECT_EQ(steps, size) << "the ring of " << size << " blocks is not one cycle";
  }
}

template <int kStages>
void expect_cursor_follows_iterations() {
  RingCursor<kStages> cursor;
  for (std::uint32_t it = 0; it < 40; ++it, cursor.advance()) {
    EXPECT_EQ(cursor.stage, static_cast<int>(it % kStages)) << "iteration " << it;
    EXPECT_EQ(cursor.phase, (it / kStages) & 1u) << "iteration " << it;
    if (it >= kStages) {
      // The ready wait (parity phase ^ 1) is the completion of the read of the message sent
      // kStages iterations earlier into the same stage.
      EXPECT_EQ(cursor.phase ^ 1u, ((it - kStages) / kStages) & 1u) << "iteration " << it;
    }
  }
}

TEST(HostRing, CursorGivesStageAndParityOfEveryIteration) {
  expect_cursor_follows_iterations<1>();
  expect_cursor_follows_iterations<2>();
  expect_cursor_follows_iterations<3>();
  expect_cursor_follows_iterations<4>();
}

TEST(HostRing, MessageWordsDifferBySenderIterationAndPlace) {
  std::vector<std::uint32_t> words;
  for (std::uint32_t sender = 0; sender < 16; ++sender) {
    for (std::uint32_t it = 0; it < 8; ++it) {
      for (std::uint32_t elem = 0; elem < kMessageElems; ++elem) words.push_back(message_word(sender, it, elem, 16));
    }
  }
  std::sort(words.begin(), words.end());
  EXPECT_EQ(std::adjacent_find(words.begin(), words.end()), words.end()) << "two messages share a word";
}

TEST(HostRing, DigestChangesWithAnySingleWrongWord) {
  std::vector<std::uint32_t> words(64);
  for (std::uint32_t i = 0; i < words.size(); ++i) words[i] = message_word(3, i, i, 8);
  auto digest_of = [](const std::vector<std::uint32_t>& w) {
    std::uint32_t d = kDigestStart;
    for (std::uint32_t x : w) d = digest_step(d, x);
    return d;
  };
  const std::uint32_t good = digest_of(words);
  for (std::size_t i = 0; i < words.size(); ++i) {
    for (std::uint32_t flip : {1u, 0x80000000u, 0xA5A5A5A5u}) {
      std::vector<std::uint32_t> bad = words;
      bad[i] ^= flip;
      EXPECT_NE(digest_of(bad), good) << "word " << i;
    }
  }
}

TEST(HostRing, ReferenceOfTwoBlocksByHand) {
  const RingShape shape{1, 2, 3};
  const std::vector<std::uint32_t> out = reference(shape);
  ASSERT_EQ(out.size(), 2u * kOutElemsPerBlock);
  // Block 0 receives from block 1 and block 1 from block 0; the last message is iteration 2's.
  EXPECT_EQ(out[kThreads + 5], message_word(1, 2, 5, 2));
  EXPECT_EQ(out[kOutElemsPerBlock + kThreads + 5], message_word(0, 2, 5, 2));
  // Thread 1 of block 0 reads vector 1 then vector kThreads + 1 of every message.
  std::uint32_t digest = kDigestStart;
  for (std::uint32_t it = 0; it < 3; ++it) {
    for (int e : {4, 5, 6, 7, 4 * kThreads + 4, 4 * kThreads + 5, 4 * kThreads + 6, 4 * kThreads + 7}) {
      digest = digest_step(digest, message_word(1, it, e, 2));
    }
  }
  EXPECT_EQ(out[1], digest);
}

TEST(HostRing, ReceiversOfTwoClustersStayInTheirCluster) {
  const RingShape shape{2, 4, 1};
  const std::vector<std::uint32_t> out = reference(shape);
  EXPECT_EQ(out[4 * kOutElemsPerBlock + kThreads], message_word(7, 0, 0, 8));  // block 4 hears block 7
  EXPECT_EQ(out[3 * kOutElemsPerBlock + kThreads], message_word(2, 0, 0, 8));  // block 3 hears block 2
}

TEST(HostRing, SizeMustBeWholeMessages) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kMessageBytes));
  EXPECT_FALSE(info.size_rule(1000 * kMessageBytes));
  EXPECT_TRUE(info.size_rule(kMessageBytes + 16));
  EXPECT_TRUE(info.size_rule(4096));
}

// ---- A model of the filled/ready protocol, searched for unsafe interleavings ------------------
//
// One cluster, one agent per block (a block's warps move together), counted in whole messages.
// st.async deliveries and remote arrivals travel on their own and land whenever the scheduler
// picks them; a block's cluster arrival waits until its remote arrivals have landed (release),
// but not for its st.async deliveries (their only completion is the receiver's barrier). At
// every step the scheduler picks one possible event at random. The first broken rule is
// reported: a message read before it landed, a message overwritten before it was read, a
// remote access to a block that has exited, or a deadlock.

enum class Step {
  wait_ready, send, expect_tx, wait_filled, consume, arrive_left_ready, cluster_arrive, cluster_wait, exit
};

struct Op {
  Step step;
  int stage;
  unsigned parity;
};

struct Protocol {
  int stages = 2;
  bool ready_wait_first = true;  // the program's order; false: the guide's (wait for "ready" last)
  bool final_cluster_sync = true;
  bool skip_ready_wait = false;    // broken
  bool skip_ready_arrive = false;  // broken
};

std::vector<Op> block_program(const Protocol& p, int iterations) {
  std::vector<Op> ops;
  for (int it = 0; it < iterations; ++it) {
    const int s = it % p.stages;
    const unsigned parity = (it / p.stages) & 1u;
    if (p.ready_wait_first && !p.skip_ready_wait) ops.push_back({Step::wait_ready, s, parity ^ 1u});
    ops.push_back({Step::send, s, 0});
    ops.push_back({Step::expect_tx, s, 0});
    ops.push_back({Step::wait_filled, s, parity});
    ops.push_back({Step::consume, s, 0});
    if (!p.skip_ready_arrive) ops.push_back({Step::arrive_left_ready, s, 0});
    if (!p.ready_wait_first && !p.skip_ready_wait) ops.push_back({Step::wait_ready, s, parity});
  }
  if (p.final_cluster_sync) {
    ops.push_back({Step::cluster_arrive, 0, 0});
    ops.push_back({Step::cluster_wait, 0, 0});
  }
  ops.push_back({Step::exit, 0, 0});
  return ops;
}

std::string simulate(const Protocol& p, int ring_size, int iterations, unsigned seed) {
  struct Block {
    std::vector<course::MbarrierModel> filled, ready;
    std::vector<bool> landed;  // per stage: a message is in the buffer, not yet read
    std::size_t pc = 0;
    bool exited = false;
    int arrivals_in_flight = 0;
  };
  struct InFlight {
    bool message;  // st.async delivery, or remote arrival on "ready"
    int from, to, stage;
  };
  const std::vector<Op> program = block_program(p, iterations);
  std::vector<Block> blocks(ring_size);
  for (Block& b : blocks) {
    b.filled.assign(p.stages, course::MbarrierModel{});
    b.ready.assign(p.stages, course::MbarrierModel{});
    b.landed.assign(p.stages, false);
  }
  std::vector<InFlight> flight;
  int cluster_arrivals = 0;
  std::mt19937 random(seed);
  auto name = [](int b) { return "block " + std::to_string(b); };

  for (;;) {
    std::vector<int> choices;  // b < ring_size: block b's next step; else an event in flight
    for (int b = 0; b < ring_size; ++b) {
      const Block& blk = blocks[b];
      if (blk.exited) continue;
      const Op& op = program[blk.pc];
      bool possible = true;
      if (op.step == Step::wait_ready) possible = blk.ready[op.stage].phase_done(op.parity);
      if (op.step == Step::wait_filled) possible = blk.filled[op.stage].phase_done(op.parity);
      if (op.step == Step::cluster_arrive) possible = blk.arrivals_in_flight == 0;
      if (op.step == Step::cluster_wait) possible = cluster_arrivals == ring_size;
      if (possible) choices.push_back(b);
    }
    for (std::size_t f = 0; f < flight.size(); ++f) choices.push_back(ring_size + static_cast<int>(f));
    if (choices.empty()) {
      for (int b = 0; b < ring_size; ++b) {
        if (!blocks[b].exited) return "deadlock: " + name(b) + " waits forever at step " + std::to_string(blocks[b].pc);
      }
      return "";
    }
    const int pick = choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(random)];
    if (pick >= ring_size) {
      const InFlight event = flight[pick - ring_size];
      flight.erase(flight.begin() + (pick - ring_size));
      Block& to = blocks[event.to];
      if (to.exited) {
        return std::string(event.message ? "st.async" : "remote arrive") + " from " + name(event.from) +
               " reached " + name(event.to) + " after it exited";
      }
      if (event.message) {
        if (to.landed[event.stage]) return "a message into " + name(event.to) + " was overwritten before it was read";
        to.landed[event.stage] = true;
        to.filled[event.stage].complete_tx(1);
      } else {
        to.ready[event.stage].arrive();
        --blocks[event.from].arrivals_in_flight;
      }
      continue;
    }
    Block& blk = blocks[pick];
    const Op op = program[blk.pc++];
    const int right = static_cast<int>(ring_right(pick, ring_size));
    const int left = static_cast<int>(ring_left(pick, ring_size));
    switch (op.step) {
      case Step::send: flight.push_back({true, pick, right, op.stage}); break;
      case Step::expect_tx:
        blk.filled[op.stage].expect_tx(1);
        blk.filled[op.stage].arrive();
        break;
      case Step::consume:
        if (!blk.landed[op.stage]) return name(pick) + " read a message before it landed";
        blk.landed[op.stage] = false;
        break;
      case Step::arrive_left_ready:
        flight.push_back({false, pick, left, op.stage});
        ++blk.arrivals_in_flight;
        break;
      case Step::cluster_arrive: ++cluster_arrivals; break;
      case Step::exit: blk.exited = true; break;
      default: break;  // the waits: their condition was checked above
    }
  }
}

// The first problem any of `runs` random interleavings runs into, or "".
std::string first_problem(const Protocol& p, int ring_size, int runs = 400, int iterations = 6) {
  for (int seed = 1; seed <= runs; ++seed) {
    const std::string problem = simulate(p, ring_size, iterations, seed);
    if (!problem.empty()) return problem;
  }
  return "";
}

TEST(HostRingProtocol, ProgramsOrderWithFinalClusterSyncIsSafe) {
  for (int stages : {1, 2, 3, 4}) {
    for (int ring_size : {1, 2, 3, 8}) {
      Protocol p;
      p.stages = stages;
      EXPECT_EQ(first_problem(p, ring_size), "") << stages << " stages, ring of " << ring_size;
    }
  }
}

TEST(HostRingProtocol, ProgramsOrderWithoutFinalSyncLetsAnArrivalReachAnExitedBlock) {
  for (int stages : {1, 2}) {
    Protocol p;
    p.stages = stages;
    p.final_cluster_sync = false;
    EXPECT_NE(first_problem(p, 8).find("remote arrive from block"), std::string::npos) << stages << " stages";
  }
}

TEST(HostRingProtocol, GuidesOrderWithOneBufferIsSafeWithoutFinalSync) {
  Protocol p;
  p.stages = 1;
  p.ready_wait_first = false;
  p.final_cluster_sync = false;
  EXPECT_EQ(first_problem(p, 8), "");
}

TEST(HostRingProtocol, WithoutTheReadyWaitAMessageIsOverwritten) {
  Protocol p;
  p.skip_ready_wait = true;
  EXPECT_NE(first_problem(p, 8).find("overwritten before it was read"), std::string::npos);
}

TEST(HostRingProtocol, WithoutTheReadyArrivalTheRingDeadlocks) {
  Protocol p;
  p.skip_ready_arrive = true;
  EXPECT_NE(first_problem(p, 8).find("deadlock"), std::string::npos);
}

// ---- What the compiler emits (PTX generated by the build) --------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx90_ = course::read_text_file(COURSE_PTX_DIR "/stas_cluster.compute_90.ptx"); }
  // The kernel's text from its .entry line to the next kernel's. (course::ptx_kernel_body stops
  // at the first '}' that starts a line, and the braced inline-asm blocks of cuda::ptx put one
  // there.)
  static std::string kernel_text(const std::string& ptx, const char* name) {
    std::size_t pos = 0;
    while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
      const std::size_t line_end = ptx.find('\n', pos);
      if (ptx.substr(pos, line_end - pos).find(name) != std::string::npos) {
        return ptx.substr(pos, ptx.find(".entry ", line_end) - pos);
      }
      pos = line_end;
    }
    return "";
  }
  static std::string sm90(const char* name) {
    const std::string body = kernel_text(ptx90_, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string ptx90_;
};

TEST_F(HostCodegen, RingsStoreWithStAsyncAndSignalAcrossBlocks) {
  for (const char* name : {"stas_ring_kernelILi1EL7Release0E", "stas_ring_kernelILi2EL7Release0E",
                           "stas_ring_kernelILi2EL7Release1E", "stas_ring_any_cluster_kernelILi2E"}) {
    const std::string k = sm90(name);
    EXPECT_TRUE(has(k, "st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.v4.b32")) << name;
    EXPECT_TRUE(has(k, "mapa.u64")) << name << ": map_shared_rank is PTX mapa";
    EXPECT_TRUE(has(k, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << name << ": the remote arrive";
    EXPECT_TRUE(has(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << name;
    EXPECT_TRUE(has(k, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64")) << name;
    EXPECT_TRUE(has(k, "fence.mbarrier_init.release.cluster")) << name;
    EXPECT_TRUE(has(k, "elect.sync")) << name << ": invoke_one elects a lane";
    EXPECT_TRUE(has(k, "barrier.cluster.wait")) << name;
    EXPECT_FALSE(has(k, "\tst.v4.u32")) << name << " should not store to shared memory with plain stores";
  }
}

TEST_F(HostCodegen, ReleasePerBlockWaitsForTheBlockReleasePerWarpForTheWarp) {
  const std::string per_block = sm90("stas_ring_kernelILi2EL7Release0E");
  const std::string per_warp = sm90("stas_ring_kernelILi2EL7Release1E");
  EXPECT_TRUE(has(per_block, "bar.sync")) << "__syncthreads before the block's one remote arrival";
  EXPECT_FALSE(has(per_warp, "bar.sync"));
  EXPECT_TRUE(has(per_warp, "bar.warp.sync")) << "warp.sync before each warp's remote arrival";
}

TEST_F(HostCodegen, PlainStoreVariantUsesGenericStoresAndClusterBarriers) {
  const std::string k = sm90("dsmem_stores_kernel");
  EXPECT_TRUE(has(k, "mapa.u64"));
  EXPECT_TRUE(has(k, "\tst.v4.u32")) << "16-byte stores through the mapped (generic) address";
  EXPECT_TRUE(has(k, "barrier.cluster.arrive"));
  EXPECT_FALSE(has(k, "st.async"));
  EXPECT_FALSE(has(k, "mbarrier"));
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm90_StasCluster : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_StasCluster() : GpuTest(chapter_info().requirement) {}
  course::Comparison run_shape(const RingShape& shape) {
    Problem problem(shape);
    return verify(GetParam(), problem);
  }
};

TEST_P(Sm90_StasCluster, OneClusterOneMessage) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, OneClusterManyMessages) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1001});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, MoreClustersThanFitAtOnce) {
  const ClusterLimits limits = query_cluster_limits();
  const course::Comparison result = run_shape({2u * limits.resident_clusters + 3u, kClusterBlocks, 5});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, RepeatedRunsGiveTheSameBits) {
  Problem problem({4, kClusterBlocks, 37});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90_StasCluster, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// The kernel without __cluster_dims__, launched with cudaLaunchKernelEx at several cluster sizes.
class Sm90_StasClusterSize : public course::GpuTest, public ::testing::WithParamInterface<unsigned> {
 protected:
  Sm90_StasClusterSize() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm90_StasClusterSize, RingOfThisManyBlocks) {
  Problem problem({3, GetParam(), 50});
  problem.gmem_out.poison();
  launch_ex<2>(problem.shape, problem.gmem_out.data());
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = problem.gmem_out.check(problem.expected, kOutElemsPerBlock);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

INSTANTIATE_TEST_SUITE_P(Sizes, Sm90_StasClusterSize, ::testing::Values(1u, 2u, 4u, 8u));

class Sm90_StasClusterLimits : public course::GpuTest {
 protected:
  Sm90_StasClusterLimits() : GpuTest(chapter_info().requirement) {}
  template <int kStages>
  course::Comparison run_launch_ex(const RingShape& shape) {
    Problem problem(shape);
    problem.gmem_out.poison();
    launch_ex<kStages>(problem.shape, problem.gmem_out.data());
    COURSE_CHECK(cudaDeviceSynchronize());
    return problem.gmem_out.check(problem.expected, kOutElemsPerBlock);
  }
};

TEST_F(Sm90_StasClusterLimits, QueriesAreConsistent) {
  const ClusterLimits limits = query_cluster_limits();
  EXPECT_GE(limits.max_portable, 1);
  EXPECT_LE(limits.max_portable, kClusterBlocks) << "8 is the portable maximum";
  EXPECT_GE(limits.max_nonportable, limits.max_portable);
  EXPECT_GE(limits.resident_clusters, 1);
}

TEST_F(Sm90_StasClusterLimits, LargestReportedClusterRunsTheRing) {
  const ClusterLimits limits = query_cluster_limits();
  const auto size = static_cast<unsigned>(limits.max_nonportable);
  const course::Comparison result = run_launch_ex<2>({2, size, 20});
  EXPECT_TRUE(result.ok()) << "ring of " << size << ": " << result.summary() << '\n' << result.first;
}

TEST_F(Sm90_StasClusterLimits, StageCountsOneToFour) {
  const course::Comparison one = run_launch_ex<1>({2, kClusterBlocks, 33});
  EXPECT_TRUE(one.ok()) << "1 stage: " << one.summary() << '\n' << one.first;
  const course::Comparison three = run_launch_ex<3>({2, kClusterBlocks, 33});
  EXPECT_TRUE(three.ok()) << "3 stages: " << three.summary() << '\n' << three.first;
  const course::Comparison four = run_launch_ex<4>({2, kClusterBlocks, 33});
  EXPECT_TRUE(four.ok()) << "4 stages: " << four.summary() << '\n' << four.first;
}

// ---- Broken protocols, stopped by the bounded waits -------------------------------------------

// Announces 16 bytes more than the left neighbour sends: "filled" never completes.
__global__ void __cluster_dims__(2, 1, 1) expect_too_many_bytes_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(16) std::uint32_t smem_message[kMessageElems];
  __shared__ std::uint64_t filled_bar;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&filled_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  const unsigned right = ring_right(cluster.block_rank(), cluster.num_blocks());
  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(smem_message, right);
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar, right);
  for (int k = 0; k < kVecsPerThread; ++k) {
    std::uint32_t words[kVecElems] = {1, 2, 3, 4};
    ptx::st_async(dsmem_right_message + message_index(threadIdx.x, k, 0), words, dsmem_right_filled);
  }
  if (threadIdx.x == 0) {
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &filled_bar,
                                         std::uint32_t{kMessageBytes + 16});  // BROKEN: 16 bytes never come
  }
  course::bounded_wait_parity(&filled_bar, 0, {"filled", 0, 0}, ptx::scope_cluster);
  gmem_out[blockIdx.x * kThreads + threadIdx.x] = smem_message[threadIdx.x];
  cluster.sync();
}

// One buffer, and the receiver never tells the sender it has read the message: the sender's
// second "ready" wait never returns.
__global__ void __cluster_dims__(2, 1, 1) never_ready_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(16) std::uint32_t smem_message[kMessageElems];
  __shared__ std::uint64_t filled_bar, ready_bar;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&filled_bar, 1);
    ptx::mbarrier_init(&ready_bar, kWarps);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  const unsigned right = ring_right(cluster.block_rank(), cluster.num_blocks());
  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(smem_message, right);
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar, right);
  std::uint32_t sum = 0;
  for (std::uint32_t phase = 0; phase < 2; ++phase) {
    course::bounded_wait_parity(&ready_bar, phase ^ 1u, {"ready", 0, phase ^ 1u}, ptx::scope_cluster);
    for (int k = 0; k < kVecsPerThread; ++k) {
      std::uint32_t words[kVecElems] = {phase, 2, 3, 4};
      ptx::st_async(dsmem_right_message + message_index(threadIdx.x, k, 0), words, dsmem_right_filled);
    }
    if (threadIdx.x == 0) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &filled_bar,
                                           std::uint32_t{kMessageBytes});
    }
    course::bounded_wait_parity(&filled_bar, phase, {"filled", 0, phase}, ptx::scope_cluster);
    sum += smem_message[threadIdx.x];
    // BROKEN: no arrival on the left neighbour's ready barrier
  }
  gmem_out[blockIdx.x * kThreads + threadIdx.x] = sum;
  cluster.sync();
}

class Sm90_StasClusterBroken : public course::GpuTest {
 protected:
  Sm90_StasClusterBroken() : GpuTest(chapter_info().requirement) {}
};

// Launch without synchronising: the death test's child synchronises and reports.
void launch_broken(void (*kernel)(std::uint32_t*), std::uint32_t* gmem_out) {
  kernel<<<2, kThreads>>>(gmem_out);
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm90_StasClusterBroken, TooManyExpectedBytesIsDiagnosed) {
  course::DeviceBuffer<std::uint32_t> out(2 * kThreads);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(expect_too_many_bytes_kernel, out.data()),
                               "bounded wait: gave up .*barrier 'filled', stage 0, phase 0", 30.0);
}

TEST_F(Sm90_StasClusterBroken, MissingReadyArrivalIsDiagnosed) {
  course::DeviceBuffer<std::uint32_t> out(2 * kThreads);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(never_ready_kernel, out.data()),
                               "bounded wait: gave up .*barrier 'ready', stage 0, phase 0", 30.0);
}

}  // namespace
