// Tests for 03_barrier: the barrier model and the stage/parity cursor on the CPU, the guide's
// prefetch schedule, what each kernel compiles to (PTX) on 8.0 and 9.0, every variant
// bit-exact on the GPU, and broken arrival counts stopped by the bounded waits.
#include "barrier.cu"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The host reference and the size rule ---------------------------------------------------

TEST(HostBarrier, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps inside its own batch
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));
}

TEST(HostBarrier, SizeMustBeWholeBatches) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kBatchBytes));
  EXPECT_FALSE(info.size_rule(257 * kBatchBytes));
  EXPECT_TRUE(info.size_rule(kBatchBytes + 16));
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

// ---- The stage/parity cursor -----------------------------------------------------------------

TEST(HostStageCursor, VisitsEveryStageThenFlipsTheParity) {
  StageCursor cursor;
  const int expected[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0}, {1, 0}};
  for (const auto& e : expected) {
    EXPECT_EQ(cursor.stage, e[0]);
    EXPECT_EQ(cursor.phase, static_cast<std::uint32_t>(e[1]));
    cursor.advance();
  }
}

// A cursor that forgets to flip the parity when the stage wraps.
struct FrozenParityCursor {
  int stage = 0;
  std::uint32_t phase = 0;
  void advance() { stage = (stage + 1) % kStages; }
};

// Plays the double-buffered kernels' schedule for one block on model barriers: batch b
// goes to stage b % kStages, its copies land `delay` batches after they were issued, and
// the wait for batch b must not return before batch b has landed. Returns the first batch
// whose wait would have returned early, or -1.
template <class Cursor>
int first_early_wait(int num_batches, int delay) {
  BarrierModel full_bar[kStages];
  for (BarrierModel& bar : full_bar) bar.init(2 * kThreads);  // the noinc count
  std::vector<int> landed_at(num_batches);
  int issued = 0, landed = 0;
  auto issue = [&](int stage) {
    full_bar[stage].arrive(kThreads);  // the threads' own arrivals
    landed_at[issued] = issued + delay;
    ++issued;
  };
  Cursor cursor;
  issue(0);
  for (int batch = 0; batch < num_batches; ++batch) {
    if (batch + 1 < num_batches) issue(cursor.stage ^ 1);
    // Copies that have landed by now deliver their arrivals, in issue order.
    while (landed < issued && landed_at[landed] <= batch) full_bar[landed++ % kStages].copies_land(kThreads);
    if (full_bar[cursor.stage].parity_done(cursor.phase) && landed <= batch) return batch;
    while (!full_bar[cursor.stage].parity_done(cursor.phase)) {
      if (landed == issued) return batch;  // would hang: nothing left to land
      full_bar[landed++ % kStages].copies_land(kThreads);
    }
    if (landed <= batch) return batch;
    cursor.advance();
  }
  return -1;
}

TEST(HostStageCursor, DoubleBufferedScheduleNeverWaitsOnAStalePhase) {
  for (int delay = 0; delay <= 1; ++delay) {
    for (int num_batches = 1; num_batches <= 9; ++num_batches) {
      EXPECT_EQ(first_early_wait<StageCursor>(num_batches, delay), -1) << num_batches << " batches, delay " << delay;
    }
  }
}

TEST(HostStageCursor, CatchesACursorThatNeverFlipsTheParity) {
  // Batch 2 reuses stage 0; its barrier completed parity 0 with batch 0 already.
  EXPECT_EQ(first_early_wait<FrozenParityCursor>(6, 1), 2);
}

// ---- The guide's prefetch schedule (4.11.2.1.1) ----------------------------------------------

// The batches the guide's prefetch kernel fetches for one block, in order: its prologue
// fetches num_stages batches whatever batch_size is, its loop fetches while fetch_batch < batch_size.
std::vector<int> guide_prefetch_fetches(int num_stages, int batch_size) {
  std::vector<int> fetched;
  for (int s = 0; s < num_stages; ++s) fetched.push_back(s);
  for (int compute_batch = 0, fetch_batch = num_stages; compute_batch < batch_size; ++compute_batch, ++fetch_batch) {
    if (fetch_batch < batch_size) fetched.push_back(fetch_batch);
  }
  return fetched;
}

std::string fetch_problem(const std::vector<int>& fetched, int batch_size) {
  for (std::size_t i = 0; i < fetched.size(); ++i) {
    if (fetched[i] >= batch_size) {
      return "fetches batch " + std::to_string(fetched[i]) + " of " + std::to_string(batch_size);
    }
    if (fetched[i] != static_cast<int>(i)) return "fetch " + std::to_string(i) + " is out of order";
  }
  return fetched.size() == static_cast<std::size_t>(batch_size) ? "" : "misses batches";
}

TEST(HostPrefetchPlan, GuidesScheduleIsRightWhenThereAreEnoughBatches) {
  EXPECT_EQ(fetch_problem(guide_prefetch_fetches(2, 7), 7), "");
}

TEST(HostPrefetchPlan, CatchesTheGuidesPrologueReadingPastTheEnd) {
  // With fewer batches per block than stages, the prologue reads past the input.
  EXPECT_EQ(fetch_problem(guide_prefetch_fetches(2, 1), 1), "fetches batch 1 of 1");
}

// ---- What the compiler emits (PTX generated by the build) --------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ptx80_ = course::read_text_file(COURSE_PTX_DIR "/barrier.compute_80.ptx");
    ptx90_ = course::read_text_file(COURSE_PTX_DIR "/barrier.compute_90.ptx");
  }
  // The kernel's text from its .entry line to the next declaration at the start of a line.
  // (course::ptx_kernel_body stops at the first '}' that starts a line, and the braced
  // inline-asm blocks of cuda::ptx put one there.)
  static std::string kernel_text(const std::string& ptx, const char* name) {
    std::size_t pos = 0;
    while ((pos = ptx.find("\n.visible .entry ", pos)) != std::string::npos) {
      const std::size_t line_end = ptx.find('\n', pos + 1);
      if (ptx.substr(pos, line_end - pos).find(name) != std::string::npos) {
        std::size_t end = line_end;
        while ((end = ptx.find('\n', end + 1)) != std::string::npos && end + 1 < ptx.size() && ptx[end + 1] != '.' &&
               ptx.compare(end + 1, 10, "\t// .globl") != 0) {
        }
        return ptx.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos);
      }
      pos = line_end;
    }
    return "";
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = kernel_text(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static std::string sm80(const char* name) { return kernel(ptx80_, name); }
  static std::string sm90(const char* name) { return kernel(ptx90_, name); }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string ptx80_, ptx90_;
};

// Mangled-name fragments of the five kernels.
constexpr const char* kAligned16 = "arrive_and_wait_kernelIN4cuda3__414aligned_size_tILm16E";
constexpr const char* kPlainSize = "arrive_and_wait_kernelImE";
constexpr const char* kToken = "arrive_wait_token_kernel";
constexpr const char* kParity = "parity_kernel";
constexpr const char* kNoinc = "noinc_kernel";

TEST_F(HostCodegen, OnAmpereEveryVariantIssuesLdgsts) {
  for (const char* name : {kAligned16, kToken, kParity, kNoinc}) {
    const std::string k = sm80(name);
    EXPECT_TRUE(has(k, "cp.async.cg.shared.global")) << name << ": 16-byte copies that bypass L1";
    EXPECT_FALSE(has(k, "ld.global")) << name << " should not copy through registers";
  }
  EXPECT_TRUE(has(sm80(kPlainSize), "cp.async.ca.shared.global")) << "4-byte copies go through L1";
  EXPECT_FALSE(has(sm80(kPlainSize), "cp.async.cg"));
}

TEST_F(HostCodegen, BoundCopiesRaiseThePendingCountUnlessNoinc) {
  for (const char* name : {kAligned16, kPlainSize, kToken, kParity}) {
    const std::string k = sm80(name);
    EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << name;
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc")) << name;
  }
  const std::string noinc = sm80(kNoinc);
  EXPECT_TRUE(has(noinc, "cp.async.mbarrier.arrive.noinc.b64"));
  EXPECT_FALSE(has(noinc, "cp.async.mbarrier.arrive.shared.b64"));
}

TEST_F(HostCodegen, TokenWaitsAndParityWaits) {
  for (const char* name : {kAligned16, kToken}) {
    EXPECT_TRUE(has(sm80(name), "mbarrier.test_wait.shared.b64")) << name;
    EXPECT_TRUE(has(sm90(name), "mbarrier.try_wait.shared.b64")) << name;
    EXPECT_FALSE(has(sm80(name), ".parity")) << name;
  }
  for (const char* name : {kParity, kNoinc}) {
    EXPECT_TRUE(has(sm80(name), "mbarrier.test_wait.parity.shared.b64")) << name;
    EXPECT_TRUE(has(sm90(name), "mbarrier.try_wait.parity.shared::cta.b64")) << name;
  }
}

TEST_F(HostCodegen, EveryWaitIsBounded) {
  for (const char* name : {kAligned16, kPlainSize, kToken, kParity, kNoinc}) {
    EXPECT_TRUE(has(sm80(name), "%globaltimer")) << name << " waits without a time limit";
    EXPECT_TRUE(has(sm90(name), "%globaltimer")) << name << " waits without a time limit";
  }
}

TEST_F(HostCodegen, OnlyTheRawVariantInvalidatesItsBarriers) {
  EXPECT_TRUE(has(sm80(kNoinc), "mbarrier.inval.shared.b64"));
  for (const char* name : {kAligned16, kToken, kParity}) {
    EXPECT_FALSE(has(sm80(name), "mbarrier.inval")) << name << ": a __shared__ cuda::barrier is never destroyed";
  }
}

// On 9.0 the library turns a 16-byte aligned cuda::memcpy_async on a block-scope barrier
// in shared memory into one bulk copy, issued by one thread and counted in bytes.
TEST_F(HostCodegen, OnHopperAlignedCudaMemcpyAsyncBecomesABulkCopy) {
  for (const char* name : {kAligned16, kToken, kParity}) {
    const std::string k = sm90(name);
    EXPECT_TRUE(has(k, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes")) << name;
    EXPECT_TRUE(has(k, "mbarrier.expect_tx")) << name;
    EXPECT_FALSE(has(k, "cp.async.cg")) << name;
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive")) << name << ": the bytes complete the phase, not an arrive-on";
  }
}

TEST_F(HostCodegen, OnHopperPlainSizeAndNoincStayLdgsts) {
  const std::string plain = sm90(kPlainSize);
  EXPECT_TRUE(has(plain, "cp.async.ca.shared.global")) << "4-byte alignment is below the bulk copy's 16";
  EXPECT_TRUE(has(plain, "cp.async.mbarrier.arrive.shared.b64"));
  EXPECT_FALSE(has(plain, "cp.async.bulk"));
  const std::string noinc = sm90(kNoinc);
  EXPECT_TRUE(has(noinc, "cp.async.cg.shared.global"));
  EXPECT_TRUE(has(noinc, "cp.async.mbarrier.arrive.noinc.b64"));
  EXPECT_FALSE(has(noinc, "cp.async.bulk"));
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm80_Barrier : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_Barrier() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm80_Barrier, OneBatch) {
  Problem problem(1);
  const course::Comparison result = verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Barrier, ManyMoreBatchesThanResidentBlocks) {
  Problem problem(10007);  // prime: blocks do unequal, odd and even numbers of batches
  const course::Comparison result = verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Barrier, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(333);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm80_Barrier, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// One and two blocks for many batches: each barrier goes through dozens of phases.
using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t);
class Sm80_BarrierReuse : public course::GpuTest {
 protected:
  Sm80_BarrierReuse() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm80_BarrierReuse, FewBlocksRunManyPhases) {
  const std::pair<const char*, Kernel> kernels[] = {
      {"arrive_and_wait", arrive_and_wait_kernel<cuda::aligned_size_t<16>>},
      {"arrive_and_wait_plain_size", arrive_and_wait_kernel<std::size_t>},
      {"arrive_wait_token", arrive_wait_token_kernel},
      {"parity", parity_kernel},
      {"noinc", noinc_kernel}};
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

// ---- Broken arrival counts, stopped by the bounded waits --------------------------------------

// The token variant with one arrival too many expected: phase 0 never completes.
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
