// Tests for 05_warp_specialized: the {stage, phase} cursor, the arrival counts against a
// CPU model of the mbarrier protocol, the producer's copy plan against the guide's, what
// each kernel compiles to (PTX), every variant bit-exact on the GPU, and a broken variant
// stopped by a bounded wait.
#include "warp_specialized.cu"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The {stage, phase} cursor --------------------------------------------------------------

template <int kStages>
void expect_cursor_walk() {
  StageCursor<kStages> cursor;
  for (int batch = 0; batch < 5 * kStages + 3; ++batch) {
    ASSERT_EQ(cursor.stage, batch % kStages) << kStages << " stages, batch " << batch;
    ASSERT_EQ(cursor.phase, static_cast<std::uint32_t>((batch / kStages) % 2)) << kStages << " stages, batch " << batch;
    const std::uint32_t before = cursor.phase;
    cursor.advance();
    ASSERT_EQ(cursor.phase != before, cursor.stage == 0) << "the phase flips exactly when the ring wraps";
  }
}

TEST(HostStageCursor, WalksTheRingAndFlipsThePhaseOnWrap) {
  expect_cursor_walk<1>();
  expect_cursor_walk<2>();
  expect_cursor_walk<3>();
  expect_cursor_walk<4>();
}

TEST(HostStageCursor, OneStageFlipsEveryBatch) {
  StageCursor<1> cursor;
  cursor.advance();
  EXPECT_EQ(cursor.stage, 0);
  EXPECT_EQ(cursor.phase, 1u);
  cursor.advance();
  EXPECT_EQ(cursor.phase, 0u);
}

// ---- The arrival counts, on a CPU model of the mbarrier protocol ---------------------------

// An mbarrier as far as this protocol needs it: an expected count, arrivals pending in the
// current phase, and the phase number. try_wait_parity(p) is true once the phase of parity p
// has completed, i.e. while the current phase has the other parity.
struct MbarrierModel {
  std::uint32_t expected = 0, pending = 0, phase = 0;
  void init(std::uint32_t count) {
    expected = count;
    pending = count;
  }
  void arrive() {
    if (--pending > 0) return;
    pending = expected;  // the phase completes and the next one starts
    ++phase;
  }
  bool try_wait_parity(std::uint32_t parity) const { return (phase & 1u) != parity; }
};

// Runs one block's producer and consumer warps over `num_batches` batches, each role taking a
// step whenever its wait would return, exactly as the kernel's loops do (same cursor, same
// parities, same arrivals). Returns "" when all batches were produced and consumed in order,
// otherwise the first wait that can never return (the bounded wait's diagnosis).
template <int kStages>
std::string simulate(int num_batches, std::uint32_t full_count, std::uint32_t empty_count) {
  MbarrierModel full_bar[kStages], empty_bar[kStages];
  for (int s = 0; s < kStages; ++s) {
    full_bar[s].init(full_count);
    empty_bar[s].init(empty_count);
  }
  StageCursor<kStages> producer, consumer;
  int produced = 0, consumed = 0;
  int holds[kStages];  // which batch each buffer holds
  for (int& h : holds) h = -1;
  while (consumed < num_batches) {
    bool moved = false;
    if (produced < num_batches && empty_bar[producer.stage].try_wait_parity(producer.phase ^ 1u)) {
      if (holds[producer.stage] != -1) return "producer overwrote a batch nobody consumed";
      holds[producer.stage] = produced++;
      for (int lane = 0; lane < kProducerThreads; ++lane) full_bar[producer.stage].arrive();  // copies landed
      producer.advance();
      moved = true;
    }
    if (full_bar[consumer.stage].try_wait_parity(consumer.phase)) {
      if (holds[consumer.stage] != consumed) return "consumers read the wrong batch";
      holds[consumer.stage] = -1;
      ++consumed;
      for (int warp = 0; warp < kConsumerWarps; ++warp) empty_bar[consumer.stage].arrive();
      consumer.advance();
      moved = true;
    }
    if (!moved) {
      std::string stuck = "stuck: ";
      if (produced < num_batches) {
        stuck += "producer waits on 'empty' stage " + std::to_string(producer.stage) + " parity " +
                 std::to_string(producer.phase ^ 1u) + ", ";
      }
      return stuck + "consumers wait on 'full' stage " + std::to_string(consumer.stage) + " phase " +
             std::to_string(consumer.phase);
    }
  }
  return "";
}

TEST(HostArrivalCounts, TheKernelsCountsNeverDeadlock) {
  for (int batches : {1, 2, 3, 7, 64}) {
    EXPECT_EQ((simulate<1>(batches, kFullArrivals, kEmptyArrivals)), "") << batches << " batches";
    EXPECT_EQ((simulate<2>(batches, kFullArrivals, kEmptyArrivals)), "") << batches << " batches";
    EXPECT_EQ((simulate<3>(batches, kFullArrivals, kEmptyArrivals)), "") << batches << " batches";
    EXPECT_EQ((simulate<4>(batches, kFullArrivals, kEmptyArrivals)), "") << batches << " batches";
  }
}

TEST(HostArrivalCounts, TheGuidesBlockSizeCountNeverCompletesFull) {
  // The guide's primitives version initialises every barrier with block.size(), because there
  // every thread arrives on every barrier. Here only the producer lanes arrive on full_bar.
  EXPECT_EQ((simulate<2>(2, kBlockThreads, kEmptyArrivals)), "stuck: consumers wait on 'full' stage 0 phase 0");
}

TEST(HostArrivalCounts, OneArrivalPerConsumerThreadLeavesTheProducerWaiting) {
  // empty_bar counts warps; counting threads would stall the producer's second round.
  EXPECT_EQ((simulate<2>(3, kFullArrivals, kConsumerThreads)),
            "stuck: producer waits on 'empty' stage 0 parity 0, consumers wait on 'full' stage 0 phase 1");
}

// ---- The producer's copy plan -------------------------------------------------------------

// Which elements of the ring of buffers one producer lane writes for one batch, and from where.
struct ElementCopy {
  long smem_elem;  // index into all kStages buffers
  long gmem_elem;  // index into the input
};
using Plan = std::function<std::vector<ElementCopy>(std::size_t batch, int stage, int lane)>;

// The first problem with a plan for batch `batch` (held in buffer batch % kStages): every element
// of that buffer written exactly once, from the same position of the batch, nothing outside it.
std::string plan_problem(const Plan& plan, std::size_t batch, int stages) {
  const int stage = static_cast<int>(batch % stages);
  std::vector<int> writes(static_cast<std::size_t>(stages) * kBatchElems, 0);
  for (int lane = 0; lane < kProducerThreads; ++lane) {
    for (const ElementCopy& c : plan(batch, stage, lane)) {
      if (c.smem_elem < 0 || c.smem_elem >= static_cast<long>(writes.size())) {
        return "batch " + std::to_string(batch) + " writes element " + std::to_string(c.smem_elem) + ", past the " +
               std::to_string(stages) + " buffers (" + std::to_string(writes.size()) + " elements)";
      }
      const long offset = c.smem_elem - static_cast<long>(stage) * kBatchElems;
      if (offset < 0 || offset >= kBatchElems) return "batch " + std::to_string(batch) + " writes another buffer";
      if (c.gmem_elem != static_cast<long>(batch) * kBatchElems + offset) {
        return "batch " + std::to_string(batch) + " fills element " + std::to_string(offset) + " from the wrong input";
      }
      ++writes[c.smem_elem];
    }
  }
  int unwritten = 0;
  for (int i = 0; i < kBatchElems; ++i) {
    const int count = writes[static_cast<std::size_t>(stage) * kBatchElems + i];
    if (count > 1) return "batch " + std::to_string(batch) + " writes element " + std::to_string(i) + " twice";
    unwritten += count == 0 ? 1 : 0;
  }
  if (unwritten > 0) {
    return "batch " + std::to_string(batch) + ": " + std::to_string(unwritten) + " of " +
           std::to_string(kBatchElems) + " elements of its buffer never written";
  }
  return "";
}

// This chapter's producer: kChunksPerProducer 16-byte chunks per lane (producer_chunk()).
std::vector<ElementCopy> chapter_plan(std::size_t batch, int stage, int lane) {
  std::vector<ElementCopy> copies;
  for (int k = 0; k < kChunksPerProducer; ++k) {
    const ChunkCopy chunk = producer_chunk(batch, stage, lane, k);
    for (int e = 0; e < kChunkElems; ++e) {
      copies.push_back({chunk.smem_elem + e, static_cast<long>(chunk.gmem_elem) + e});
    }
  }
  return copies;
}

// The guide's cuda::pipeline version, transcribed: each producer lane copies one float,
// `buffer + stage * buffer_len + threadIdx.x` from `in + batch * buffer_len + threadIdx.x`.
std::vector<ElementCopy> guide_pipeline_plan(std::size_t batch, int stage, int lane) {
  return {{static_cast<long>(stage) * kBatchElems + lane, static_cast<long>(batch) * kBatchElems + lane}};
}

// The guide's primitives version, transcribed: `buffer + i * buffer_len + threadIdx.x`, where i
// is the batch, not the buffer.
std::vector<ElementCopy> guide_primitives_plan(std::size_t batch, int /*stage*/, int lane) {
  return {{static_cast<long>(batch) * kBatchElems + lane, static_cast<long>(batch) * kBatchElems + lane}};
}

TEST(HostCopyPlan, EveryBufferElementOnceFromItsBatch) {
  for (std::size_t batch : {0u, 1u, 2u, 3u, 1001u}) {
    EXPECT_EQ(plan_problem(chapter_plan, batch, kDoubleBuffering), "") << "batch " << batch;
    EXPECT_EQ(plan_problem(chapter_plan, batch, 4), "") << "batch " << batch;
  }
}

TEST(HostCopyPlan, CatchesTheGuidesThirtyTwoElementsPerBatch) {
  EXPECT_EQ(plan_problem(guide_pipeline_plan, 0, kDoubleBuffering),
            "batch 0: 2016 of 2048 elements of its buffer never written");
}

TEST(HostCopyPlan, CatchesTheGuidesBufferIndexedByBatch) {
  EXPECT_EQ(plan_problem(guide_primitives_plan, 1, kDoubleBuffering),
            "batch 1: 2016 of 2048 elements of its buffer never written");
  EXPECT_EQ(plan_problem(guide_primitives_plan, 2, kDoubleBuffering),
            "batch 2 writes element 4096, past the 2 buffers (4096 elements)");
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
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kBatchBytes));
  EXPECT_FALSE(info.size_rule(1000 * kBatchBytes));
  EXPECT_TRUE(info.size_rule(kBatchBytes / 2));
  EXPECT_TRUE(info.size_rule(kBatchBytes + 16));
}

// ---- What the compiler emits (PTX generated by the build) --------------------------------

// The body of a kernel in the PTX: from its .entry line to its closing brace. (cuda::ptx's
// inline assembly also puts braces in column 0, each followed by "// end inline asm".)
std::string kernel_body(const std::string& ptx, const std::string& name) {
  const std::size_t start = ptx.find(".entry " + name);
  if (start == std::string::npos) return "";
  for (std::size_t pos = start;;) {
    const std::size_t end = ptx.find("\n}\n", pos);
    if (end == std::string::npos) return ptx.substr(start);
    if (ptx.compare(end + 3, 18, "\t// end inline asm") != 0) return ptx.substr(start, end + 3 - start);
    pos = end + 3;
  }
}

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ptx80_ = course::read_text_file(COURSE_PTX_DIR "/warp_specialized.compute_80.ptx");
    ptx90_ = course::read_text_file(COURSE_PTX_DIR "/warp_specialized.compute_90.ptx");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string ptx80_, ptx90_;
};

constexpr const char* kPipeline2 = "_Z15pipeline_kernelILi2EEvPKjPjm";
constexpr const char* kMbarrier2 = "_Z15mbarrier_kernelILi2EEvPKjPjm";

TEST_F(HostCodegen, KernelBodyFindsTheEndPastInlineAsmBraces) {
  const std::string k = kernel(ptx90_, kMbarrier2);
  EXPECT_TRUE(has(k, "mbarrier.try_wait.parity")) << "the first inline-asm brace is not the end";
  EXPECT_TRUE(has(k, "st.global.v4.u32"));
  EXPECT_FALSE(has(k, ".entry _Z15mbarrier_kernelILi4E")) << "the body ran into the next kernel";
}

TEST_F(HostCodegen, BothVariantsCopyWithSixteenByteLdgstsOnBothArchitectures) {
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    for (const char* name : {kPipeline2, kMbarrier2}) {
      const std::string k = kernel(*ptx, name);
      EXPECT_TRUE(has(k, "cp.async.cg.shared.global")) << name;
      EXPECT_TRUE(has(k, ", 16, 16;")) << name;
      EXPECT_FALSE(has(k, "cp.async.bulk")) << name << ": cuda::pipeline allows no bulk-copy completion";
      EXPECT_FALSE(has(k, "ld.global")) << name << " should not copy through registers";
    }
  }
}

TEST_F(HostCodegen, PipelineCommitArrivesWithoutNoinc) {
  // producer_commit: cp.async.mbarrier.arrive (raises the pending count) plus an ordinary arrive.
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    const std::string k = kernel(*ptx, kPipeline2);
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64"));
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc"));
  }
}

TEST_F(HostCodegen, RawVariantArrivesWithNoincOnly) {
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    const std::string k = kernel(*ptx, kMbarrier2);
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.noinc.shared.b64"));
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.shared.b64"));
    EXPECT_TRUE(has(k, "mbarrier.init.shared.b64"));
    EXPECT_FALSE(has(k, "cp.async.commit_group")) << "completion goes through the mbarrier, not async-groups";
  }
  // The bounded wait polls with test_wait before 9.0 and with the suspending try_wait from 9.0.
  EXPECT_TRUE(has(kernel(ptx80_, kMbarrier2), "mbarrier.test_wait.parity"));
  EXPECT_TRUE(has(kernel(ptx90_, kMbarrier2), "mbarrier.try_wait.parity"));
}

TEST_F(HostCodegen, ConsumersStoreSixteenBytesAtATime) {
  for (const char* name : {kPipeline2, kMbarrier2}) {
    const std::string k = kernel(ptx80_, name);
    EXPECT_TRUE(has(k, "st.global.v4.u32")) << name;
    EXPECT_FALSE(has(k, "st.global.u32")) << name;
  }
}

// ---- On the GPU --------------------------------------------------------------------------

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
  const course::Comparison result = verify_batches(GetParam(), 101, 1);  // 50 phase flips per buffer
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

INSTANTIATE_TEST_SUITE_P(Variants, Sm80_WarpSpecialized, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// Stage counts 1 to 4 for both flavours, through one block and through the whole GPU.
const Variant kStageCounts[] = {
    {"pipeline_1stage", "", &launch_resident<pipeline_kernel<1>>},
    {"pipeline_3stage", "", &launch_resident<pipeline_kernel<3>>},
    {"mbarrier_1stage", "", &launch_resident<mbarrier_kernel<1>>},
    {"mbarrier_3stage", "", &launch_resident<mbarrier_kernel<3>>},
};

class Sm80_WarpSpecializedStages : public Sm80_WarpSpecialized {};

TEST_P(Sm80_WarpSpecializedStages, OneBlockAndWholeGpu) {
  for (unsigned max_blocks : {1u, 0u}) {
    for (std::size_t batches : {1u, 2u, 3u, 4u, 11u, 2003u}) {
      const course::Comparison result = verify_batches(GetParam(), batches, max_blocks);
      EXPECT_TRUE(result.ok()) << batches << " batches, max_blocks " << max_blocks << ": " << result.summary() << '\n'
                               << result.first;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(StageCounts, Sm80_WarpSpecializedStages, ::testing::ValuesIn(kStageCounts),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- A broken variant, stopped by a bounded wait -------------------------------------------

// mbarrier_kernel with the guide's barrier count: block.size() expected arrivals on full_bar,
// where only the kProducerThreads producer lanes ever arrive. The phase never completes, and
// the consumers' bounded wait names the barrier, the stage and the phase.
__global__ void __launch_bounds__(kBlockThreads)
    wrong_full_count_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batches[kDoubleBuffering * kBatchElems];
  __shared__ alignas(8) std::uint64_t full_bar[kDoubleBuffering];
  __shared__ alignas(8) std::uint64_t empty_bar[kDoubleBuffering];
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kDoubleBuffering; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kBlockThreads});  // wrong: 32 arrive, not 160
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kEmptyArrivals});
    }
  }
  __syncthreads();
  if (threadIdx.x / kWarpThreads == 0) {
    produce_batches<kDoubleBuffering>(gmem_in, smem_batches, full_bar, empty_bar, num_batches, threadIdx.x);
  } else {
    consume_batches<kDoubleBuffering>(smem_batches, gmem_out, full_bar, empty_bar, num_batches,
                                      threadIdx.x - kProducerThreads);
  }
}

// Two batches through one block: the producer never waits on empty_bar, so only the consumers
// can be stuck. The buffers are never freed: the death test's child process ends right after.
void launch_wrong_full_count() {
  auto* problem = new Problem(2, 1);
  launch_resident<wrong_full_count_kernel>(problem->gmem_in.data(), problem->gmem_out.data(), problem->num_batches, 1);
}

class Sm80_WarpSpecializedDeathTest : public course::GpuTest {
 protected:
  Sm80_WarpSpecializedDeathTest() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_WarpSpecializedDeathTest, WrongFullCountIsDiagnosedNotHung) {
  COURSE_EXPECT_DIAGNOSED_HANG(launch_wrong_full_count(),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
