// Tests for 04_pipeline: the pending-batch count against a model of the commit sequence (and
// the guide's formula, which underflows), what each kernel compiles to, every variant bit-exact
// on the GPU for the batch counts where prime, steady state and drain meet, and a broken
// pipeline that is diagnosed instead of hanging.
#include "pipeline.cu"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The host reference and the size rule -------------------------------------------------

TEST(HostPipeline, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps inside its own batch
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));
}

TEST(HostPipeline, SizeMustBeWholeBatches) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kBatchBytes));
  EXPECT_FALSE(info.size_rule(1007 * kBatchBytes));
  EXPECT_TRUE(info.size_rule(kBatchBytes + 16));
  EXPECT_TRUE(info.size_rule(4096));  // chapter 01's batch is half of this one
}

TEST(HostPipeline, EveryStageCountFrom1To4IsInTheTable) {
  for (const char* flavour : {"cuda_pipeline", "thread_pipeline", "cg_memcpy_async", "pipeline_primitives"}) {
    for (int stages = 1; stages <= 4; ++stages) {
      const std::string name = std::string(flavour) + "_s" + std::to_string(stages);
      int found = 0;
      for (const Variant& v : kVariants) found += (name == v.name && v.stages == stages) ? 1 : 0;
      EXPECT_EQ(found, 1) << name;
    }
  }
}

// ---- How many batches may stay in flight ---------------------------------------------------

// A model of one block's commit sequence. Every fetch of a real batch commits one group; with
// `empty_commits` the prime and the drain also commit a group when nothing is left to fetch.
// For each batch k it asks `pending(k)` how many groups wait_prior may leave in flight, and
// returns the first problem: a count that wrapped around, a wait that does not cover batch k
// (a race), or, with `exact`, a wait that also covers younger batches (lost overlap).
using PendingRule = std::function<std::size_t(std::size_t batch, std::size_t num_batches, int stages)>;
std::string check_waits(std::size_t num_batches, int stages, bool empty_commits, const PendingRule& pending,
                        bool exact = true) {
  std::size_t committed = 0;  // groups committed so far; group g holds batch g while g < num_batches
  for (int s = 0; s < stages; ++s) committed += (empty_commits || std::size_t(s) < num_batches) ? 1 : 0;
  for (std::size_t k = 0; k < num_batches; ++k) {
    const std::size_t allowed = pending(k, num_batches, stages);
    const std::size_t younger = committed - 1 - k;  // groups committed after batch k's
    const std::string where = "batch " + std::to_string(k) + " of " + std::to_string(num_batches) + ", " +
                              std::to_string(stages) + " stages: ";
    if (allowed > num_batches + stages) return where + "pending count wrapped around to " + std::to_string(allowed);
    if (allowed > younger) {
      return where + "wait_prior(" + std::to_string(allowed) + ") leaves the batch in flight (only " +
             std::to_string(younger) + " younger groups)";
    }
    if (exact && allowed < younger) {
      return where + "wait_prior(" + std::to_string(allowed) + ") also waits for younger batches (" +
             std::to_string(younger) + " in flight)";
    }
    if (empty_commits || k + stages < num_batches) ++committed;
  }
  return "";
}

const PendingRule kChapterRule = [](std::size_t k, std::size_t n, int stages) {
  return static_cast<std::size_t>(pending_batches(k, n, stages));
};
const PendingRule kConstantRule = [](std::size_t, std::size_t, int stages) { return std::size_t(stages - 1); };

// The guide's cooperative_groups example (4.11.1.2), transcribed: size_t arithmetic, and
// fetch_batch = compute_batch + num_stages.
std::size_t guide_pending_batches(std::size_t fetch_batch, std::size_t batch_size, std::size_t num_stages) {
  return (fetch_batch < batch_size - num_stages) ? num_stages - 1 : batch_size - fetch_batch - 1;
}
const PendingRule kGuideRule = [](std::size_t k, std::size_t n, int stages) {
  return guide_pending_batches(k + stages, n, stages);
};

// Batch counts where prime, steady state and drain meet: 1, S-1, S, S+1, and many.
std::vector<std::size_t> edge_counts(int stages) {
  std::vector<std::size_t> counts = {1, std::size_t(stages), std::size_t(stages) + 1, 2 * std::size_t(stages) + 1,
                                     1000 + 7};
  if (stages > 1) counts.push_back(stages - 1);
  return counts;
}

TEST(HostPendingBatches, Edges) {
  EXPECT_EQ(pending_batches(0, 1, 4), 0);     // one batch: nothing younger
  EXPECT_EQ(pending_batches(0, 3, 4), 2);     // fewer batches than stages
  EXPECT_EQ(pending_batches(2, 3, 4), 0);     // the last one
  EXPECT_EQ(pending_batches(0, 1007, 4), 3);  // steady state
  EXPECT_EQ(pending_batches(1003, 1007, 4), 3);
  EXPECT_EQ(pending_batches(1004, 1007, 4), 2);  // drain
  EXPECT_EQ(pending_batches(1006, 1007, 4), 0);
  EXPECT_EQ(pending_batches(5, 1007, 1), 0);  // one stage: always wait for everything
}

TEST(HostPendingBatches, ExactForEveryStageCountAndEdge) {
  for (int stages = 1; stages <= 4; ++stages) {
    for (std::size_t n : edge_counts(stages)) EXPECT_EQ(check_waits(n, stages, false, kChapterRule), "");
  }
}

TEST(HostPendingBatches, TheGuidesFormulaUnderflows) {
  // 10 batches, 2 stages, computing batch 8: fetch_batch = 10 and 10 - 10 - 1 wraps around.
  EXPECT_EQ(guide_pending_batches(10, 10, 2), std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(check_waits(10, 2, false, kGuideRule, false),
            "batch 8 of 10, 2 stages: pending count wrapped around to 18446744073709551615");
  // Fewer batches than stages: batch_size - num_stages wraps, the test passes, and the
  // formula answers num_stages - 1 although fewer groups exist: the batch is never waited for.
  EXPECT_EQ(guide_pending_batches(4, 3, 4), 3u);
  EXPECT_EQ(check_waits(3, 4, false, kGuideRule, false),
            "batch 0 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 2 younger groups)");
  // Before the drain it is not exact either: it gives up overlap one stage early.
  EXPECT_EQ(check_waits(10, 2, false, kGuideRule), "batch 7 of 10, 2 stages: wait_prior(0) also waits for "
                                                   "younger batches (1 in flight)");
}

// ---- Why the other flavours commit even when nothing is left to fetch ------------------------

TEST(HostCommitAlways, ConstantWaitPriorIsExactWithEmptyCommits) {
  for (int stages = 1; stages <= 4; ++stages) {
    for (std::size_t n : edge_counts(stages)) EXPECT_EQ(check_waits(n, stages, true, kConstantRule), "");
  }
}

TEST(HostCommitAlways, WithoutEmptyCommitsTheDrainIsNotWaitedFor) {
  EXPECT_EQ(check_waits(10, 4, false, kConstantRule),
            "batch 7 of 10, 4 stages: wait_prior(3) leaves the batch in flight (only 2 younger groups)");
  EXPECT_EQ(check_waits(1, 2, false, kConstantRule),
            "batch 0 of 1, 2 stages: wait_prior(1) leaves the batch in flight (only 0 younger groups)");
  EXPECT_EQ(check_waits(10, 1, false, kConstantRule), "") << "one stage waits for everything anyway";
}

// ---- What the compiler emits (PTX generated by the build) --------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ptx80_ = course::read_text_file(COURSE_PTX_DIR "/pipeline.compute_80.ptx");
    ptx90_ = course::read_text_file(COURSE_PTX_DIR "/pipeline.compute_90.ptx");
  }
  static std::string kernel(const std::string& ptx, const std::string& name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static std::size_t count(const std::string& body, const std::string& text) {
    std::size_t n = 0;
    for (std::size_t pos = body.find(text); pos != std::string::npos; pos = body.find(text, pos + 1)) ++n;
    return n;
  }
  static inline std::string ptx80_, ptx90_;
};

// Mangled names: <flavour>_kernelILi4EE is the kernel with kStages = 4.
const char* const kFlavours[] = {"cuda_pipeline_kernelILi", "thread_pipeline_kernelILi", "cg_memcpy_async_kernelILi",
                                 "pipeline_primitives_kernelILi"};

TEST_F(HostCodegen, EveryFlavourCopiesWithSixteenByteLdgstsOnBothArchitectures) {
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    for (const char* flavour : kFlavours) {
      const std::string k = kernel(*ptx, std::string(flavour) + "4EE");
      EXPECT_TRUE(has(k, "cp.async.cg.shared.global")) << flavour;
      EXPECT_TRUE(has(k, ", 16, 16;")) << flavour;
      EXPECT_FALSE(has(k, "cp.async.bulk")) << flavour << ": a bulk copy";
      EXPECT_FALSE(has(k, "ld.global")) << flavour << " should not copy through registers";
      EXPECT_TRUE(has(k, "st.global.v4.u32")) << flavour << ": 16-byte stores in the compute phase";
    }
  }
}

// cuda::memcpy_async with aligned_size_t<16> becomes a bulk copy on 9.0 when it completes on a
// shared-memory cuda::barrier (chapter 02). Given a cuda::pipeline, libcu++ allows only the
// cp.async group mechanism, so the same call stays LDGSTS.
TEST_F(HostCodegen, OnHopperCudaPipelineStaysLdgsts) {
  const std::string k = kernel(ptx90_, "cuda_pipeline_kernelILi4EE");
  EXPECT_FALSE(has(k, "mbarrier.expect_tx"));
  EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64"));
  EXPECT_TRUE(has(k, "mbarrier.try_wait.parity")) << "9.0 waits with try_wait";
  EXPECT_TRUE(has(kernel(ptx80_, "cuda_pipeline_kernelILi4EE"), "mbarrier.test_wait.parity")) << "8.0 polls";
}

TEST_F(HostCodegen, BlockScopePipelineTracksStagesWithBarriersNotGroups) {
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    const std::string k = kernel(*ptx, "cuda_pipeline_kernelILi4EE");
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive")) << "producer_commit: arrive-on, completes on the full barrier";
    EXPECT_FALSE(has(k, "cp.async.commit_group"));
    EXPECT_FALSE(has(k, "cp.async.wait_group"));
  }
}

TEST_F(HostCodegen, ThreadScopePipelineIsThePrimitivesInDisguise) {
  for (int stages = 1; stages <= 4; ++stages) {
    const std::string s = std::to_string(stages);
    const std::string wait = "cp.async.wait_group " + std::to_string(stages - 1) + ";";
    for (const char* flavour : {"thread_pipeline_kernelILi", "pipeline_primitives_kernelILi"}) {
      const std::string k = kernel(ptx80_, flavour + s + "EE");
      EXPECT_TRUE(has(k, "cp.async.commit_group")) << flavour << s;
      EXPECT_EQ(count(k, "cp.async.wait_group"), 1u) << flavour << s << ": one constant wait";
      EXPECT_TRUE(has(k, wait)) << flavour << s;
      EXPECT_FALSE(has(k, "mbarrier")) << flavour << s;
    }
  }
}

TEST_F(HostCodegen, CooperativeGroupsNeedsARunTimeCountInTheDrain) {
  const std::string k = kernel(ptx80_, "cg_memcpy_async_kernelILi4EE");
  for (int n = 0; n < 4; ++n) EXPECT_TRUE(has(k, "cp.async.wait_group " + std::to_string(n) + ";")) << n;
}

TEST_F(HostCodegen, TheSyncwarpFixIsAWarpBarrierBeforeTheCommit) {
  EXPECT_TRUE(has(kernel(ptx80_, "entangled_commit_kernelILi4ELb1EE"), "bar.warp.sync"));
  EXPECT_FALSE(has(kernel(ptx80_, "entangled_commit_kernelILi4ELb0EE"), "bar.warp.sync"));
  EXPECT_TRUE(has(kernel(ptx80_, "entangled_arrive_kernelILi4ELb1EE"), "bar.warp.sync"));
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm80_Pipeline : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_Pipeline() : GpuTest(chapter_info().requirement) {}
};

// One block does every batch: its own count is the total, so prime, steady state and drain
// meet at exactly the edges, including fewer batches than stages.
TEST_P(Sm80_Pipeline, OneBlockAtEveryEdgeOfTheStageCount) {
  for (std::size_t n : edge_counts(GetParam().stages)) {
    Problem problem(n);
    const course::Comparison result = verify(GetParam(), problem, 1);
    EXPECT_TRUE(result.ok()) << n << " batches: " << result.summary() << '\n' << result.first;
  }
}

// The full grid: 1007 batches over one block per SM give blocks of 7 and 8 batches (on 132 SMs),
// 10007 give 75 and 76, 300 give 2 and 3 (fewer than the stages), 100 leave SMs idle.
TEST_P(Sm80_Pipeline, FullGridWithUnequalBlocks) {
  for (std::size_t n : {std::size_t{100}, std::size_t{300}, std::size_t{1007}, std::size_t{10007}}) {
    Problem problem(n);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << n << " batches: " << result.summary() << '\n' << result.first;
  }
}

TEST_P(Sm80_Pipeline, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(777);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm80_Pipeline, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- A broken pipeline is diagnosed, not hung -------------------------------------------

/// [broken]
// The "one thread commits for the block" mistake: only thread 0 calls producer_commit(). Each
// stage's full barrier expects block.size() arrivals (make_pipeline), gets one, and its phase
// never completes: consumer_wait() would spin forever in mbarrier test/try_wait.
__global__ void one_thread_commits_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                          std::size_t num_batches) {
  constexpr int kStages = 2;
  extern __shared__ uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k) {
    pipe.producer_acquire();
    if (k < num_mine) {
      cuda::memcpy_async(block, smem_stages + (k % kStages) * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    }
    if (block.thread_rank() == 0) pipe.producer_commit();  // BUG: every thread must commit
  };
  for (int s = 0; s < kStages; ++s) fetch(s);
  for (std::size_t k = 0; k < num_mine; ++k) {
    const int stage = static_cast<int>(k % kStages);
    course::bounded_consumer_wait(pipe, {"full", stage, static_cast<unsigned>(k / kStages) & 1u});
    compute_batch(smem_stages + stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();
    fetch(k + kStages);
  }
}
/// [broken]

class Sm80_PipelineDiagnosis : public course::GpuTest {
 protected:
  Sm80_PipelineDiagnosis() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_PipelineDiagnosis, OneThreadCommittingIsDiagnosedNotHung) {
  Problem problem(8);
  COURSE_EXPECT_DIAGNOSED_HANG(
      (launch_pipeline<one_thread_commits_kernel, 2>(problem.gmem_in.data(), problem.gmem_out.data(), 8, 1)),
      "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
