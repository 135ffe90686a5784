// Tests for 10_stas_cluster's second lesson, TMA bulk copies into a neighbour's shared memory
// (dsmem_bulk.cu): the push plans (bytes per write, the warps' parts of a message) and the ring
// protocol with a message landing in one or sixteen copies, simulated on the model of
// stas_cluster_model.hpp; the variant table and the command line; what each ring kernel compiles
// to (PTX for compute_90 and, where cuobjdump can read it, sm_90 machine code); every variant
// bit-exact on the GPU; a wrong expect-tx stopped by the bounded cluster-scope wait.
#include "dsmem_bulk.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

namespace bulk {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace bulk

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The push plans -------------------------------------------------------------------------

TEST(HostBulkPlan, EveryPushDeliversTheWholeMessageInSixteenByteUnits) {
  for (bulk::Push push : {bulk::Push::stas, bulk::Push::bulk_block, bulk::Push::bulk_warp}) {
    const bulk::PushPlan plan = bulk::push_plan(push);
    EXPECT_GE(plan.writes, 1);
    EXPECT_EQ(std::size_t(plan.writes) * plan.bytes, kMessageBytes) << plan.issued_by << ": the receiver's expect-tx";
    EXPECT_EQ(plan.bytes % 16, 0u) << plan.issued_by;
  }
  EXPECT_EQ(bulk::push_plan(bulk::Push::bulk_block).writes, 1);
  EXPECT_EQ(bulk::push_plan(bulk::Push::bulk_warp).writes, 16) << "8 warps x 2 vector rows";
  EXPECT_EQ(bulk::push_plan(bulk::Push::bulk_warp).bytes, 512u);
  EXPECT_EQ(bulk::push_plan(bulk::Push::stas).writes, 512);
}

// Warp w's part k is exactly the vectors its lanes wrote, and the parts cover the message once.
TEST(HostBulkPlan, WarpPartsHoldTheirLanesVectorsAndCoverTheMessageOnce) {
  std::vector<int> owner(kMessageElems, -1);
  for (int w = 0; w < kWarps; ++w) {
    for (int k = 0; k < kVecsPerThread; ++k) {
      const int first = bulk::warp_part_elem(w, k);
      EXPECT_EQ(first * sizeof(std::uint32_t) % 16, 0u) << "a bulk copy starts 16-byte aligned; warp " << w;
      ASSERT_LE(first + bulk::kWarpPartElems, kMessageElems) << "warp " << w << ", part " << k;
      for (int e = first; e < first + bulk::kWarpPartElems; ++e) {
        EXPECT_EQ(owner[e], -1) << "element " << e << " copied twice";
        owner[e] = w;
      }
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < kVecElems; ++i) {
          const int elem = message_index(32 * w + lane, k, i);
          EXPECT_TRUE(elem >= first && elem < first + bulk::kWarpPartElems)
              << "lane " << lane << " of warp " << w << " wrote element " << elem << " outside its warp's part";
        }
      }
    }
  }
  EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << "an element no copy moves";
}

// ---- The protocol with a message landing in one or sixteen copies ----------------------------

Protocol bulk_protocol(int copies_per_message) {
  Protocol p = protocol_for(Release::per_block, bulk::kStages);
  p.chunks = copies_per_message;  // each copy completes its bytes on the receiver's filled barrier
  return p;
}

TEST(HostBulkProtocol, OneCopyOrSixteenPerMessageIsSafe) {
  for (int copies : {1, 16}) {
    for (int ring_size : {2, 8}) {
      EXPECT_EQ(first_problem(bulk_protocol(copies), ring_size, 200), "") << copies << " copies, ring of " << ring_size;
    }
  }
}

TEST(HostBulkProtocol, ExpectingSixteenBytesMoreThanTheCopyDeadlocks) {
  Protocol p = bulk_protocol(1);
  p.expect_tx_bytes += 16;  // Sm90_DsmemBulkBroken runs this one
  EXPECT_TRUE(contains(first_problem(p, 8), "deadlock: block"));
}

TEST(HostBulkProtocol, ExpectingOneWarpPartTooFewReadsTooEarly) {
  Protocol p = bulk_protocol(16);
  p.expect_tx_bytes -= static_cast<int>(bulk::kWarpPartBytes);
  const std::string problem = first_problem(p, 8);
  EXPECT_TRUE(contains(problem, "before it landed") || contains(problem, "overwritten") || contains(problem, "deadlock"))
      << problem;
}

TEST(HostBulkProtocol, WithoutTheFinalClusterSyncAnArrivalMayReachAnExitedBlock) {
  Protocol p = bulk_protocol(1);
  p.final_cluster_sync = false;
  EXPECT_TRUE(contains(first_problem(p, 8), "remote arrive from block"));
}

// ---- The variant table and the command line ---------------------------------------------------

TEST(HostBulkVariants, ThreeNamedPushesOneEach) {
  std::vector<std::string> names;
  for (const bulk::Variant& v : bulk::kVariants) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bulk_ring", "bulk_ring_per_warp", "stas_ring"}));
  EXPECT_EQ(bulk::kVariants[0].push, bulk::Push::bulk_block);
  EXPECT_EQ(bulk::kVariants[1].push, bulk::Push::bulk_warp);
  EXPECT_EQ(bulk::kVariants[2].push, bulk::Push::stas);
}

TEST(HostBulkVariants, SizeIsWholeMessagesPerBlockAsInTheLesson) {
  const course::ChapterInfo info = bulk::chapter_info();
  EXPECT_STREQ(info.program, "dsmem_bulk");
  EXPECT_EQ(info.requirement.major, 9);
  EXPECT_FALSE(info.bench_reads_device_memory) << "shared memory to shared memory";
  for (std::size_t ok : {kMessageBytes, 1001 * kMessageBytes, info.verify_bytes, info.bench_bytes}) {
    EXPECT_FALSE(info.size_rule(ok)) << ok;
  }
  for (std::size_t bad : {std::size_t{0}, kMessageBytes + 16, std::size_t{4096}, (std::size_t{1} << 43) + kMessageBytes}) {
    EXPECT_TRUE(info.size_rule(bad)) << bad;
  }
  const RingShape shape{3, kClusterBlocks, 7};
  EXPECT_EQ(shape.dsmem_bytes(), 3u * 8u * 7u * kMessageBytes) << "the bytes the lesson's rows count";
}

TEST(HostBulkVariants, ProgramPrintsEachPushPlan) {
  std::ostringstream out;
  bulk::chapter_info().host_model(out);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "ring of 8 blocks per cluster: 0->1 1->2")) << text;
  EXPECT_TRUE(contains(text, "bulk_ring: filled completes on 1 arrival + 8192 bytes = 1 x 8192-byte bulk copy, "
                             "issued by one thread of the block"))
      << text;
  EXPECT_TRUE(contains(text, "bulk_ring_per_warp: filled completes on 1 arrival + 8192 bytes = 16 x 512-byte bulk "
                             "copies, issued by one lane of each warp"))
      << text;
  EXPECT_TRUE(contains(text, "stas_ring: filled completes on 1 arrival + 8192 bytes = 512 x 16-byte st.async")) << text;
}

// ---- What the compiler emits ----------------------------------------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("dsmem_bulk", "90"); }
  static std::string kernel(const std::string& part) {
    const std::string body = course::ptx_kernel_body(ptx_, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in dsmem_bulk.compute_90.ptx";
    return body;
  }
  static inline const char* const kStas = "_ZN4bulk16push_ring_kernelILNS_4PushE0EEEvPjj";
  static inline const char* const kBlock = "_ZN4bulk16push_ring_kernelILNS_4PushE1EEEvPjj";
  static inline const char* const kWarp = "_ZN4bulk16push_ring_kernelILNS_4PushE2EEEvPjj";
  static inline std::string ptx_;
};

constexpr const char* kBulkCopy =
    R"(cp\.async\.bulk\.shared::cluster\.shared::cta\.mbarrier::complete_tx::bytes)";

// The copy goes from our shared memory into the neighbour's, completing on the neighbour's barrier;
// the outbox is fenced for the async proxy before it; then the ring of stas_cluster.cu.
TEST_F(HostCodegen, BulkRingsPushWithOneCopyPerBlockOrPerWarpAfterAProxyFence) {
  for (const char* part : {kBlock, kWarp}) {
    const std::string k = kernel(part);
    EXPECT_GE(course::count_matches(k, kBulkCopy), 1) << part;
    const std::size_t fence = k.find("fence.proxy.async.shared::cta"), copy = k.find("cp.async.bulk.shared::cluster");
    ASSERT_NE(fence, std::string::npos) << part << ": the outbox's st.shared must be fenced before the copy";
    EXPECT_LT(fence, copy) << part << ": the proxy fence comes before the copy";
    EXPECT_GE(course::count_matches(k, R"(st\.shared\.v4\.u32)"), 1) << part << ": the outbox is written by st.shared";
    EXPECT_FALSE(contains(k, "st.async")) << part;
    EXPECT_GE(course::count_matches(k, R"(mapa\.u64)"), 3) << part << ": inbox, filled and ready mapped";
    EXPECT_TRUE(contains(k, "elect.sync")) << part << ": invoke_one elects the issuing lane";
  }
  // Between the fence and the copy: the block's barrier, or only the warp's.
  const std::string block = kernel(kBlock), warp = kernel(kWarp);
  const std::string block_gap = block.substr(block.find("fence.proxy.async"), block.find("cp.async.bulk.shared::cluster") -
                                                                                 block.find("fence.proxy.async"));
  const std::string warp_gap = warp.substr(warp.find("fence.proxy.async"), warp.find("cp.async.bulk.shared::cluster") -
                                                                               warp.find("fence.proxy.async"));
  EXPECT_TRUE(contains(block_gap, "bar.sync")) << "bulk_ring: __syncthreads between the fences and the copy";
  EXPECT_TRUE(contains(warp_gap, "bar.warp.sync")) << "bulk_ring_per_warp: the warp's barrier";
  EXPECT_FALSE(contains(warp_gap, "bar.sync")) << "bulk_ring_per_warp waits for no other warp before its copies";
  EXPECT_EQ(course::count_matches(block, kBulkCopy), 1) << "one copy of the whole message";
  EXPECT_EQ(course::count_matches(warp, kBulkCopy), kVecsPerThread) << "one copy per vector row of the warp";
}

TEST_F(HostCodegen, StasRingStoresFromRegistersWithoutCopyOrFence) {
  const std::string k = kernel(kStas);
  EXPECT_GE(course::count_matches(k, R"(st\.async\.weak\.shared::cluster\.mbarrier::complete_tx::bytes\.v4\.b32)"), 1);
  EXPECT_FALSE(contains(k, "cp.async.bulk"));
  EXPECT_FALSE(contains(k, "fence.proxy.async"));
  EXPECT_FALSE(contains(k, "st.shared.v4")) << "no outbox";
}

// Every ring keeps the lesson's barriers: waits acquiring at cluster scope, bounded; the local
// expect-tx; the remote release; the published inits; the cluster barriers.
TEST_F(HostCodegen, EveryRingKeepsTheLessonsBarriers) {
  for (const char* part : {kStas, kBlock, kWarp}) {
    const std::string k = kernel(part);
    EXPECT_GE(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.acquire\.cluster\.shared::cta\.b64)"), 2) << part;
    EXPECT_EQ(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.shared::cta\.b64)"), 0) << part;
    EXPECT_TRUE(contains(k, "%globaltimer")) << part << ": a wait without a time limit";
    EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << part;
    EXPECT_TRUE(contains(k, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << part;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << part;
    EXPECT_TRUE(contains(k, "barrier.cluster.arrive")) << part;
    EXPECT_TRUE(contains(k, "barrier.cluster.wait")) << part;
    EXPECT_TRUE(contains(k, ".reqnctapercluster 8, 1, 1")) << part;
  }
}

// The machine code on 9.0 (skipped where cuobjdump or sm_90 code is missing): UBLKCP is the bulk
// copy, STS.128 the outbox stores, STAS.128 st.async.
TEST_F(HostCodegen, MachineCodeOnHopperShowsTheBulkCopyOrStas) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (const char* part : {kBlock, kWarp}) {
    const std::string k = course::sass_kernel_body(sass, part);
    ASSERT_FALSE(k.empty()) << "no kernel " << part << " in the sm_90 machine code";
    EXPECT_GE(course::count_matches(k, "UBLKCP"), 1) << part;
    EXPECT_GE(course::count_matches(k, R"(STS\.128)"), 1) << part;
    EXPECT_EQ(course::count_matches(k, "STAS"), 0) << part;
  }
  const std::string stas = course::sass_kernel_body(sass, kStas);
  ASSERT_FALSE(stas.empty());
  EXPECT_GE(course::count_matches(stas, R"(STAS\.128)"), 1);
  EXPECT_EQ(course::count_matches(stas, "UBLKCP"), 0);
}

// ---- On the GPU: every variant ----------------------------------------------------------------

class Sm90_DsmemBulk : public course::GpuTest, public ::testing::WithParamInterface<bulk::Variant> {
 protected:
  Sm90_DsmemBulk() : GpuTest(bulk::chapter_info().requirement) {}
  course::Comparison run_shape(const RingShape& shape) {
    bulk::Problem problem(shape);
    return bulk::verify(GetParam().launch, problem);
  }
};

TEST_P(Sm90_DsmemBulk, OneClusterOneMessage) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

// 1001 messages: many rounds of both buffers, and an odd count (the last round uses one buffer).
TEST_P(Sm90_DsmemBulk, OneClusterManyMessages) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1001});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_DsmemBulk, TheBenchGridAndMoreClustersThanFitAtOnce) {
  const unsigned resident = bulk::resident_clusters();
  const course::Comparison bench_grid = run_shape({resident, kClusterBlocks, 7});
  EXPECT_TRUE(bench_grid.ok()) << bench_grid.summary() << '\n' << bench_grid.first;
  const course::Comparison more = run_shape({2 * resident + 3, kClusterBlocks, 5});
  EXPECT_TRUE(more.ok()) << more.summary() << '\n' << more.first;
}

TEST_P(Sm90_DsmemBulk, RepeatedRunsGiveTheSameBits) {
  bulk::Problem problem({4, kClusterBlocks, 37});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = bulk::verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm90_DsmemBulk, ::testing::ValuesIn(bulk::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm90_DsmemBulkGrid : public course::GpuTest {
 protected:
  Sm90_DsmemBulkGrid() : GpuTest(bulk::chapter_info().requirement) {}
};

// The grid comes from the bulk rings, whose outboxes make them the largest: the st.async ring
// (no outbox) fits at least as many clusters.
TEST_F(Sm90_DsmemBulkGrid, TheBulkRingsFitTheFewestClusters) {
  const unsigned resident = bulk::resident_clusters();
  EXPECT_GE(resident, 1u);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  int stas_clusters = 0, warp_clusters = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&stas_clusters, bulk::push_ring_kernel<bulk::Push::stas>, &config));
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&warp_clusters, bulk::push_ring_kernel<bulk::Push::bulk_warp>, &config));
  EXPECT_GE(static_cast<unsigned>(stas_clusters), resident);
  EXPECT_EQ(static_cast<unsigned>(warp_clusters), resident);
}

// ---- A broken count, stopped by the bounded cluster-scope wait --------------------------------

namespace ptx = cuda::ptx;

// One bulk copy of a whole message into the neighbour, whose receiver announces 16 bytes more:
// "filled" never completes.
__global__ void __cluster_dims__(2, 1, 1) bulk_expect_too_many_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(128) std::uint32_t smem_inbox[kMessageElems];
  __shared__ alignas(128) std::uint32_t smem_outbox[kMessageElems];
  __shared__ std::uint64_t filled_bar;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&filled_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  const unsigned right = ring_right(cluster.block_rank(), cluster.num_blocks());
  for (int k = 0; k < kVecsPerThread; ++k) {
    reinterpret_cast<uint4*>(smem_outbox)[k * kThreads + threadIdx.x] = make_uint4(k, threadIdx.x, 1, 2);
  }
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_shared, cluster.map_shared_rank(smem_inbox, right), smem_outbox,
                       std::uint32_t{kMessageBytes}, cluster.map_shared_rank(&filled_bar, right));
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &filled_bar,
                                         std::uint32_t{kMessageBytes + 16});  // BROKEN: 16 bytes never come
  }
  course::bounded_wait_parity(&filled_bar, 0, {"filled", 0, 0}, ptx::scope_cluster);
  gmem_out[blockIdx.x * kThreads + threadIdx.x] = smem_inbox[threadIdx.x];
  cluster.sync();
}

class Sm90_DsmemBulkBroken : public course::GpuTest {
 protected:
  Sm90_DsmemBulkBroken() : GpuTest(bulk::chapter_info().requirement) {}
};

// Launch without synchronising: the death test's child synchronises and reports.
void launch_too_many(std::uint32_t* gmem_out) {
  bulk_expect_too_many_kernel<<<2, kThreads>>>(gmem_out);
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm90_DsmemBulkBroken, TooManyExpectedBytesIsDiagnosed) {
  course::DeviceBuffer<std::uint32_t> out(2 * kThreads);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_too_many(out.data()),
                               "bounded wait: gave up .*barrier 'filled', stage 0, phase 0", 30.0);
}

}  // namespace
