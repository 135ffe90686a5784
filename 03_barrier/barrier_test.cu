// Tests for 03_barrier: the model (what a barrier counts, the arrivals that complete each lesson
// kernel's phase, a ring of buffers replayed on model barriers, the guide's prefetch schedule)
// and the lesson's StageCursor against the course library's, on the CPU; what each kernel of the
// lesson and the lab compiles to (PTX on 8.0 and 9.0, machine code on 9.0); every lesson variant
// and every lab row bit-exact on the GPU; broken arrival counts stopped by the bounded waits; the
// grid rule on the CPU, and the grids the launchers start, read back from the GPU.
#include "barrier_lab.cu"  // the lab, which brings the lesson and the model
#include "barrier_figures.cpp"  // the concept figure, drawn from the model

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/codegen.hpp"
#include "course/grid_probe.cuh"
#include "course/stage_cursor.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The host reference, the size rule and the two tables ------------------------------------

TEST(HostBarrier, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps inside its own batch
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));
}

TEST(HostBarrier, SizeMustBeWholeBatches) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(257 * kBatchBytes)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes + 16)) << info.program;
  }
}

// ---- The grid rule (chapter 01's) ------------------------------------------------------------

TEST(HostBarrierGrid, TheLessonTakesFourBatchesPerBlock) {
  // The rule itself: course/batch_grid.hpp, tested by HostBatchGrid; here the chapter's use of it.
  EXPECT_EQ(kBatchesPerBlock, 4);
  EXPECT_GE(kBatchesPerBlock, kStages) << "a block of the lesson's grid fills both buffers";
  EXPECT_EQ(batch_grid((std::size_t{1} << 30) / kBatchBytes, kBatchesPerBlock), 65536u) << "1 GiB";
}

// ---- What a barrier counts (the host model) --------------------------------------------------

constexpr int kThreads = 4;

TEST(HostBarrierModel, BoundCopyHoldsThePhaseOpenUntilItLands) {
  BarrierModel bar;
  bar.init(kThreads);
  bar.bind_copies(kThreads);  // cp.async.mbarrier.arrive: one more expected arrival per copy
  EXPECT_EQ(bar.pending, 2 * kThreads);
  bar.arrive(kThreads);
  EXPECT_EQ(bar.phase, 0u) << "every thread arrived, but no copy has landed";
  EXPECT_FALSE(bar.parity_done(0));
  bar.copies_land(kThreads - 1);
  EXPECT_FALSE(bar.parity_done(0));
  bar.copies_land(1);
  EXPECT_EQ(bar.phase, 1u);
  EXPECT_TRUE(bar.parity_done(0));
  EXPECT_EQ(bar.pending, kThreads) << "the next phase expects the init count again, not the bound copies";
}

TEST(HostBarrierModel, CopyLandingBeforeTheArrivalsChangesNothing) {
  BarrierModel bar;
  bar.init(kThreads);
  bar.bind_copies(kThreads);
  bar.copies_land(kThreads);  // fast copies: the +1 and its arrival cancel out
  EXPECT_EQ(bar.phase, 0u);
  bar.arrive(kThreads);
  EXPECT_EQ(bar.phase, 1u);
}

TEST(HostBarrierModel, NoincCountsTheCopyAsOneOfTheExpectedArrivals) {
  BarrierModel bar;
  bar.init(2 * kThreads);
  bar.arrive(kThreads);
  EXPECT_FALSE(bar.parity_done(0));
  bar.copies_land(kThreads);
  EXPECT_TRUE(bar.parity_done(0));
  EXPECT_EQ(bar.pending, 2 * kThreads);
}

TEST(HostBarrierModel, NoincWithTheThreadCountCompletesBeforeTheData) {
  BarrierModel bar;
  bar.init(kThreads);  // forgot the copies' arrivals
  bar.arrive(kThreads);
  EXPECT_TRUE(bar.parity_done(0)) << "a wait would return with no data in shared memory";
  bar.copies_land(kThreads);
  EXPECT_EQ(bar.phase, 2u) << "the copies complete the next phase too";
  EXPECT_FALSE(bar.parity_done(0)) << "two phases later the parity looks as if nothing happened";
}

TEST(HostBarrierModel, OneExpectedArrivalTooManyNeverCompletes) {
  BarrierModel bar;
  bar.init(kThreads + 1);
  bar.bind_copies(kThreads);
  bar.arrive(kThreads);
  bar.copies_land(kThreads);
  EXPECT_EQ(bar.phase, 0u);
  EXPECT_EQ(bar.pending, 1);
}

TEST(HostBarrierModel, BulkCopyBytesHoldThePhaseOpenAfterEveryThreadArrived) {
  BarrierModel bar;
  bar.init(kThreads);
  bar.expect_tx(4096);  // thread 0, before the bulk copy
  bar.arrive(kThreads);
  EXPECT_EQ(bar.phase, 0u) << "every thread arrived, 4096 bytes still to land";
  bar.bytes_land(4000);
  EXPECT_FALSE(bar.parity_done(0));
  bar.bytes_land(96);
  EXPECT_TRUE(bar.parity_done(0));
  EXPECT_EQ(bar.pending, kThreads);
  EXPECT_EQ(bar.tx_bytes, 0);
}

TEST(HostBarrierModel, AFreshBarrierReportsParityOneAsComplete) {
  // The phase "before" phase 0 counts as complete: waiting for the wrong parity at the
  // start returns at once instead of waiting for the first batch.
  BarrierModel bar;
  bar.init(kThreads);
  EXPECT_TRUE(bar.parity_done(1));
  EXPECT_FALSE(bar.parity_done(0));
}

TEST(HostBarrierModel, TraceShowsEachStep) {
  const std::string trace = model_trace("t", 4, false, 4);
  EXPECT_NE(trace.find("init(4)                            pending  4  phase 0  wait_parity(0) waits"),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("the last copy lands                pending  4  phase 1  wait_parity(0) returns"),
            std::string::npos)
      << trace;
}

// ---- The arrival table: one phase of each lesson kernel's full barrier -------------------------

TEST(HostPhaseCounts, EveryLessonKernelsPhaseCompletesExactlyWhenItsLastCopyLands) {
  for (const PhaseCount& row : phase_counts(kBlockThreads, kBatchBytes)) {
    EXPECT_EQ(phase_problem(row), "") << row.variant << " on " << row.path;
  }
}

TEST(HostPhaseCounts, TheTableCoversEveryLessonVariantWithTheKernelsCounts) {
  const std::vector<PhaseCount> rows = phase_counts(kBlockThreads, kBatchBytes);
  for (const Variant& v : kVariants) {
    int found = 0;
    for (const PhaseCount& row : rows) {
      if (std::string(row.variant) != v.name) continue;
      ++found;
      EXPECT_EQ(row.thread_arrivals, kBlockThreads) << v.name << ": every thread arrives once";
      EXPECT_EQ(row.init_count, v.name == std::string("noinc") ? 2 * kBlockThreads : kBlockThreads) << v.name;
    }
    EXPECT_GE(found, 1) << v.name << " is missing from the table";
  }
  for (const PhaseCount& row : rows) {
    if (row.tx_bytes > 0) EXPECT_EQ(row.tx_bytes, static_cast<int>(kBatchBytes)) << row.variant << ": one batch";
  }
}

TEST(HostPhaseCounts, CatchesTheBrokenCounts) {
  const PhaseCount noinc = phase_counts(kBlockThreads, kBatchBytes).back();
  ASSERT_STREQ(noinc.variant, "noinc");
  PhaseCount forgot_the_copies = noinc;
  forgot_the_copies.init_count = kBlockThreads;
  EXPECT_EQ(phase_problem(forgot_the_copies), "completes before the last copy has landed");
  PhaseCount counting_with_the_noinc_count = noinc;  // the test kernel noinc_count_without_noinc_kernel
  std::swap(counting_with_the_noinc_count.counting_copies, counting_with_the_noinc_count.noinc_copies);
  EXPECT_EQ(phase_problem(counting_with_the_noinc_count), "never completes (256 arrivals missing)");
  PhaseCount one_too_many = phase_counts(kBlockThreads, kBatchBytes).front();  // one_arrival_too_many_kernel
  ++one_too_many.init_count;
  EXPECT_EQ(phase_problem(one_too_many), "never completes (1 arrivals missing)");
}

TEST(HostPhaseCounts, ProgramPrintsTheTable) {
  std::ostringstream out;
  print_barrier_model(out, kBlockThreads, kBatchBytes);
  EXPECT_NE(out.str().find("noinc              8.0, 9.0: LDGSTS     512       256          256 .noinc         0"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("parity             9.0: bulk copy       256       256                   -      4096"),
            std::string::npos)
      << out.str();
}

// ---- The stage/parity cursor -----------------------------------------------------------------

TEST(HostStageCursor, VisitsEveryStageThenFlipsTheParity) {
  StageCursor<kStages> cursor;
  const int expected[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0}, {1, 0}};
  for (const auto& e : expected) {
    EXPECT_EQ(cursor.stage, e[0]);
    EXPECT_EQ(cursor.phase, static_cast<std::uint32_t>(e[1]));
    cursor.advance();
  }
}

// The lesson's cursor is the one chapters 04-12 use from the course library: both walk the same
// {stage, phase} sequence, batch b in stage b % S with parity (b / S) % 2, for every ring size.
template <int kS>
void expect_same_walk_as_the_library() {
  StageCursor<kS> lesson;
  course::StageCursor<kS> library;
  for (int batch = 0; batch < 4 * kS + 3; ++batch) {
    EXPECT_EQ(lesson.stage, batch % kS) << kS << " stages, batch " << batch;
    EXPECT_EQ(lesson.phase, static_cast<std::uint32_t>((batch / kS) % 2)) << kS << " stages, batch " << batch;
    EXPECT_EQ(lesson.stage, library.stage) << kS << " stages, batch " << batch;
    EXPECT_EQ(lesson.phase, library.phase) << kS << " stages, batch " << batch;
    lesson.advance();
    library.advance();
  }
}

TEST(HostStageCursor, WalksTheSameSequenceAsTheCourseLibraryForOneToFourStages) {
  expect_same_walk_as_the_library<1>();
  expect_same_walk_as_the_library<2>();
  expect_same_walk_as_the_library<3>();
  expect_same_walk_as_the_library<4>();
}

// A cursor that forgets to flip the parity when the stage wraps.
template <int kS>
struct FrozenParityCursor {
  int stage = 0;
  std::uint32_t phase = 0;
  void advance() { stage = (stage + 1) % kS; }
};

// The two-buffer shortcut the lesson no longer takes: the other buffer is stage ^ 1. Right for
// two buffers only; with three it steps 0, 1, 0, 1, ... and never reaches buffer 2.
template <int kS>
struct XorCursor {
  int stage = 0;
  std::uint32_t phase = 0;
  void advance() {
    stage ^= 1;
    if (stage == 0) phase ^= 1u;
  }
};

// A cursor that starts at the wrong parity (exercise 3).
template <int kS>
struct ParityOneCursor : StageCursor<kS> {
  ParityOneCursor() { this->phase = 1; }
};

template <int kS>
void expect_no_stale_wait() {
  for (int delay = 0; delay <= kS; ++delay) {
    for (int num_batches = 1; num_batches <= 4 * kS + 1; ++num_batches) {
      EXPECT_EQ((first_early_wait<kS, StageCursor<kS>>(num_batches, delay)), -1)
          << kS << " stages, " << num_batches << " batches, delay " << delay;
    }
  }
}

TEST(HostStageCursor, EveryRingOfOneToFourBuffersNeverWaitsOnAStalePhase) {
  expect_no_stale_wait<1>();
  expect_no_stale_wait<2>();
  expect_no_stale_wait<3>();
  expect_no_stale_wait<4>();
}

TEST(HostStageCursor, CatchesACursorThatNeverFlipsTheParity) {
  // Batch 2 reuses stage 0; its barrier completed parity 0 with batch 0 already.
  EXPECT_EQ((first_early_wait<2, FrozenParityCursor<2>>(6, 1)), 2);
  EXPECT_EQ((first_early_wait<3, FrozenParityCursor<3>>(9, 1)), 3);
}

TEST(HostStageCursor, CatchesTheTwoBufferShortcutOnThreeBuffers) {
  EXPECT_EQ((first_early_wait<2, XorCursor<2>>(9, 1)), -1) << "right for two buffers";
  EXPECT_EQ((first_early_wait<3, XorCursor<3>>(9, 1)), 2) << "wrong for three: batch 2 is in buffer 2, not 0";
}

TEST(HostStageCursor, CatchesACursorThatStartsAtParityOne) {
  EXPECT_EQ((first_early_wait<2, ParityOneCursor<2>>(4, 1)), 0) << "a fresh barrier reports parity 1 complete";
}

// ---- The guide's prefetch schedule (4.11.2.1.1) ----------------------------------------------

TEST(HostPrefetchPlan, GuidesScheduleIsRightWhenThereAreEnoughBatches) {
  EXPECT_EQ(fetch_problem(guide_prefetch_fetches(2, 7), 7), "");
}

TEST(HostPrefetchPlan, CatchesTheGuidesPrologueReadingPastTheEnd) {
  // With fewer batches per block than stages, the prologue reads past the input.
  EXPECT_EQ(fetch_problem(guide_prefetch_fetches(2, 1), 1), "fetches batch 1 of 1");
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ----------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* arch : {"80", "90"}) {
      lesson_[arch] = course::chapter_ptx("barrier", arch);
      lab_[arch] = course::chapter_ptx("barrier_lab", arch);
    }
  }
  // A kernel of the lesson by its plain name; parity_kernel is the lesson's instance, kStages buffers.
  static std::string lesson_kernel(const std::string& arch, const std::string& name) {
    const std::string plain = std::to_string(name.size()) + name + "PKj";
    const std::string templated = std::to_string(name.size()) + name + "I" + stages_arg(kStages) + "E";
    std::string body = course::ptx_kernel_body(lesson_.at(arch), plain);
    if (body.empty()) body = course::ptx_kernel_body(lesson_.at(arch), templated);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in barrier.compute_" << arch << ".ptx";
    return body;
  }
  // The lesson's parity_kernel for a ring of `stages` buffers, as the lab instantiates it.
  static std::string lab_parity(const std::string& arch, int stages) {
    const std::string part = "13parity_kernelI" + stages_arg(stages) + "E";
    const std::string body = course::ptx_kernel_body(lab_.at(arch), part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in barrier_lab.compute_" << arch << ".ptx";
    return body;
  }
  static std::string stages_arg(int stages) { return "Li" + std::to_string(stages) + "E"; }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static inline std::map<std::string, std::string> lesson_, lab_;
};

const char* const kAligned16 = "arrive_and_wait_kernel";  // the minimal kernel: plain arrive_and_wait()
const char* const kToken = "arrive_wait_token_kernel";
const char* const kParity = "parity_kernel";
const char* const kNoinc = "noinc_kernel";
const int kLabStages[] = {1, 4};  // the lab's rings (its third row is the lesson's kernel on another grid)

// cp.async.cg: the 16-byte LDGSTS that bypasses L1.
const std::string kLdgsts16 = R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)";

TEST_F(HostCodegen, OnAmpereEveryVariantIssuesLdgsts) {
  for (const char* name : {kAligned16, kToken, kParity, kNoinc}) {
    const std::string k = lesson_kernel("80", name);
    EXPECT_GE(course::count_matches(k, kLdgsts16), 1) << name << ": 16-byte copies that bypass L1";
    EXPECT_FALSE(has(k, "ld.global")) << name << " should not copy through registers";
  }
  for (int s : kLabStages) EXPECT_GE(course::count_matches(lab_parity("80", s), kLdgsts16), 1) << s;
}

// Every barrier is an mbarrier in shared memory, initialised there (cuda::barrier's init() and
// cuda::ptx::mbarrier_init alike).
TEST_F(HostCodegen, EveryBarrierIsInitialisedInSharedMemory) {
  for (const char* arch : {"80", "90"}) {
    for (const char* name : {kAligned16, kToken, kParity, kNoinc}) {
      EXPECT_GE(course::count_matches(lesson_kernel(arch, name), R"(mbarrier\.init\.shared)"), 1) << name << arch;
    }
  }
}

// cp.async.mbarrier.arrive (counting): the pending count is raised now and the arrival comes
// when this thread's copies land. With .noinc the arrival is one of those init() expects.
TEST_F(HostCodegen, BoundCopiesRaiseThePendingCountUnlessNoinc) {
  std::vector<std::pair<std::string, std::string>> counting = {{kAligned16, lesson_kernel("80", kAligned16)},
                                                               {kToken, lesson_kernel("80", kToken)},
                                                               {kParity, lesson_kernel("80", kParity)}};
  for (int s : kLabStages) counting.push_back({"lab parity " + std::to_string(s), lab_parity("80", s)});
  for (const auto& [name, k] : counting) {
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << name;
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc")) << name;
  }
  for (const std::string& k : {lesson_kernel("80", kNoinc), lesson_kernel("90", kNoinc)}) {
    EXPECT_GE(course::count_matches(k, R"(cp\.async\.mbarrier\.arrive\.noinc\.b64)"), 1);
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.shared.b64"));
  }
}

TEST_F(HostCodegen, TokenWaitsAndParityWaits) {
  for (const char* name : {kAligned16, kToken}) {
    EXPECT_GE(course::count_matches(lesson_kernel("80", name), R"(mbarrier\.test_wait\.shared\.b64)"), 1) << name;
    EXPECT_TRUE(has(lesson_kernel("90", name), "mbarrier.try_wait.shared.b64")) << name;
    EXPECT_FALSE(has(lesson_kernel("80", name), ".parity")) << name;
  }
  for (const char* name : {kParity, kNoinc}) {
    EXPECT_GE(course::count_matches(lesson_kernel("80", name), R"(mbarrier\.test_wait\.parity\.shared\.b64)"), 1)
        << name;
    EXPECT_TRUE(has(lesson_kernel("90", name), "mbarrier.try_wait.parity.shared::cta.b64")) << name;
  }
}

// token[s], indexed by a stage known only at run time, is kept in local memory: one store per
// copy, one load per wait. The parity wait keeps nothing but the cursor, in registers.
TEST_F(HostCodegen, TheTokensLiveInLocalMemoryTheParityNeedsNone) {
  for (const char* arch : {"80", "90"}) {
    EXPECT_GE(course::count_matches(lesson_kernel(arch, kToken), R"(ld\.local\.u64)"), 1) << arch;
    EXPECT_EQ(course::count_matches(lesson_kernel(arch, kParity), R"(ld\.local)"), 0) << arch;
  }
}

// The minimal kernel waits as the guide does, with arrive_and_wait() (no course reporter in it);
// every other kernel of lesson and lab bounds its waits (the course's clock and reporter in each).
TEST_F(HostCodegen, EveryWaitIsBoundedButTheMinimalKernels) {
  for (const char* arch : {"80", "90"}) {
    EXPECT_FALSE(has(lesson_kernel(arch, kAligned16), "give_up")) << "the minimal kernel's plain wait";
    std::vector<std::string> kernels;
    for (const char* name : {kToken, kParity, kNoinc}) kernels.push_back(lesson_kernel(arch, name));
    for (int s : kLabStages) kernels.push_back(lab_parity(arch, s));
    for (const std::string& k : kernels) {
      EXPECT_TRUE(has(k, "%globaltimer")) << "a wait without a time limit";
      EXPECT_TRUE(has(k, "give_up")) << "a wait without the course's diagnosis";
    }
  }
}

// A bounded wait adds nothing to a block's local memory: its site (barrier, stage, phase) goes to
// the reporter by value, so its address never escapes into that never-inlined call. Only the token
// kernel keeps something there, its tokens.
TEST_F(HostCodegen, NoWaitKeepsItsSiteInLocalMemory) {
  for (const char* arch : {"80", "90"}) {
    std::vector<std::pair<std::string, std::string>> kernels;
    for (const char* name : {kAligned16, kParity, kNoinc}) kernels.push_back({name, lesson_kernel(arch, name)});
    for (int s : kLabStages) kernels.push_back({"lab parity " + std::to_string(s), lab_parity(arch, s)});
    for (const auto& [name, k] : kernels) {
      EXPECT_EQ(course::count_matches(k, R"(st\.local)"), 0) << name << ", compute_" << arch;
      EXPECT_FALSE(has(k, "__local_depot")) << name << ", compute_" << arch << ": a local-memory frame";
    }
    EXPECT_EQ(course::count_matches(lesson_kernel(arch, kToken), R"(st\.local\.v2)"), 0) << "compute_" << arch;
  }
}

TEST_F(HostCodegen, OnlyTheRawVariantInvalidatesItsBarriers) {
  EXPECT_GE(course::count_matches(lesson_kernel("80", kNoinc), R"(mbarrier\.inval\.shared\.b64)"), 1);
  for (const char* name : {kAligned16, kToken, kParity}) {
    EXPECT_FALSE(has(lesson_kernel("80", name), "mbarrier.inval")) << name << ": a __shared__ cuda::barrier is never destroyed";
  }
}

TEST_F(HostCodegen, OnAmpereNothingIsABulkCopy) {
  EXPECT_EQ(course::count_matches(lesson_.at("80"), R"(cp\.async\.bulk)"), 0) << "barrier.compute_80.ptx";
  EXPECT_EQ(course::count_matches(lab_.at("80"), R"(cp\.async\.bulk)"), 0) << "barrier_lab.compute_80.ptx";
}

// On 9.0 the library turns a 16-byte aligned cuda::memcpy_async on a block-scope barrier
// in shared memory into one bulk copy, issued by one thread and counted in bytes.
TEST_F(HostCodegen, OnHopperAlignedCudaMemcpyAsyncBecomesABulkCopy) {
  std::vector<std::string> kernels = {lesson_kernel("90", kAligned16), lesson_kernel("90", kToken),
                                      lesson_kernel("90", kParity)};
  for (int s : kLabStages) kernels.push_back(lab_parity("90", s));
  for (const std::string& k : kernels) {
    EXPECT_TRUE(has(k, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
    EXPECT_TRUE(has(k, "mbarrier.expect_tx"));
    EXPECT_FALSE(has(k, "cp.async.cg"));
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive")) << "the bytes complete the phase, not an arrive-on";
  }
}

TEST_F(HostCodegen, OnHopperNoincStaysLdgsts) {
  const std::string k = lesson_kernel("90", kNoinc);
  EXPECT_GE(course::count_matches(k, kLdgsts16), 1);
  EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.noinc.b64"));
  EXPECT_FALSE(has(k, "cp.async.bulk"));
}

// The names of every kernel (.entry) in a PTX file.
std::vector<std::string> ptx_entries(const std::string& ptx) {
  std::vector<std::string> names;
  const std::regex entry(R"(\.entry\s+([A-Za-z0-9_]+))");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

// The compute phase is already the wide one that chapter 02's lab adds as its _wide rows: each
// thread reads its four elements with one 16-byte shared load and writes its four outputs with one
// st.global.v4. Every kernel of lesson and lab keeps it so: one 16-byte store, no narrower one.
TEST_F(HostCodegen, EveryKernelStoresItsFourOutputsWithOneSixteenByteStore) {
  for (const char* arch : {"80", "90"}) {
    for (const auto& [program, ptx] : {std::pair<std::string, std::string>{"barrier", lesson_.at(arch)},
                                       {"barrier_lab", lab_.at(arch)}}) {
      const std::vector<std::string> entries = ptx_entries(ptx);
      EXPECT_FALSE(entries.empty()) << program << ".compute_" << arch;
      for (const std::string& name : entries) {
        const std::string k = course::ptx_kernel_body(ptx, name);
        const std::string where = name + " in " + program + ".compute_" + arch;
        EXPECT_EQ(course::count_matches(k, R"(st\.global\.v4\.[ubs]32)"), 1) << where;
        EXPECT_EQ(course::count_matches(k, R"(st\.global\.(?!v4\.[ubs]32))"), 0) << where << ": a narrower store";
        EXPECT_EQ(course::count_matches(k, R"(ld\.shared\.v4\.[ubs]32)"), 1) << where;
      }
    }
  }
}

// The machine code on 9.0 (this executable's sm_90 code; skipped where cuobjdump or that code is
// missing). LDGSTS.E.BYPASS.128 is the 16-byte cp.async.cg; the .noinc arrive-on is
// ARRIVES.LDGSTSBAR.64.ARVCNT (one of the expected arrivals). UBLKCP.S.G is the bulk copy
// (cp.async.bulk global -> shared), and SYNCS.PHASECHK the waits.
TEST_F(HostCodegen, MachineCodeOnHopperShowsTheArriveOnTheBulkCopyAndThePhaseChecks) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto kernel = [&](const std::string& part) {
    const std::string body = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in the sm_90 machine code";
    return body;
  };
  const std::string noinc = kernel("12noinc_kernelPKj");
  EXPECT_GE(course::count_matches(noinc, R"(LDGSTS\.E\.BYPASS\.128)"), 1);
  EXPECT_GE(course::count_matches(noinc, R"(ARRIVES\.LDGSTSBAR\.64\.ARVCNT)"), 1);
  for (const char* part : {"22arrive_and_wait_kernelPKj", "24arrive_wait_token_kernelPKj", "13parity_kernelILi2EE"}) {
    EXPECT_GE(course::count_matches(kernel(part), R"(UBLKCP\.S\.G)"), 1) << part;
    EXPECT_EQ(course::count_matches(kernel(part), "LDGSTS"), 0) << part;
  }
  for (const char* part : {"22arrive_and_wait_kernelPKj", "24arrive_wait_token_kernelPKj", "13parity_kernelILi2EE",
                           "12noinc_kernelPKj"}) {
    EXPECT_GE(course::count_matches(kernel(part), R"(SYNCS\.PHASECHK)"), 1) << part;
  }
}

// ---- The concept figure ---------------------------------------------------------------------

TEST(HostFigures, TheCommittedFigureIsTheDrawingOfTheModel) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// The figure's steps are the model's: the last copy of each batch completes the phase, and a wait
// on parity 0 returns from then until the next phase completes.
TEST(HostFigures, TheLastCopyCompletesEachPhase) {
  const std::vector<FigureStep> steps = barrier_phase_steps(4);
  ASSERT_EQ(steps.size(), 13u);
  EXPECT_EQ(steps[1].pending, 8);  // four copies bound: +1 each
  EXPECT_EQ(steps[2].pending, 4);  // four thread arrivals do not complete the phase
  EXPECT_EQ(steps[5].phase, 0u);
  EXPECT_EQ(steps[6].phase, 1u);   // the fourth copy lands
  EXPECT_TRUE(steps[6].wait0_returns);
  EXPECT_EQ(steps[12].phase, 2u);
  EXPECT_FALSE(steps[12].wait0_returns);  // parity 0 again: phase 2 has not completed
  const std::string svg = barrier_phases_svg();
  EXPECT_NE(svg.find("viewBox=\"0 0 "), std::string::npos);
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos);
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm80_Barrier : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_Barrier() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm80_Barrier, OneBatch) {
  Problem problem(1);
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Barrier, ManyMoreBatchesThanResidentBlocks) {
  Problem problem(10007);  // prime: blocks do unequal, odd and even numbers of batches
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Barrier, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(333);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_Barrier, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Lab, Sm80_Barrier, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// One and two blocks for many batches: each barrier goes through dozens of phases, and every
// ring of one to four buffers wraps many times (three buffers: 75 batches are not a multiple of the ring).
using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t);
class Sm80_BarrierReuse : public course::GpuTest {
 protected:
  Sm80_BarrierReuse() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_BarrierReuse, FewBlocksRunManyPhases) {
  const std::pair<const char*, Kernel> kernels[] = {
      {"arrive_and_wait", arrive_and_wait_kernel},
      {"arrive_wait_token", arrive_wait_token_kernel},
      {"parity", parity_kernel<kStages>},
      {"noinc", noinc_kernel},
      {"parity, one buffer", parity_kernel<1>},
      {"parity, three buffers", parity_kernel<3>},
      {"parity, four buffers", parity_kernel<4>}};
  Problem problem(75);
  for (const auto& [name, kernel] : kernels) {
    for (unsigned blocks : {1u, 2u}) {
      problem.gmem_out.poison();
      kernel<<<blocks, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
      COURSE_CHECK_LAUNCH();
      COURSE_CHECK(cudaDeviceSynchronize());
      const course::Comparison result = problem.gmem_out.check(problem.expected, kBatchElems);
      EXPECT_TRUE(result.ok()) << name << ", " << blocks << " blocks: " << result.summary() << '\n' << result.first;
    }
  }
}

// The launchers' grids, read back from the device: the lesson's has batch_grid's blocks, the
// lab's resident one every SM's resident blocks (or one per batch when there are fewer).
TEST_F(Sm80_BarrierReuse, TheLessonLaunchesTheBatchGridTheResidentRowFillsTheGpu) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{10007}}) {
    EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel>, num_batches), batch_grid(num_batches, kBatchesPerBlock))
        << num_batches << " batches";
  }
  int blocks_per_sm = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, course::grid_probe_kernel, kBlockThreads, 0));
  const std::size_t resident = static_cast<std::size_t>(device().sm_count) * blocks_per_sm;
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 10 * resident), resident);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 3), 3u);
}

// ---- Broken arrival counts, stopped by the bounded waits --------------------------------------

// The lesson's arrive_and_wait with one arrival too many expected: phase 0 never completes.
__global__ void one_arrival_too_many_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                            std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&full_bar, block.size() + 1);  // BROKEN: nobody makes the extra arrival
  block.sync();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes),
                       full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, 0});
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();
  }
}

// The noinc count (2 x threads) with the arrive-on form that does not count: only half the
// expected arrivals ever come.
__global__ void noinc_count_without_noinc_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                                 std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ std::uint64_t full_bar;
  if (threadIdx.x == 0) cuda::ptx::mbarrier_init(&full_bar, 2 * blockDim.x);
  __syncthreads();
  const int chunk = threadIdx.x * kChunkElems;
  std::uint32_t phase = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, phase ^= 1u) {
    __pipeline_memcpy_async(&smem_batch[chunk], gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    cuda::ptx::cp_async_mbarrier_arrive(&full_bar);  // BROKEN: raises the count, then arrives: net zero
    (void)cuda::ptx::mbarrier_arrive(&full_bar);
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    __syncthreads();
  }
}

class Sm80_BarrierBroken : public course::GpuTest {
 protected:
  Sm80_BarrierBroken() : GpuTest(chapter_info().requirement) {}
};

// Launches without synchronising: the death test's child synchronises and reports.
void launch_broken(Kernel kernel, Problem& problem) {
  kernel<<<2, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm80_BarrierBroken, OneArrivalTooManyIsDiagnosed) {
  Problem problem(8);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(one_arrival_too_many_kernel, problem),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

TEST_F(Sm80_BarrierBroken, NoincCountWithTheCountingArriveOnIsDiagnosed) {
  Problem problem(8);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(noinc_count_without_noinc_kernel, problem),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
