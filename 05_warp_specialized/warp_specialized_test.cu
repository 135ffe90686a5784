// Tests for 05_warp_specialized: the ring of buffers run on host models of its barriers (order,
// depth, parities, and the arrival counts and parity that deadlock it), the producer's copy plan
// against the guide's, what each kernel of the lesson and the lab compiles to, every variant of
// the lesson and every row of the lab bit-exact on the GPU, a broken kernel stopped by a
// bounded wait; the grid rule on the CPU, and the grids the launchers start, read back from the GPU.
#include "warp_specialized_lab.cu"  // the lab, which brings the lesson and the model
#include "warp_specialized_figures.cpp"  // the concept figure's program

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/grid_probe.cuh"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The ring, on host models of its barriers ------------------------------------------------

template <int kS>
void expect_ring_in_order(int num_batches) {
  const RingRun run = run_ring<kS>(num_batches);
  const std::string where = std::to_string(kS) + " buffers, " + std::to_string(num_batches) + " batches";
  ASSERT_EQ(run.problem, "") << where;
  ASSERT_EQ(run.steps.size(), 2u * num_batches) << where << ": every batch filled once and taken once";
  int filled = 0, taken = 0, deepest = 0;
  for (const RingStep& step : run.steps) {
    // Batch b lives in buffer b % kS, in the round of parity (b / kS) % 2, for both roles.
    EXPECT_EQ(step.stage, step.batch % kS) << where << ", batch " << step.batch;
    EXPECT_EQ(step.phase, static_cast<std::uint32_t>((step.batch / kS) % 2)) << where << ", batch " << step.batch;
    EXPECT_EQ(step.batch, step.fill ? filled++ : taken++) << where << ": in order";
    deepest = std::max(deepest, filled - taken);
  }
  // The barriers let the producer run exactly kS batches ahead of the consumers, and no further.
  EXPECT_EQ(deepest, std::min(kS, num_batches)) << where;
}

TEST(HostRing, EveryBatchGoesThroughItsBufferInOrderAndTheProducerRunsRingDeepAhead) {
  for (int batches : {1, 2, 3, 4, 5, 7, 64}) {
    expect_ring_in_order<1>(batches);
    expect_ring_in_order<2>(batches);
    expect_ring_in_order<3>(batches);
    expect_ring_in_order<4>(batches);
  }
}

TEST(HostRing, OneBufferAlternatesFillAndTake) {
  const RingRun run = run_ring<1>(4);
  ASSERT_EQ(run.problem, "");
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    EXPECT_EQ(run.steps[i].fill, i % 2 == 0) << "step " << i << ": nothing overlaps inside a block";
    EXPECT_EQ(run.steps[i].phase, static_cast<std::uint32_t>(run.steps[i].batch % 2)) << "the phase flips every batch";
  }
}

TEST(HostRing, PrintedModelShowsTheCountsTheWalkAndTheOrder) {
  std::ostringstream out;
  print_ring_model<2>(out);
  const std::string text = out.str();
  EXPECT_NE(text.find("full_bar[stage]  expects 32 arrivals"), std::string::npos) << text;
  EXPECT_NE(text.find("empty_bar[stage] expects 4 arrivals"), std::string::npos) << text;
  EXPECT_NE(text.find("with 2 buffers: 0->{0,0} 1->{1,0} 2->{0,1} 3->{1,1} 4->{0,0}\n"), std::string::npos) << text;
  EXPECT_NE(text.find(": fill 0, fill 1, take 0, fill 2, take 1, fill 3, take 2, fill 4, take 3, take 4\n"),
            std::string::npos)
      << text;
  std::ostringstream one;
  print_ring_walk<1>(one);
  EXPECT_NE(one.str().find("with 1 buffer: 0->{0,0} 1->{0,1} 2->{0,0}"), std::string::npos) << one.str();
  EXPECT_NE(one.str().find(": fill 0, take 0, fill 1, take 1,"), std::string::npos) << one.str();
}

// ---- The arrival counts and the parity, on the same model -----------------------------------

TEST(HostArrivalCounts, TheKernelsCountsNeverDeadlock) {
  for (int batches : {1, 2, 3, 7, 64}) {
    EXPECT_EQ(run_ring<1>(batches).problem, "") << batches << " batches";
    EXPECT_EQ(run_ring<2>(batches).problem, "") << batches << " batches";
    EXPECT_EQ(run_ring<3>(batches).problem, "") << batches << " batches";
    EXPECT_EQ(run_ring<4>(batches).problem, "") << batches << " batches";
  }
}

TEST(HostArrivalCounts, TheGuidesBlockSizeCountNeverCompletesFull) {
  // The guide's primitives version initialises every barrier with block.size(), because there
  // every thread arrives on every barrier. Here only the producer lanes arrive on full_bar.
  RingProtocol guide;
  guide.full_arrivals = kBlockThreads;
  EXPECT_EQ(run_ring<2>(2, guide).problem, "stuck: consumers wait on 'full' stage 0 phase 0");
}

TEST(HostArrivalCounts, OneArrivalPerConsumerThreadLeavesTheProducerWaiting) {
  // empty_bar counts warps; counting threads would stall the producer's second round.
  RingProtocol per_thread;
  per_thread.empty_arrivals = kConsumerThreads;
  EXPECT_EQ(run_ring<2>(3, per_thread).problem,
            "stuck: producer waits on 'empty' stage 0 parity 0, consumers wait on 'full' stage 0 phase 1");
}

TEST(HostArrivalCounts, WaitingForTheCursorsOwnPhaseOnEmptyStallsTheFirstFill) {
  // The producer must wait for the phase *before* its cursor's: a fresh barrier counts that one
  // as complete. Waiting for the cursor's own parity waits for a release nobody can make yet.
  RingProtocol same_parity;
  same_parity.producer_waits_phase_before = false;
  EXPECT_EQ(run_ring<2>(2, same_parity).problem,
            "stuck: producer waits on 'empty' stage 0 parity 0, consumers wait on 'full' stage 0 phase 0");
}

// ---- The producer's copy plan -------------------------------------------------------------

TEST(HostCopyPlan, EveryBufferElementOnceFromItsBatch) {
  for (std::size_t batch : {0u, 1u, 2u, 3u, 1001u}) {
    EXPECT_EQ(plan_problem(chapter_plan, batch, kStages), "") << "batch " << batch;
    for (int stages = 1; stages <= 4; ++stages) EXPECT_EQ(plan_problem(chapter_plan, batch, stages), "") << stages;
  }
}

TEST(HostCopyPlan, CatchesTheGuidesThirtyTwoElementsPerBatch) {
  EXPECT_EQ(plan_problem(guide_pipeline_plan, 0, kStages),
            "batch 0: 2016 of 2048 elements of its buffer never written");
}

TEST(HostCopyPlan, CatchesTheGuidesBufferIndexedByBatch) {
  EXPECT_EQ(plan_problem(guide_primitives_plan, 1, kStages),
            "batch 1: 2016 of 2048 elements of its buffer never written");
  EXPECT_EQ(plan_problem(guide_primitives_plan, 2, kStages),
            "batch 2 writes element 4096, past the 2 buffers (4096 elements)");
}

// ---- The guide's 4.11.1.3 kernels: a single warp deadlocks, the tail is dropped -------------

TEST(HostGuideKernels, ThePipelineVersionWithOneWarpNeverCompletes) {
  // make_pipeline(block, &state, 32) with a block of one warp: no consumer thread, so nobody ever
  // releases a stage, and the producer's acquire for the third batch waits forever.
  EXPECT_EQ(run_guide_pipeline(1, 3), "stuck: producer_acquire of batch 2 (stage 0) waits for a release");
  EXPECT_EQ(run_guide_pipeline(1, 64), "stuck: producer_acquire of batch 2 (stage 0) waits for a release");
  EXPECT_EQ(run_guide_pipeline(1, 2), "") << "two batches fit the two stages: no acquire has to wait";
  for (int warps : {2, 5, 32}) {
    for (int batches : {1, 2, 3, 7, 64}) {
      EXPECT_EQ(run_guide_pipeline(warps, batches), "") << warps << " warps, " << batches << " batches";
    }
  }
}

TEST(HostGuideKernels, TheGuidesBatchCountDropsTheTailWhichTheChapterRefuses) {
  constexpr std::size_t kElems = 5 * kBatchElems + 100;  // not a multiple of the batch
  EXPECT_EQ(guide_elements_processed(kElems, kBatchElems), 5u * kBatchElems) << "100 elements never processed";
  EXPECT_EQ(guide_elements_processed(5 * kBatchElems, kBatchElems), 5u * kBatchElems);
  EXPECT_EQ(guide_elements_processed(kBatchElems - 1, kBatchElems), 0u) << "less than one batch: nothing at all";
  // The chapter refuses such a size with one line instead of dropping its tail.
  const std::optional<std::string> refused = chapter_info().size_rule(kElems * sizeof(std::uint32_t));
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("whole number of 8 KiB batches"), std::string::npos) << *refused;
}

// ---- The concept figure, and the program that draws it -------------------------------------

TEST(HostFigures, CommittedHandoffSvgIsWhatTheModelDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, TheHandoffShowsEachWaitAndArrivalOfTheRing) {
  const std::string svg = handoff_svg<2>(5);
  EXPECT_NE(svg.find("viewBox=\"0 0 720 "), std::string::npos);
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos);
  // Round 0 passes the producer's waits at once; round 1 waits for the consumers' releases.
  EXPECT_NE(svg.find("fill batch 0: stage 0, phase 0"), std::string::npos);
  EXPECT_NE(svg.find("wait empty_bar[0], parity 1 (fresh: passes)"), std::string::npos);
  EXPECT_NE(svg.find("fill batch 2: stage 0, phase 1"), std::string::npos);
  EXPECT_NE(svg.find("wait empty_bar[0], parity 0</text>"), std::string::npos);
  EXPECT_NE(svg.find("take batch 3: stage 1, phase 1"), std::string::npos);
  EXPECT_NE(svg.find("wait full_bar[1], parity 1"), std::string::npos);
  // One solid arrow per batch (full_bar), one dashed per refill (empty_bar): 5 and 3.
  EXPECT_EQ(course::count_matches(svg, "<line [^>]*marker-end"), 5 + 3 + 2) << "with the legend's two";
  EXPECT_EQ(course::count_matches(svg, "<line [^>]*stroke-dasharray"), 3 + 1);
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- Reference and command line -------------------------------------------------------------

TEST(HostWarpSpecialized, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps to the end of its own batch
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));
}

TEST(HostWarpSpecialized, SizeMustBeWholeBatches) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(1000 * kBatchBytes)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes / 2)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes + 16)) << info.program;
  }
}

TEST(HostWarpSpecialized, TheLabRecordsTheLessonsMbarrierRingAsItsTimeline) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_FALSE(lesson.timeline) << "a lesson records no timeline";
  ASSERT_TRUE(lab.timeline);
  EXPECT_EQ(lab.timeline_variant, "mbarrier_2stage_resident");
  EXPECT_EQ(std::count_if(std::begin(lab::kVariants), std::end(lab::kVariants),
                          [&](const Variant& v) { return lab.timeline_variant == v.name; }),
            1);
  EXPECT_FALSE(lab.size_rule(lab.timeline_bytes));
  // 160 threads per block: at most 12 blocks of an SM's 2048 threads; an H100 has 132 SMs.
  EXPECT_GE(lab.timeline_bytes / kBatchBytes, 132u * (2048 / kBlockThreads) * course::timeline::kDefaultIterations)
      << "every block of a full H100 grid has at least the recorded number of batches";
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ----------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* arch : {"80", "90"}) {
      lesson_[arch] = course::chapter_ptx("warp_specialized", arch);
      lab_[arch] = course::chapter_ptx("warp_specialized_lab", arch);
    }
  }
  // A kernel template with its buffer count: the lesson's (2 buffers) or the lab's (1 and 4).
  static std::string kernel(const std::string& arch, const std::string& name, int stages) {
    const std::string& ptx = (stages == kStages ? lesson_ : lab_).at(arch);
    const std::string part = std::to_string(name.size()) + name + "ILi" + std::to_string(stages) + "EE";
    const std::string body = course::ptx_kernel_body(ptx, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " for compute_" << arch;
    return body;
  }
  static std::vector<std::string> every(const std::string& arch, const std::string& name) {
    return {kernel(arch, name, 1), kernel(arch, name, kStages), kernel(arch, name, 4)};
  }
  static std::string minimal(const std::string& arch) {
    const std::string body = course::ptx_kernel_body(lesson_.at(arch), "14minimal_kernelPKj");
    EXPECT_FALSE(body.empty()) << "no minimal_kernel for compute_" << arch;
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static inline std::map<std::string, std::string> lesson_, lab_;
};

// The pipeline and raw versions copy with 16-byte LDGSTS that bypass L1 (cp.async.cg), also on
// 9.0: cuda::pipeline allows no bulk-copy completion, and the raw version issues LDGSTS itself.
TEST_F(HostCodegen, PipelineAndRawCopyWithSixteenByteLdgstsOnBothArchitectures) {
  for (const char* arch : {"80", "90"}) {
    for (const char* name : {"pipeline_kernel", "mbarrier_kernel"}) {
      for (const std::string& k : every(arch, name)) {
        EXPECT_GE(course::count_matches(k, R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)"), 1) << name << arch;
        EXPECT_FALSE(has(k, "cp.async.bulk")) << name << arch << ": cuda::pipeline allows no bulk-copy completion";
        EXPECT_FALSE(has(k, "ld.global")) << name << arch << " should not copy through registers";
      }
    }
  }
}

// The minimal kernel's cuda::memcpy_async into a cuda::barrier: LDGSTS completing on the barrier
// on 8.0, a bulk copy (one lane, counted in bytes) on 9.0, as chapter 02 showed.
TEST_F(HostCodegen, TheMinimalKernelCopiesWithLdgstsOn80AndABulkCopyOn90) {
  const std::string k80 = minimal("80"), k90 = minimal("90");
  EXPECT_GE(course::count_matches(k80, R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)"), 1);
  EXPECT_TRUE(has(k80, "cp.async.mbarrier.arrive")) << "the copies complete on full_bar";
  EXPECT_FALSE(has(k80, "cp.async.bulk"));
  EXPECT_TRUE(has(k90, "cp.async.bulk.shared")) << "one bulk copy per batch on 9.0";
  EXPECT_TRUE(has(k90, "mbarrier.try_wait.parity")) << "wait_parity";
}

TEST_F(HostCodegen, PipelineCommitArrivesWithoutNoinc) {
  // producer_commit: cp.async.mbarrier.arrive (raises the pending count) plus an ordinary arrive.
  for (const char* arch : {"80", "90"}) {
    for (const std::string& k : every(arch, "pipeline_kernel")) {
      EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << arch;
      EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc")) << arch;
    }
  }
}

// cp.async.mbarrier.arrive.noinc: the hardware arrives on the barrier once this thread's earlier
// cp.async copies have landed, as one of the barrier's initialised arrivals.
TEST_F(HostCodegen, RawVariantArrivesWithNoincOnly) {
  for (const char* arch : {"80", "90"}) {
    for (const std::string& k : every(arch, "mbarrier_kernel")) {
      EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.noinc.shared.b64")) << arch;
      EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << arch;
      EXPECT_TRUE(has(k, "mbarrier.init.shared.b64")) << arch;
      EXPECT_FALSE(has(k, "cp.async.commit_group")) << arch << ": completion goes through the mbarrier, not groups";
    }
  }
  // The bounded wait polls with test_wait before 9.0 and with the suspending try_wait from 9.0;
  // both roles' code is in the kernel's body (the producer's arrive, the consumers' stores).
  EXPECT_TRUE(has(kernel("80", "mbarrier_kernel", kStages), "mbarrier.test_wait.parity"));
  const std::string k90 = kernel("90", "mbarrier_kernel", kStages);
  EXPECT_TRUE(has(k90, "mbarrier.try_wait.parity"));
  EXPECT_TRUE(has(k90, "st.global.v4.u32"));
}

TEST_F(HostCodegen, ConsumersStoreSixteenBytesAtATime) {
  for (const char* name : {"pipeline_kernel", "mbarrier_kernel"}) {
    for (const std::string& k : every("80", name)) {
      EXPECT_TRUE(has(k, "st.global.v4.u32")) << name;
      EXPECT_FALSE(has(k, "st.global.u32")) << name;
    }
  }
}

// The machine code on 9.0 (this executable's sm_90 code; skipped where cuobjdump or that code is
// missing): LDGSTS.E.BYPASS.128 is the 16-byte cp.async.cg, ARRIVES.LDGSTSBAR the arrive-on
// (cp.async.mbarrier.arrive, with or without .noinc) that completes on an mbarrier.
TEST_F(HostCodegen, MachineCodeOnHopperIsLdgstsCompletingOnBarriers) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (const char* name : {"pipeline_kernel", "mbarrier_kernel"}) {
    const std::string part = std::to_string(std::string(name).size()) + name + "ILi2EE";
    const std::string k = course::sass_kernel_body(sass, part);
    ASSERT_FALSE(k.empty()) << "no kernel " << part << " in the sm_90 machine code";
    EXPECT_GE(course::count_matches(k, R"(LDGSTS\.E\.BYPASS\.128)"), 1) << name;
    EXPECT_GE(course::count_matches(k, R"(ARRIVES\.LDGSTSBAR)"), 1) << name;
    EXPECT_EQ(course::count_matches(k, "UBLKCP"), 0) << name << ": no bulk copy";
  }
}

// ---- On the GPU --------------------------------------------------------------------------

// Every variant of the lesson and every row of the lab (the lab's Variant is the lesson's).
class Sm80_WarpSpecialized : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_WarpSpecialized() : GpuTest(chapter_info().requirement) {}
  // One block (max_blocks = 1) sends every batch through the same ring of buffers.
  static course::Comparison verify_batches(const Variant& v, std::size_t num_batches, unsigned max_blocks) {
    Problem problem(num_batches, max_blocks);
    return verify(v, problem);
  }
};

TEST_P(Sm80_WarpSpecialized, OneBatch) {
  const course::Comparison result = verify_batches(GetParam(), 1, 1);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_WarpSpecialized, TwoBatchesOnePerBuffer) {
  const course::Comparison result = verify_batches(GetParam(), 2, 1);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_WarpSpecialized, OddCountsThroughOneBlock) {
  for (std::size_t batches : {3u, 5u, 7u, 9u}) {
    const course::Comparison result = verify_batches(GetParam(), batches, 1);
    EXPECT_TRUE(result.ok()) << batches << " batches: " << result.summary() << '\n' << result.first;
  }
}

TEST_P(Sm80_WarpSpecialized, ManyRoundsThroughOneBlock) {
  const course::Comparison result = verify_batches(GetParam(), 101, 1);  // 50 phase flips per buffer with 2
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_WarpSpecialized, ManyMoreBatchesThanResidentBlocks) {
  const course::Comparison result = verify_batches(GetParam(), 10007, 0);  // prime: unequal work per block
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_WarpSpecialized, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(333, 7);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

// Batch counts around every buffer count, through one block and through the whole GPU.
TEST_P(Sm80_WarpSpecialized, OneBlockAndWholeGpu) {
  for (unsigned max_blocks : {1u, 0u}) {
    for (std::size_t batches : {1u, 2u, 3u, 4u, 11u, 2003u}) {
      const course::Comparison result = verify_batches(GetParam(), batches, max_blocks);
      EXPECT_TRUE(result.ok()) << batches << " batches, max_blocks " << max_blocks << ": " << result.summary() << '\n'
                               << result.first;
    }
  }
}

const auto kVariantName = [](const auto& info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_WarpSpecialized, ::testing::ValuesIn(kVariants), kVariantName);
INSTANTIATE_TEST_SUITE_P(Lab, Sm80_WarpSpecialized, ::testing::ValuesIn(lab::kVariants), kVariantName);

// ---- A broken variant, stopped by a bounded wait -------------------------------------------

/// [broken]
// mbarrier_kernel with the guide's barrier count: block.size() expected arrivals on full_bar,
// where only the kProducerThreads producer lanes ever arrive. The phase never completes, and
// the consumers' bounded wait names the barrier, the stage and the phase.
__global__ void __launch_bounds__(kBlockThreads)
    wrong_full_count_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batches[kStages * kBatchElems];
  __shared__ alignas(8) std::uint64_t full_bar[kStages];
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kBlockThreads});  // wrong: 32 arrive, not 160
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kEmptyArrivals});  // right: one per consumer warp
    }
  }
  __syncthreads();  // every thread sees initialised barriers before anyone arrives or waits
  if (threadIdx.x / kWarpThreads == 0) {
    produce_batches<kStages>(gmem_in, smem_batches, full_bar, empty_bar, num_batches, threadIdx.x);
  } else {
    consume_batches<kStages>(smem_batches, gmem_out, full_bar, empty_bar, num_batches,
                             threadIdx.x - kProducerThreads);
  }
}
/// [broken]

// Two batches through one block: the producer never waits on empty_bar, so only the consumers
// can be stuck. The buffers are never freed: the death test's child process ends right after.
void launch_wrong_full_count() {
  auto* problem = new Problem(2, 1);
  launch_batch_grid<wrong_full_count_kernel>(problem->gmem_in.data(), problem->gmem_out.data(), problem->num_batches, 1);
}

class Sm80_WarpSpecializedDeathTest : public course::GpuTest {
 protected:
  Sm80_WarpSpecializedDeathTest() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_WarpSpecializedDeathTest, WrongFullCountIsDiagnosedNotHung) {
  COURSE_EXPECT_DIAGNOSED_HANG(launch_wrong_full_count(),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}


// The launchers' grids, read back from the device: the lesson's has batch_grid's blocks, capped
// by max_blocks; the lab's resident one every SM's resident blocks.
class Sm80_WarpSpecializedGrid : public course::GpuTest {
 protected:
  Sm80_WarpSpecializedGrid() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_WarpSpecializedGrid, TheLessonKeepsTheBytesInFlightThisGpuNeeds) {
  ASSERT_TRUE(chapter_info().in_flight.has_value());
  course::expect_enough_in_flight(*chapter_info().in_flight, device());
}

TEST_F(Sm80_WarpSpecializedGrid, TheLessonLaunchesTheBatchGridTheResidentRowFillsTheGpu) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{10007}}) {
    EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel>, num_batches, 0), batch_grid(num_batches, kBatchesPerBlock))
        << num_batches << " batches";
  }
  EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel>, 10007, 3), 3u) << "max_blocks caps the grid";
  int blocks_per_sm = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, course::grid_probe_kernel, kBlockThreads, 0));
  const std::size_t resident = static_cast<std::size_t>(device().sm_count) * blocks_per_sm;
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 10 * resident, 0), resident);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 3, 0), 3u);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 10 * resident, 2), 2u);
}

// ---- The timeline (--timeline): the recorded ring is right, and so are its events -----------

class Sm80_WarpSpecializedTimeline : public course::GpuTest {
 protected:
  Sm80_WarpSpecializedTimeline() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_WarpSpecializedTimeline, EveryRecordedBatchMakesARoundTripAndABufferIsRefilledOnlyAfterItsRelease) {
  using course::timeline::Event;
  using course::timeline::Kind;
  Problem problem(4096, 4);  // 4 blocks of 1024 batches each
  const lab::TimelineRun run = lab::record_mbarrier_ring(problem, 4, 16);
  ASSERT_TRUE(run.result.ok()) << run.result.summary() << '\n' << run.result.first;
  ASSERT_EQ(run.grid, 4u);
  EXPECT_EQ(course::timeline::round_trip_problems(run.events, lab::kTimelineStages), "");
  EXPECT_EQ(run.events.size(), 4u * 16 * 4) << "every block, batch and kind";
  auto find = [&](std::uint32_t block, std::uint32_t iteration, Kind kind) -> const Event* {
    for (const Event& e : run.events) {
      if (e.block == block && e.iteration == iteration && e.kind == static_cast<std::uint32_t>(kind)) return &e;
    }
    return nullptr;
  };
  for (std::uint32_t block = 0; block < 4; ++block) {
    for (std::uint32_t it = 0; it + lab::kTimelineStages < 16; ++it) {
      const Event* release = find(block, it, Kind::release);
      const Event* refill = find(block, it + lab::kTimelineStages, Kind::issue);
      ASSERT_NE(release, nullptr);
      ASSERT_NE(refill, nullptr);
      // The producer passes its empty wait only after every consumer warp arrived, warp 1's included.
      EXPECT_LE(release->t_ns, refill->t_ns) << "block " << block << ", buffer of batch " << it;
    }
  }
}

TEST_F(Sm80_WarpSpecializedTimeline, WritesTheCsvTheScriptDraws) {
  course::Options opts;
  opts.size_bytes = 2048 * kBatchBytes;
  opts.timeline = ::testing::TempDir() + "warp_specialized_timeline.csv";
  std::ostringstream log;
  lab::write_timeline(opts, log);
  std::ifstream file(opts.timeline);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("# timeline: warp_specialized_lab, variant mbarrier_2stage_resident, size 16777216 bytes", 0), 0u)
      << text.str().substr(0, 200);
  EXPECT_NE(text.str().find("\nblock,sm,role,stage,iteration,kind,t_ns\n"), std::string::npos);
  EXPECT_NE(text.str().find(",producer,0,0,issue,"), std::string::npos);
  EXPECT_NE(text.str().find(",consumer,0,0,release,"), std::string::npos);
  EXPECT_NE(log.str().find("events written to " + opts.timeline), std::string::npos) << log.str();
}

}  // namespace
