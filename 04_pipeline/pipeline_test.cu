// Tests for 04_pipeline: the model (one block's schedule, the pending-batch count against a
// replay of the commit sequence, the guide's formula and prologue), the concept figure, what
// each kernel of the lesson and the lab compiles to, every variant of the lesson and every row
// of the lab bit-exact on the GPU for the batch counts where prime, steady state and drain meet,
// a broken pipeline that is diagnosed instead of hanging; the grid rule on the CPU, and the
// grids the launchers start, read back from the GPU.
#include "pipeline_lab.cu"      // the lab, which brings the lesson and the model
#include "pipeline_figures.cpp"  // the concept figure

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/codegen.hpp"
#include "course/grid_probe.cuh"
#include "course/testing.hpp"

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
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(1007 * kBatchBytes)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes + 16)) << info.program;
    EXPECT_TRUE(info.size_rule(4096)) << info.program << ": chapter 01's batch is half of this one";
  }
}

TEST(HostPipeline, TheLabRecordsAThreeStageBlockScopePipelineAsItsTimeline) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_FALSE(lesson.timeline) << "a lesson records no timeline";
  ASSERT_TRUE(lab.timeline);
  int found = 0;
  for (const lab::Variant& v : lab::kVariants) {
    found += (lab.timeline_variant == v.name && v.stages == lab::kTimelineStages) ? 1 : 0;
  }
  EXPECT_EQ(found, 1) << lab.timeline_variant << ": the row the recorded kernel stands for";
  EXPECT_FALSE(lab.size_rule(lab.timeline_bytes));
  EXPECT_GE(lab.timeline_bytes / kBatchBytes, 132u * course::timeline::kDefaultIterations)
      << "on an H100 (132 SMs, one block each) every block has at least the recorded number of batches";
}

// ---- The grid rule (chapter 01's) ------------------------------------------------------------

// The kernels' own count of a block's batches (block_batch_count, here on the host) adds up to
// every batch on the lesson's grid, and no block gets none or more than kBatchesPerBlock.
TEST(HostPipelineGrid, EveryBatchHasABlockAndEveryBlockABatch) {
  for (std::size_t num_batches = 1; num_batches <= 70; ++num_batches) {
    const unsigned grid = batch_grid(num_batches, kBatchesPerBlock);
    std::size_t total = 0;
    for (unsigned block = 0; block < grid; ++block) {
      const std::size_t mine = (num_batches - block + grid - 1) / grid;
      EXPECT_GE(mine, 1u) << num_batches << " batches: block " << block << " has none";
      EXPECT_LE(mine, std::size_t{kBatchesPerBlock}) << num_batches << " batches: block " << block;
      total += mine;
    }
    EXPECT_EQ(total, num_batches);
  }
}

// ---- One block's schedule --------------------------------------------------------------------

template <int kS>
void expect_schedule(std::size_t n) {
  const std::vector<PipelineStep> steps = pipeline_schedule<kS>(n);
  ASSERT_EQ(steps.size(), n);
  for (std::size_t k = 0; k < n; ++k) {
    const PipelineStep& s = steps[k];
    const std::string where = std::to_string(kS) + " stages, batch " + std::to_string(k) + " of " + std::to_string(n);
    EXPECT_EQ(s.batch, k) << where;
    EXPECT_EQ(s.stage, static_cast<int>(k % kS)) << where << ": the prime put batch s into stage s";
    EXPECT_EQ(s.phase, static_cast<std::uint32_t>((k / kS) % 2)) << where << ": the round's parity";
    EXPECT_EQ(s.refills, k + kS < n) << where;
    if (s.refills) EXPECT_EQ(s.refill_batch % kS, k % kS) << where << ": the refill lands in the stage just read";
    EXPECT_GE(s.in_flight, 1u) << where << ": the batch waited for is in flight";
    EXPECT_LE(s.in_flight, std::size_t{kS}) << where << ": never more batches than stages";
    // What is in flight besides batch k is exactly what the counted wait may leave pending.
    EXPECT_EQ(s.in_flight - 1, static_cast<std::size_t>(s.wait_counted)) << where;
    EXPECT_EQ(s.wait_commit_always, kS - 1) << where;
  }
}

TEST(HostPipelineSchedule, EveryStageCountAndEdgeWalksTheRingInOrder) {
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{9},
                        std::size_t{1007}}) {
    expect_schedule<1>(n);
    expect_schedule<2>(n);
    expect_schedule<3>(n);
    expect_schedule<4>(n);
  }
}

TEST(HostPipelineSchedule, PrintedTableShowsPrimeSteadyStateAndDrain) {
  std::ostringstream out;
  print_pipeline_schedule<4>(out, 6);
  print_pipeline_schedule<1>(out, 2);
  const std::string text = out.str();
  EXPECT_NE(text.find("one block, 4 stages, 6 batches; the prime fetches batches 0-3 into stages 0-3:\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      0      0      0          4       batch 4             3 / 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      4      0      1          2             -             3 / 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      5      1      1          1             -             3 / 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("one block, 1 stage, 2 batches; the prime fetches batch 0 into stage 0:\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("      1      0      1          1             -             0 / 0\n"), std::string::npos) << text;
}

// ---- How many batches may stay in flight ---------------------------------------------------

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
    for (std::size_t n : edge_counts(stages)) EXPECT_EQ(wait_problem(n, stages, kRealBatchesOnly, chapter_rule), "");
  }
}

TEST(HostPendingBatches, TheGuidesFormulaUnderflows) {
  // 10 batches, 2 stages, computing batch 8: fetch_batch = 10 and 10 - 10 - 1 wraps around.
  EXPECT_EQ(guide_pending_batches(10, 10, 2), std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(wait_problem(10, 2, kRealBatchesOnly, guide_rule, false),
            "batch 8 of 10, 2 stages: pending count wrapped around to 18446744073709551615");
  // Fewer batches than stages: batch_size - num_stages wraps, the test passes, and the
  // formula answers num_stages - 1 although fewer groups exist.
  EXPECT_EQ(guide_pending_batches(4, 3, 4), 3u);
  // Before the drain it is not exact either: it gives up overlap one stage early.
  EXPECT_EQ(wait_problem(10, 2, kRealBatchesOnly, guide_rule), "batch 7 of 10, 2 stages: wait_prior(0) also "
                                                               "waits for younger batches (1 in flight)");
}

// Which batches the guide's formula leaves unwaited when a block has 3 batches and 4 stages
// depends on the prime. The course's prime commits only the 3 batches that exist: batch 0 has
// 2 younger groups, the formula says 3, so it is batch 0 (and every later one) that is never
// waited for. The guide's own prime commits all 4 stages (reading past the end): batch 0 has 3
// younger groups and is waited for exactly; batches 1 and 2 are the ones never waited for.
TEST(HostPendingBatches, WhichBatchesTheGuidesFormulaMissesDependsOnThePrime) {
  EXPECT_EQ(wait_problems(3, 4, kRealBatchesOnly, guide_rule, false),
            (std::vector<std::string>{
                "batch 0 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 2 younger groups)",
                "batch 1 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 1 younger groups)",
                "batch 2 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 0 younger groups)"}));
  EXPECT_EQ(wait_problems(3, 4, kGuidesCgPrime, guide_rule, false),
            (std::vector<std::string>{
                "batch 1 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 2 younger groups)",
                "batch 2 of 3, 4 stages: wait_prior(3) leaves the batch in flight (only 1 younger groups)"}));
  // With enough batches the two primes commit the same groups, and the formula's problem is the
  // wrap-around in the drain either way.
  EXPECT_EQ(wait_problem(10, 2, kGuidesCgPrime, guide_rule, false),
            wait_problem(10, 2, kRealBatchesOnly, guide_rule, false));
}

// ---- Why the other flavours commit even when nothing is left to fetch ------------------------

TEST(HostCommitAlways, ConstantWaitPriorIsExactWithEmptyCommits) {
  for (int stages = 1; stages <= 4; ++stages) {
    for (std::size_t n : edge_counts(stages)) EXPECT_EQ(wait_problem(n, stages, kCommitAlways, constant_rule), "");
  }
}

TEST(HostCommitAlways, WithoutEmptyCommitsTheDrainIsNotWaitedFor) {
  EXPECT_EQ(wait_problem(10, 4, kRealBatchesOnly, constant_rule),
            "batch 7 of 10, 4 stages: wait_prior(3) leaves the batch in flight (only 2 younger groups)");
  EXPECT_EQ(wait_problem(1, 2, kRealBatchesOnly, constant_rule),
            "batch 0 of 1, 2 stages: wait_prior(1) leaves the batch in flight (only 0 younger groups)");
  EXPECT_EQ(wait_problem(10, 1, kRealBatchesOnly, constant_rule), "") << "one stage waits for everything anyway";
}

// ---- The concept figure and the program that draws it ----------------------------------------

TEST(HostFigures, CommittedSvgIsWhatTheModelDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

// The figure shows the model's state: each batch's dark bar (from its wait to its release) sits
// in its stage's row, in the colour of the parity its wait checks. Batch 4 refills stage 0 in
// round 1, batch 9 is in stage 1 in round 2 (parity 0 again). It scales to its column and has an
// opaque background.
TEST(HostFigures, DrawsEachBatchInItsStageAndParity) {
  const std::string svg = in_flight_svg();
  EXPECT_NE(svg.find("viewBox=\"0 0 720 "), std::string::npos);
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos);
  EXPECT_EQ(svg.find("<rect x=\"0\" y=\"0\" width=\"720\""), svg.find("<rect")) << "an opaque background first";
  const auto dark_bar_of = [&](std::size_t batch) {
    const std::size_t label = svg.find("fill=\"#ffffff\">" + std::to_string(batch) + "</text>");
    EXPECT_NE(label, std::string::npos) << "batch " << batch;
    const std::size_t rect = svg.rfind("<rect", label);
    return svg.substr(rect, svg.find('>', rect) - rect);
  };
  for (const PipelineStep& s : pipeline_schedule<kFigureStages>(kFigureBatches)) {
    const std::string bar = dark_bar_of(s.batch);
    EXPECT_NE(bar.find("y=\"" + std::to_string(104 + 40 * s.stage + 8) + "\""), std::string::npos)
        << "batch " << s.batch << " in stage " << s.stage << ": " << bar;
    EXPECT_NE(bar.find(s.phase == 0 ? "#2171b5" : "#c44100"), std::string::npos)
        << "batch " << s.batch << ", parity " << s.phase << ": " << bar;
  }
  EXPECT_NE(dark_bar_of(4).find("#c44100"), std::string::npos) << "round 1";
  EXPECT_NE(dark_bar_of(9).find("y=\"152\""), std::string::npos) << "stage 1";
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ----------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* arch : {"80", "90"}) {
      lesson_[arch] = course::chapter_ptx("pipeline", arch);
      lab_[arch] = course::chapter_ptx("pipeline_lab", arch);
    }
  }
  // A kernel of the lesson's PTX by a part of its mangled name (kKernels below).
  static std::string lesson_kernel(const std::string& arch, const std::string& part) {
    const std::string body = course::ptx_kernel_body(lesson_.at(arch), part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in pipeline.compute_" << arch << ".ptx";
    return body;
  }
  static std::string lab_kernel(const std::string& arch, const std::string& part) {
    const std::string body = course::ptx_kernel_body(lab_.at(arch), part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in pipeline_lab.compute_" << arch << ".ptx";
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static inline std::map<std::string, std::string> lesson_, lab_;
};

// Mangled-name parts of the lesson's kernels and of the lab's own and instantiated ones.
const char* const kMinimal = "23minimal_pipeline_kernelPKj";
const char* const kCudaPipeline4 = "20cuda_pipeline_kernelILi4E8NoEventsLi0EE";
const char* const kCudaPipeline3 = "20cuda_pipeline_kernelILi3E8NoEventsLi0EE";
const char* const kCudaPipelineRecorded = "20cuda_pipeline_kernelILi3EN3lab13Thread0EventsELi0EE";
const char* const kCg4 = "22cg_memcpy_async_kernelILi4EE";
const char* const kCg1 = "22cg_memcpy_async_kernelILi1EE";
const char* const kPrimitives = "26pipeline_primitives_kernelPKj";
const char* const kThreadPipeline = "3lab22thread_pipeline_kernel";
const char* const kLessonKernels[] = {kMinimal, kCudaPipeline4, kCg4, kPrimitives};

// Every kernel copies with 16-byte LDGSTS that bypass L1 (cp.async.cg), and its compute phase
// stores 16 bytes per thread; nothing goes through registers, nothing is a bulk copy.
TEST_F(HostCodegen, EveryKernelCopiesWithSixteenByteLdgstsOnBothArchitectures) {
  const std::string ldgsts16 = R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)";
  for (const char* arch : {"80", "90"}) {
    std::vector<std::pair<std::string, std::string>> kernels;
    for (const char* k : kLessonKernels) kernels.push_back({k, lesson_kernel(arch, k)});
    for (const char* k : {kCudaPipeline3, kCg1, kThreadPipeline}) kernels.push_back({k, lab_kernel(arch, k)});
    for (const auto& [name, k] : kernels) {
      const std::string where = name + ", compute_" + arch;
      EXPECT_GE(course::count_matches(k, ldgsts16), 1) << where;
      EXPECT_FALSE(has(k, "cp.async.bulk")) << where << ": a bulk copy";
      EXPECT_FALSE(has(k, "ld.global")) << where << " should not copy through registers";
      EXPECT_TRUE(has(k, "st.global.v4.u32")) << where << ": 16-byte stores in the compute phase";
    }
  }
}

// The stages start on a 128-byte line: dynamic shared memory declared .align 128 begins after the
// static pipeline_shared_state on a 128-byte boundary, not 16 bytes past the state's end.
TEST_F(HostCodegen, DynamicSharedMemoryIsDeclaredOnA128ByteLine) {
  for (const char* arch : {"80", "90"}) {
    for (const auto* ptx : {&lesson_.at(arch), &lab_.at(arch)}) {
      EXPECT_TRUE(has(*ptx, ".extern .shared .align 128 .b8 smem_dynamic[]")) << "compute_" << arch;
      EXPECT_FALSE(has(*ptx, ".extern .shared .align 16 .b8 smem_dynamic[]")) << "compute_" << arch;
    }
  }
}

// cuda::memcpy_async with aligned_size_t<16> becomes a bulk copy on 9.0 when it completes on a
// shared-memory cuda::barrier (chapter 02). Given a cuda::pipeline, libcu++ allows only the
// cp.async group mechanism, so the same call stays LDGSTS: no cp.async.bulk anywhere.
TEST_F(HostCodegen, OnHopperCudaPipelineStaysLdgsts) {
  for (const char* name : {kMinimal, kCudaPipeline4}) {
    const std::string k = lesson_kernel("90", name);
    EXPECT_FALSE(has(k, "mbarrier.expect_tx")) << name;
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << name;
    EXPECT_TRUE(has(k, "mbarrier.try_wait.parity")) << name << ": 9.0 waits with try_wait";
    EXPECT_TRUE(has(lesson_kernel("80", name), "mbarrier.test_wait.parity")) << name << ": 8.0 polls";
  }
  for (const char* arch : {"80", "90"}) {
    EXPECT_FALSE(has(lesson_.at(arch), "cp.async.bulk")) << "pipeline.compute_" << arch << ".ptx";
    EXPECT_FALSE(has(lab_.at(arch), "cp.async.bulk")) << "pipeline_lab.compute_" << arch << ".ptx";
  }
}

// producer_commit() of the block-scope pipeline: cp.async.mbarrier.arrive (the arrive-on, which
// completes on the stage's full barrier when this thread's copies land) plus an arrive.
TEST_F(HostCodegen, BlockScopePipelineTracksStagesWithBarriersNotGroups) {
  for (const char* arch : {"80", "90"}) {
    const std::string kernels[] = {lesson_kernel(arch, kMinimal), lesson_kernel(arch, kCudaPipeline4),
                                   lab_kernel(arch, kCudaPipeline3)};
    for (const std::string& k : kernels) {
      EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << "producer_commit: arrive-on, on the full barrier";
      EXPECT_FALSE(has(k, "cp.async.commit_group"));
      EXPECT_FALSE(has(k, "cp.async.wait_group"));
    }
  }
}

// cp.async.commit_group closes this thread's group of copies; cp.async.wait_group N waits until
// at most N of its groups are pending. The guide's thread-scope pipeline and the primitives
// give the same: one constant wait, S - 1, and no barrier.
TEST_F(HostCodegen, ThreadScopePipelineIsThePrimitivesInDisguise) {
  const std::string wait = "cp.async.wait_group " + std::to_string(kStages - 1) + ";";
  const std::pair<const char*, std::string> kernels[] = {{kThreadPipeline, lab_kernel("80", kThreadPipeline)},
                                                         {kPrimitives, lesson_kernel("80", kPrimitives)}};
  for (const auto& [name, k] : kernels) {
    EXPECT_TRUE(has(k, "cp.async.commit_group")) << name;
    EXPECT_EQ(course::count_matches(k, R"(cp\.async\.wait_group)"), 1) << name << ": one wait";
    EXPECT_TRUE(has(k, wait)) << name;
    EXPECT_FALSE(has(k, "mbarrier")) << name;
  }
}

TEST_F(HostCodegen, CooperativeGroupsNeedsARunTimeCountInTheDrain) {
  const std::string k = lesson_kernel("80", kCg4);
  for (int n = 0; n < kStages; ++n) EXPECT_TRUE(has(k, "cp.async.wait_group " + std::to_string(n) + ";")) << n;
}

TEST_F(HostCodegen, TheSyncwarpFixIsAWarpBarrierBeforeTheCommit) {
  EXPECT_TRUE(has(lab_kernel("80", "entangled_commit_kernelILi4ELb1E"), "bar.warp.sync"));
  EXPECT_FALSE(has(lab_kernel("80", "entangled_commit_kernelILi4ELb0E"), "bar.warp.sync"));
  EXPECT_TRUE(has(lab_kernel("80", "entangled_arrive_kernelILi4ELb1E"), "bar.warp.sync"));
  EXPECT_FALSE(has(lab_kernel("80", "entangled_arrive_kernelILi4ELb0E"), "bar.warp.sync"));
}

// The timeline instantiates the lesson's kernel with recording hooks; the lesson's own
// instantiation (NoEvents) reads no SM id and touches no recorder: the hooks compile away.
// (The clock is no marker: the bounded wait reads %globaltimer too.)
TEST_F(HostCodegen, OnlyTheRecordedInstantiationRecords) {
  for (const char* arch : {"80", "90"}) {
    for (const std::string& k : {lesson_kernel(arch, kCudaPipeline4), lab_kernel(arch, kCudaPipeline3)}) {
      EXPECT_FALSE(has(k, "%smid")) << arch;
      EXPECT_FALSE(has(k, "g_recorder")) << arch;
    }
    EXPECT_TRUE(has(lab_kernel(arch, kCudaPipelineRecorded), "%smid")) << arch;
    EXPECT_TRUE(has(lab_kernel(arch, kCudaPipelineRecorded), "g_recorder")) << arch;
  }
}

// The machine code on 9.0 (this executable's sm_90 code; skipped where cuobjdump or that code is
// missing). LDGSTS.E.BYPASS.128 is the 16-byte cp.async.cg. The primitives track batches with
// LDGDEPBAR (commit_group) and DEPBAR.LE SB0, 0x3 (wait_group 3: at most three of this thread's
// groups still pending). The block-scope cuda::pipeline completes them on its stage barriers with
// the arrive-on (ARRIVES.LDGSTSBAR.64) and waits on those barriers (SYNCS.PHASECHK).
// cuda::pipeline never takes the bulk-copy path: no UBLKCP anywhere.
TEST_F(HostCodegen, MachineCodeOnHopperIsLdgstsWithGroupsOrBarriers) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto kernel = [&](const std::string& part) {
    const std::string body = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in the sm_90 machine code";
    return body;
  };
  for (const char* k : kLessonKernels) {
    EXPECT_GE(course::count_matches(kernel(k), R"(LDGSTS\.E\.BYPASS\.128)"), 1) << k;
  }
  for (const char* k : {kPrimitives, kThreadPipeline}) {
    EXPECT_GE(course::count_matches(kernel(k), "LDGDEPBAR"), 1) << k;
    EXPECT_GE(course::count_matches(kernel(k), R"(DEPBAR\.LE SB0, 0x3)"), 1) << k;
  }
  for (const char* k : {kMinimal, kCudaPipeline4}) {
    EXPECT_GE(course::count_matches(kernel(k), R"(ARRIVES\.LDGSTSBAR\.64)"), 1) << k;
    EXPECT_GE(course::count_matches(kernel(k), R"(SYNCS\.PHASECHK)"), 1) << k;
  }
  EXPECT_EQ(course::count_matches(sass, "UBLKCP"), 0);
}

// ---- On the GPU --------------------------------------------------------------------------

// A lesson variant or a lab row, with its stage count.
struct Case {
  std::string name;
  Launch launch;
  int stages;
};
void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

std::vector<Case> lesson_cases() {
  std::vector<Case> cases;
  for (const Variant& v : kVariants) cases.push_back({v.name, v.launch, v.stages});
  return cases;
}
std::vector<Case> lab_cases() {
  std::vector<Case> cases;
  for (const lab::Variant& v : lab::kVariants) cases.push_back({v.name, v.launch, v.stages});
  return cases;
}

class Sm80_Pipeline : public course::GpuTest, public ::testing::WithParamInterface<Case> {
 protected:
  Sm80_Pipeline() : GpuTest(chapter_info().requirement) {}
};

// One block does every batch: its own count is the total, so prime, steady state and drain
// meet at exactly the edges, including fewer batches than stages.
TEST_P(Sm80_Pipeline, OneBlockAtEveryEdgeOfTheStageCount) {
  for (std::size_t n : edge_counts(GetParam().stages)) {
    Problem problem(n);
    const course::Comparison result = verify(GetParam().launch, problem, 1);
    EXPECT_TRUE(result.ok()) << n << " batches: " << result.summary() << '\n' << result.first;
  }
}

// The full grid. The lesson's (four batches per block): 1007, 10007 and 300 batches leave a last
// block of 3, 3 and 4, 100 fill 25 blocks. The resident row's (one block per SM): 1007 batches give
// blocks of 7 and 8 (on 132 SMs), 10007 give 75 and 76, 300 give 2 and 3, 100 leave SMs idle.
TEST_P(Sm80_Pipeline, FullGridWithUnequalBlocks) {
  for (std::size_t n : {std::size_t{100}, std::size_t{300}, std::size_t{1007}, std::size_t{10007}}) {
    Problem problem(n);
    const course::Comparison result = verify(GetParam().launch, problem);
    EXPECT_TRUE(result.ok()) << n << " batches: " << result.summary() << '\n' << result.first;
  }
}

TEST_P(Sm80_Pipeline, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(777);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

const auto kCaseName = [](const auto& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_Pipeline, ::testing::ValuesIn(lesson_cases()), kCaseName);
INSTANTIATE_TEST_SUITE_P(Lab, Sm80_Pipeline, ::testing::ValuesIn(lab_cases()), kCaseName);

// The launchers' grids, read back from the device: the lesson's has batch_grid's blocks, capped
// by max_blocks; the lab's resident one has one block per SM.
class Sm80_PipelineGrid : public course::GpuTest {
 protected:
  Sm80_PipelineGrid() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_PipelineGrid, TheLessonKeepsTheBytesInFlightThisGpuNeeds) {
  ASSERT_TRUE(chapter_info().in_flight.has_value());
  course::expect_enough_in_flight(*chapter_info().in_flight, device());
}

TEST_F(Sm80_PipelineGrid, TheLessonLaunchesTheBatchGridTheResidentRowOneBlockPerSm) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{10007}}) {
    EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel, kStages>, num_batches, 0), batch_grid(num_batches, kBatchesPerBlock))
        << num_batches << " batches";
  }
  EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel, kStages>, 10007, 3), 3u) << "max_blocks caps the grid";
  const unsigned num_sms = static_cast<unsigned>(device().sm_count);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel, kStages>, 10007, 0), num_sms);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel, kStages>, 3, 0), 3u);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel, kStages>, 10007, 2), 2u);
}

// ---- A broken pipeline is diagnosed, not hung -------------------------------------------

/// [broken]
// The "one thread commits for the block" mistake: only thread 0 calls producer_commit(). Each
// stage's full barrier expects block.size() arrivals (make_pipeline), gets one, and its phase
// never completes: consumer_wait() would spin forever in mbarrier test/try_wait.
__global__ void one_thread_commits_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                          std::size_t num_batches) {
  constexpr int kBrokenStages = 2;
  extern __shared__ __align__(128) uint4 smem_dynamic[];
  std::uint32_t* smem_stages = reinterpret_cast<std::uint32_t*>(smem_dynamic);
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kBrokenStages> pipe_state;
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &pipe_state);  // block.size() each
  const std::size_t num_mine = block_batch_count(num_batches);
  auto fetch = [&](std::size_t k, int stage) {
    pipe.producer_acquire();  // the stage's empty barrier: free in the first round
    if (k < num_mine) {
      cuda::memcpy_async(block, smem_stages + stage * kBatchElems, gmem_in + block_batch(k) * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
    }
    if (block.thread_rank() == 0) pipe.producer_commit();  // BUG: every thread must commit
  };
  for (int s = 0; s < kBrokenStages; ++s) fetch(s, s);
  course::StageCursor<kBrokenStages> cursor;
  for (std::size_t k = 0; k < num_mine; ++k, cursor.advance()) {
    course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // gets 1 of block.size(): stuck
    compute_batch(smem_stages + cursor.stage * kBatchElems, gmem_out + block_batch(k) * kBatchElems);
    pipe.consumer_release();  // never reached
    fetch(k + kBrokenStages, cursor.stage);
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
      (launch_batch_grid<one_thread_commits_kernel, 2>(problem.gmem_in.data(), problem.gmem_out.data(), 8, 1)),
      "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}


// ---- The timeline (--timeline): the recorded pipeline is right, and so are its events -------

class Sm80_PipelineTimeline : public course::GpuTest {
 protected:
  Sm80_PipelineTimeline() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_PipelineTimeline, EveryRecordedBatchMakesARoundTripAndTheNextIsInFlightBeforeItsRelease) {
  using course::timeline::Event;
  using course::timeline::Kind;
  constexpr std::size_t kNumBatches = 4096;
  Problem problem(kNumBatches);
  const lab::TimelineRun run = lab::record_cuda_pipeline(problem, 4, 16);
  ASSERT_TRUE(run.result.ok()) << run.result.summary() << '\n' << run.result.first;
  EXPECT_EQ(course::timeline::round_trip_problems(run.events, lab::kTimelineStages), "");
  for (std::uint32_t block = 0; block < 4; ++block) {
    const std::size_t mine = (kNumBatches - block + run.grid - 1) / run.grid;
    const std::size_t recorded = std::min<std::size_t>(mine, 16);
    for (const Kind kind : {Kind::issue, Kind::land, Kind::consume, Kind::release}) {
      const auto n = std::count_if(run.events.begin(), run.events.end(), [&](const Event& e) {
        return e.block == block && e.kind == static_cast<std::uint32_t>(kind);
      });
      EXPECT_EQ(static_cast<std::size_t>(n), recorded) << "block " << block << ", kind " << static_cast<int>(kind);
    }
    // Batch k + 1 was issued at the prime or at the release of batch k + 1 - 3: before batch k's release.
    for (const Event& next : run.events) {
      if (next.block != block || next.kind != static_cast<std::uint32_t>(Kind::issue) || next.iteration == 0) continue;
      for (const Event& e : run.events) {
        if (e.block == block && e.iteration + 1 == next.iteration &&
            e.kind == static_cast<std::uint32_t>(Kind::release)) {
          EXPECT_LE(next.t_ns, e.t_ns) << "block " << block << ": batch " << next.iteration;
        }
      }
    }
  }
}

TEST_F(Sm80_PipelineTimeline, WritesTheCsvTheScriptDraws) {
  course::Options opts;
  opts.size_bytes = 2048 * kBatchBytes;
  opts.timeline = ::testing::TempDir() + "pipeline_timeline.csv";
  std::ostringstream log;
  lab::write_timeline(opts, log);
  std::ifstream file(opts.timeline);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("# timeline: pipeline_lab, variant cuda_pipeline_s3, size 16777216 bytes", 0), 0u)
      << text.str().substr(0, 200);
  EXPECT_NE(text.str().find("\nblock,sm,role,stage,iteration,kind,t_ns\n"), std::string::npos);  // rows in time order
  EXPECT_NE(text.str().find(",producer,0,0,issue,"), std::string::npos);
  EXPECT_NE(log.str().find("events written to " + opts.timeline), std::string::npos) << log.str();
}

}  // namespace
