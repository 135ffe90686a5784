// Tests for 03_barrier's second lesson, the guide's lower-level spellings (barrier_primitives.cu): the partial last
// batch and the variant table on the CPU; the host model of this lesson (arrive_and_drop on the chapter's model
// barrier, done_bar's phases when threads leave, the phases a completion function counts, the pending counts a token
// may show); what each kernel compiles to (PTX for 8.0 and 9.0, sm_90 machine code); every variant bit-exact on the
// GPU over sizes with and without a partial last batch; the pending counts read with __mbarrier_token_pending_count,
// the expected count after drops and the phases counted, against the model; broken counts stopped by the bounded waits.
#include "barrier_primitives.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The model of this lesson (host code, tested here and used by the GPU tests) -------------------

/// [drop_model]
// arrive_and_drop on the chapter's model barrier: an arrival in this phase, one fewer expected from the next on.
void arrive_and_drop(BarrierModel& bar) {
  --bar.expected;
  bar.arrive(1);
}

// The pending count at the start of each done_bar phase of arrive_and_drop_kernel, for a block of `threads` threads
// whose `block_batches` batches end with one of `last_elems` elements; -1 for a phase that never completes. `drop`:
// the threads with no chunk in that batch arrive_and_drop at the end of the one before; otherwise they arrive and exit.
std::vector<int> done_phase_counts(int threads, int block_batches, int last_elems, bool drop) {
  const int stayers = std::min(threads, last_elems / kChunkElems);
  BarrierModel done;
  done.init(threads);
  std::vector<int> counts;
  for (int k = 0; k < block_batches; ++k) {
    const unsigned phase = done.phase;
    counts.push_back(done.pending);
    const bool leaving = k == block_batches - 2;        // the leavers' last batch
    const bool left = k > 0 && k == block_batches - 1;  // only the stayers are here
    done.arrive(left || (leaving && drop) ? stayers : threads);
    for (int t = stayers; leaving && drop && t < threads; ++t) arrive_and_drop(done);
    if (done.phase == phase) {
      counts.back() = -1;
      break;
    }
  }
  return counts;
}
/// [drop_model]

// The batches of block `block` in a grid of `grid` blocks (b, b + grid, ...): the phases its completion function counts.
std::size_t block_batches(unsigned block, unsigned grid, std::size_t num_batches) {
  return block < num_batches ? (num_batches - block + grid - 1) / grid : 0;
}

/// [pending_model]
// What the probe's `threads` noComplete arrivals read from their tokens, in arrival order, on a barrier counted for
// threads + 1 arrivals, with `in_flight` bound copies not landed yet: each counting arrive-on still in flight adds one.
std::vector<int> probe_counts(int threads, int in_flight) {
  BarrierModel bar;
  bar.init(threads + 1);
  bar.bind_copies(in_flight);
  std::vector<int> seen;
  for (int t = 0; t < threads; ++t) {
    seen.push_back(bar.pending);  // the count before this arrival
    bar.arrive(1);
  }
  return seen;
}
/// [pending_model]

// ---- The problem, the size rule and the table ------------------------------------------------------

TEST(HostBarrierPrimitives, PartialLastBatchIsARingOfItsOwn) {
  EXPECT_EQ(batches_of(1024), 1u);
  EXPECT_EQ(batches_of(1028), 2u);
  EXPECT_EQ(batch_elems(0, 1028), 1024);
  EXPECT_EQ(batch_elems(1, 1028), 4);
  EXPECT_EQ(batch_elems(1, 2048), 1024) << "a whole last batch";
  std::vector<std::uint32_t> in(1024 + 8);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[0], 1023u + 0u + 1u) << "a whole batch wraps at 1024";
  EXPECT_EQ(out[1024], 1031u + 2u * 1024u + 1025u) << "the partial batch of 8 wraps at its own end";
  EXPECT_EQ(out[1031], 1030u + 2u * 1031u + 1024u);
  const std::vector<std::uint32_t> one_chunk = reference({1, 2, 3, 4});
  EXPECT_EQ(one_chunk, (std::vector<std::uint32_t>{4 + 2 + 2, 1 + 4 + 3, 2 + 6 + 4, 3 + 8 + 1}));
}

TEST(HostBarrierPrimitives, SizeIsWholeChunksAndTheDefaultEndsInAPartialBatch) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_TRUE(info.size_rule(0));
  EXPECT_TRUE(info.size_rule(8));
  EXPECT_TRUE(info.size_rule(kBatchBytes + 4));
  EXPECT_FALSE(info.size_rule(16));
  EXPECT_FALSE(info.size_rule(kBatchBytes + 1024));
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  const std::size_t elems = info.verify_bytes / sizeof(std::uint32_t);
  EXPECT_EQ(batch_elems(batches_of(elems) - 1, elems), 256) << "the default --size leaves threads 64-255 out";
}

TEST(HostBarrierPrimitives, ThreeVariantsByName) {
  const char* const names[] = {"mbarrier_primitives", "arrive_and_drop", "completion_function"};
  ASSERT_EQ(std::size(kVariants), std::size(names));
  for (std::size_t i = 0; i < std::size(names); ++i) EXPECT_STREQ(kVariants[i].name, names[i]);
}

// ---- The model ------------------------------------------------------------------------------------

TEST(HostBarrierPrimitivesModel, ArriveAndDropArrivesNowAndLowersEveryLaterPhase) {
  BarrierModel bar;
  bar.init(4);
  bar.arrive(3);
  arrive_and_drop(bar);
  EXPECT_EQ(bar.phase, 1u) << "the drop is an arrival of this phase";
  EXPECT_EQ(bar.expected, 3);
  EXPECT_EQ(bar.pending, 3) << "the next phase expects one fewer";
  bar.arrive(3);
  EXPECT_EQ(bar.phase, 2u);
  EXPECT_EQ(bar.pending, 3) << "and so does every phase after it";
}

TEST(HostBarrierPrimitivesModel, LeaversDropSoTheLastReleaseExpectsOnlyTheStayers) {
  EXPECT_EQ(done_phase_counts(256, 3, 256, true), (std::vector<int>{256, 256, 64}));
  EXPECT_EQ(done_phase_counts(256, 2, 4, true), (std::vector<int>{256, 1}));
  EXPECT_EQ(done_phase_counts(256, 3, 1024, true), (std::vector<int>{256, 256, 256})) << "a whole batch: nobody leaves";
  EXPECT_EQ(done_phase_counts(256, 1, 256, true), (std::vector<int>{256})) << "no batch before it: nobody leaves";
}

TEST(HostBarrierPrimitivesModel, LeaversThatArriveAndExitLeaveTheLastReleaseHanging) {
  EXPECT_EQ(done_phase_counts(256, 3, 256, false), (std::vector<int>{256, 256, -1}));
  EXPECT_EQ(done_phase_counts(256, 3, 1024, false), (std::vector<int>{256, 256, 256})) << "harmless without leavers";
}

TEST(HostBarrierPrimitivesModel, EveryBlockCountsItsOwnBatches) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{76}, std::size_t{2049}}) {
    const unsigned grid = batch_grid(num_batches, kBatchesPerBlock);
    std::size_t total = 0;
    for (unsigned b = 0; b < grid; ++b) {
      EXPECT_GE(block_batches(b, grid, num_batches), 1u) << num_batches << " batches, block " << b;
      EXPECT_LE(block_batches(b, grid, num_batches), std::size_t{kBatchesPerBlock});
      total += block_batches(b, grid, num_batches);
    }
    EXPECT_EQ(total, num_batches);
  }
  EXPECT_EQ(block_batches(0, 1, 76), 76u);
  EXPECT_EQ(block_batches(1, 2, 75), 37u);
}

TEST(HostBarrierPrimitivesModel, ThePendingCountsAProbeMayRead) {
  EXPECT_EQ(probe_counts(4, 0), (std::vector<int>{5, 4, 3, 2})) << "no copy bound: the count falls by one per arrival";
  EXPECT_EQ(probe_counts(4, 4), (std::vector<int>{9, 8, 7, 6})) << "every arrive-on's +1 still pending";
  for (int seen : probe_counts(kBlockThreads, kBlockThreads)) EXPECT_GE(seen, 2) << "no noComplete arrival completes";
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) -----------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* arch : {"80", "90"}) ptx_[arch] = course::chapter_ptx("barrier_primitives", arch);
  }
  static std::string kernel(const std::string& arch, const std::string& name) {
    const std::string body = course::ptx_kernel_body(ptx_.at(arch), std::to_string(name.size()) + name + "PKj");
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in barrier_primitives.compute_" << arch << ".ptx";
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static inline std::map<std::string, std::string> ptx_;
};

const char* const kPrimitives = "mbarrier_primitives_kernel";
const char* const kDrop = "arrive_and_drop_kernel";
const char* const kCompletion = "completion_function_kernel";

// __pipeline_arrive_on is the counting arrive-on (its +1, then the arrival), never .noinc; the copies are 16-byte
// LDGSTS on both architectures, and the waits take a token: test_wait on 8.0, try_wait on 9.0.
TEST_F(HostCodegen, ThePrimitivesAreTheMbarrierInstructionsAndArriveOnCounts) {
  for (const char* arch : {"80", "90"}) {
    const std::string k = kernel(arch, kPrimitives);
    EXPECT_GE(course::count_matches(k, R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)"), 1) << arch;
    EXPECT_GE(course::count_matches(k, R"(cp\.async\.mbarrier\.arrive\.shared\.b64)"), 1) << arch;
    EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc")) << arch;
    EXPECT_TRUE(has(k, "mbarrier.init.shared.b64")) << arch;
    EXPECT_TRUE(has(k, "mbarrier.arrive.shared.b64")) << arch;
    EXPECT_TRUE(has(k, "mbarrier.inval.shared.b64")) << arch;
    EXPECT_FALSE(has(k, "cp.async.bulk")) << arch;
    EXPECT_FALSE(has(k, "trap;")) << arch << ": __mbarrier_try_wait's 8.0 code is a trap";
  }
  EXPECT_TRUE(has(kernel("80", kPrimitives), "mbarrier.test_wait.shared.b64"));
  EXPECT_FALSE(has(kernel("80", kPrimitives), "mbarrier.try_wait"));
  EXPECT_TRUE(has(kernel("90", kPrimitives), "mbarrier.try_wait.shared.b64"));
}

// arrive_and_drop() on a block-scope barrier in shared memory is one instruction, mbarrier.arrive_drop: for the full
// barrier of a batch a thread has no part of, and for done_bar when it leaves. The copies are the lesson's: LDGSTS on
// 8.0, bulk copies counted in bytes on 9.0 (with the proxy fence after init()).
TEST_F(HostCodegen, ArriveAndDropBecomesMbarrierArriveDrop) {
  for (const char* arch : {"80", "90"}) {
    const std::string k = kernel(arch, kDrop);
    EXPECT_GE(course::count_matches(k, R"(mbarrier\.arrive_drop\.shared\.b64)"), 2) << arch;
    EXPECT_GE(course::count_matches(k, R"(mbarrier\.init\.shared\.b64)"), 3) << arch << ": two full barriers and done";
  }
  EXPECT_TRUE(has(kernel("80", kDrop), "cp.async.mbarrier.arrive.shared.b64"));
  EXPECT_FALSE(has(kernel("80", kDrop), "cp.async.bulk"));
  EXPECT_TRUE(has(kernel("90", kDrop), "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
  EXPECT_TRUE(has(kernel("90", kDrop), "fence.proxy.async.shared::cta"));
}

// With a completion function the barrier is libcu++'s software barrier: no mbarrier instruction at all, an atomic
// add per arrival, a release store that opens the next phase. The copies cannot complete on it, so they are LDGSTS
// followed at once by cp.async.wait_all, on 9.0 too (no bulk copy: it would need an mbarrier).
TEST_F(HostCodegen, ACompletionFunctionMakesASoftwareBarrierAndSynchronousCopies) {
  for (const char* arch : {"80", "90"}) {
    const std::string k = kernel(arch, kCompletion);
    EXPECT_FALSE(has(k, "mbarrier")) << arch;
    EXPECT_TRUE(has(k, "atom.add.acq_rel.cta")) << arch << ": the arrival";
    EXPECT_TRUE(has(k, "st.release.cta")) << arch << ": the next phase opened";
    EXPECT_GE(course::count_matches(k, R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)"), 1) << arch;
    EXPECT_EQ(course::count_matches(k, R"(cp\.async\.wait_all)"), 1) << arch;
    EXPECT_FALSE(has(k, "cp.async.bulk")) << arch;
    EXPECT_FALSE(has(k, "cp.async.mbarrier")) << arch;
  }
}

TEST_F(HostCodegen, EveryWaitIsBoundedAndNoSiteGoesToLocalMemory) {
  for (const char* arch : {"80", "90"}) {
    for (const char* name : {kPrimitives, kDrop, kCompletion}) {
      const std::string k = kernel(arch, name);
      EXPECT_TRUE(has(k, "%globaltimer")) << name << ", compute_" << arch << ": a wait without a time limit";
      EXPECT_TRUE(has(k, "give_up")) << name << ", compute_" << arch << ": the course's diagnosis";
    }
    // Only the primitives' tokens, indexed by a stage known at run time, live in local memory (as barrier.cu's).
    EXPECT_EQ(course::count_matches(kernel(arch, kDrop), R"(st\.local)"), 0) << arch;
    EXPECT_EQ(course::count_matches(kernel(arch, kCompletion), R"(st\.local)"), 0) << arch;
    EXPECT_EQ(course::count_matches(kernel(arch, kPrimitives), R"(st\.local\.(?!u64))"), 0) << arch;
  }
}

// sm_90 machine code (skipped where cuobjdump or that code is missing): the counting arrive-on is
// ARRIVES.LDGSTSBAR.64.TRANSCNT (barrier.cu's test names both forms), the bulk copy UBLKCP.S.G, and the mbarrier
// waits SYNCS.PHASECHK, which the software barrier has none of.
TEST_F(HostCodegen, MachineCodeOnHopper) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto body = [&](const std::string& part) {
    const std::string k = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(k.empty()) << "no kernel " << part << " in the sm_90 machine code";
    return k;
  };
  const std::string primitives = body("26mbarrier_primitives_kernelPKj");
  EXPECT_GE(course::count_matches(primitives, R"(LDGSTS\.E\.BYPASS\.128)"), 1);
  EXPECT_GE(course::count_matches(primitives, R"(ARRIVES\.LDGSTSBAR\.64\.TRANSCNT)"), 1);
  EXPECT_EQ(course::count_matches(primitives, R"(ARRIVES\.LDGSTSBAR\.64\.ARVCNT)"), 0);
  EXPECT_GE(course::count_matches(primitives, R"(SYNCS\.PHASECHK)"), 1);
  const std::string drop = body("22arrive_and_drop_kernelPKj");
  EXPECT_GE(course::count_matches(drop, R"(UBLKCP\.S\.G)"), 1);
  EXPECT_GE(course::count_matches(drop, R"(SYNCS\.PHASECHK)"), 1);
  const std::string completion = body("26completion_function_kernelPKj");
  EXPECT_GE(course::count_matches(completion, R"(LDGSTS\.E\.BYPASS\.128)"), 1);
  EXPECT_EQ(course::count_matches(completion, "SYNCS"), 0) << "no mbarrier operation";
}

// ---- On the GPU: every variant bit-exact -------------------------------------------------------------

class Sm80_BarrierPrimitives : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_BarrierPrimitives() : GpuTest(chapter_info().requirement) {}
};

void expect_exact(Launch launch, std::size_t num_elems) {
  Problem problem(num_elems);
  const course::Comparison result = verify(launch, problem);
  EXPECT_TRUE(result.ok()) << num_elems << " elements: " << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_BarrierPrimitives, OneChunkOneBatchAndOneChunkMore) {
  for (std::size_t num_elems : {std::size_t{4}, std::size_t{1024}, std::size_t{1028}, std::size_t{2048 + 1020}}) {
    expect_exact(GetParam().launch, num_elems);
  }
}

TEST_P(Sm80_BarrierPrimitives, ManyBatchesWholeOrEndingPartial) {
  // 333 and 10007 batches: blocks of one to four batches; the partial tails leave 1, 64 and 255 threads in.
  for (std::size_t num_elems : {333 * std::size_t{1024}, 333 * std::size_t{1024} + 256, 10007 * std::size_t{1024},
                                10006 * std::size_t{1024} + 4, 10006 * std::size_t{1024} + 1020}) {
    expect_exact(GetParam().launch, num_elems);
  }
}

TEST_P(Sm80_BarrierPrimitives, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(chapter_info().verify_bytes / sizeof(std::uint32_t));
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_BarrierPrimitives, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm80_BarrierPrimitivesPhases : public course::GpuTest {
 protected:
  Sm80_BarrierPrimitivesPhases() : GpuTest(chapter_info().requirement) {}
};

// One and two blocks for 75 batches and a partial one: each barrier runs through dozens of phases, and in
// arrive_and_drop 192 threads leave the block that holds the partial batch one batch before its end.
TEST_F(Sm80_BarrierPrimitivesPhases, FewBlocksRunManyPhases) {
  using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t);
  const std::pair<const char*, Kernel> kernels[] = {{"mbarrier_primitives", mbarrier_primitives_kernel},
                                                    {"arrive_and_drop", arrive_and_drop_kernel},
                                                    {"completion_function", completion_function_kernel}};
  for (std::size_t num_elems : {75 * std::size_t{1024} + 256, 76 * std::size_t{1024}}) {
    Problem problem(num_elems);
    for (const auto& [name, kernel] : kernels) {
      for (unsigned blocks : {1u, 2u}) {
        problem.gmem_out.poison();
        kernel<<<blocks, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
        COURSE_CHECK_LAUNCH();
        COURSE_CHECK(cudaDeviceSynchronize());
        const course::Comparison result = problem.gmem_out.check(problem.expected, kBatchElems);
        EXPECT_TRUE(result.ok()) << name << ", " << blocks << " blocks, " << num_elems << " elements: "
                                 << result.summary() << '\n' << result.first;
      }
    }
  }
}

// The lesson's completion function, read back: every block counted as many phases as it has batches.
__global__ void count_phases_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems,
                                    unsigned* gmem_phases) {
  const unsigned phases = counted_batches(gmem_in, gmem_out, num_elems);
  if (threadIdx.x == 0) gmem_phases[blockIdx.x] = phases;
}

TEST_F(Sm80_BarrierPrimitivesPhases, TheCompletionFunctionCountsEveryBlocksBatches) {
  for (std::size_t num_elems : {std::size_t{4}, 75 * std::size_t{1024} + 256, 2048 * std::size_t{1024} + 256}) {
    Problem problem(num_elems);
    const std::size_t num_batches = batches_of(num_elems);
    for (unsigned grid : {1u, 3u, batch_grid(num_batches, kBatchesPerBlock)}) {
      course::DeviceBuffer<unsigned> gmem_phases(grid);
      problem.gmem_out.poison();
      count_phases_kernel<<<grid, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), num_elems,
                                                   gmem_phases.data());
      COURSE_CHECK_LAUNCH();
      COURSE_CHECK(cudaDeviceSynchronize());
      std::vector<unsigned> phases(grid);
      gmem_phases.download(phases.data());
      for (unsigned b = 0; b < grid; ++b) {
        ASSERT_EQ(phases[b], block_batches(b, grid, num_batches)) << num_elems << " elements, block " << b << " of " << grid;
      }
      const course::Comparison result = problem.gmem_out.check(problem.expected, kBatchElems);
      EXPECT_TRUE(result.ok()) << grid << " blocks: " << result.summary() << '\n' << result.first;
    }
  }
}

// ---- On the GPU: the counts the tokens read, against the model ----------------------------------------

/// [pending_count]
// TUTORIAL: __mbarrier_token_pending_count reads, from a token, the phase's pending count just before that arrival.
// PTX defines it only for tokens of mbarrier.arrive.noComplete (cuda::ptx::mbarrier_arrive_no_complete), an arrival
// that must not complete the phase; __mbarrier_arrive's tokens do not qualify. One block, one phase counted for
// blockDim.x + 1 arrivals: each thread (after binding a copy with __pipeline_arrive_on when `with_copies`) arrives
// noComplete and writes what its token saw; thread 0 makes the last arrival after a block sync.
__global__ void pending_count_probe_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_seen, bool with_copies) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ __mbarrier_t bar;
  if (threadIdx.x == 0) __mbarrier_init(&bar, blockDim.x + 1);  // every thread once, thread 0 once more
  __syncthreads();  // initialised before first use
  if (with_copies) {
    __pipeline_memcpy_async(&smem_batch[threadIdx.x * kChunkElems], gmem_in + threadIdx.x * kChunkElems, kChunkBytes);
    __pipeline_arrive_on(&bar);  // +1 until this thread's copy has landed
  }
  const __mbarrier_token_t token = cuda::ptx::mbarrier_arrive_no_complete(&bar, 1u);  // cannot complete: one is missing
  gmem_seen[threadIdx.x] = __mbarrier_token_pending_count(token);
  __syncthreads();  // every noComplete arrival made
  if (threadIdx.x == 0) (void)__mbarrier_arrive(&bar);  // the last arrival: the phase completes once the copies land
  course::bounded_wait_parity(&bar, 0, {"probe", -1, 0});  // no copy pending when the barrier is invalidated
  __syncthreads();  // every thread done waiting
  if (threadIdx.x == 0) __mbarrier_inval(&bar);
}
/// [pending_count]

// The expected count after drops, read on the GPU: in phase 0 the threads from `stayers` on arrive_and_drop on a
// cuda::barrier and the others arrive; in phase 1 thread 0 arrives noComplete first and writes what its token saw
// (`stayers` >= 2, so that arrival cannot complete the phase), then the other stayers complete it.
__global__ void expected_after_drops_kernel(int stayers, std::uint32_t* gmem_seen) {
  __shared__ block_barrier bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);  // every thread, in phase 0
  __syncthreads();  // initialised before first use
  std::uint64_t* mbar = cuda::device::barrier_native_handle(bar);
  if (static_cast<int>(threadIdx.x) < stayers) {
    (void)bar.arrive();
  } else {
    bar.arrive_and_drop();  // an arrival in phase 0, none expected from phase 1 on
  }
  course::bounded_wait_parity(mbar, 0, {"probe", -1, 0});  // phase 0 complete
  if (threadIdx.x == 0) gmem_seen[0] = __mbarrier_token_pending_count(cuda::ptx::mbarrier_arrive_no_complete(mbar, 1u));
  __syncthreads();  // thread 0's arrival came first
  if (threadIdx.x > 0 && static_cast<int>(threadIdx.x) < stayers) (void)bar.arrive();
  course::bounded_wait_parity(mbar, 1, {"probe", -1, 1});  // phase 1 completed by the stayers alone
}

class Sm80_BarrierPrimitivesCounts : public course::GpuTest {
 protected:
  Sm80_BarrierPrimitivesCounts() : GpuTest(chapter_info().requirement) {}
  // The probe's counts, sorted from the largest.
  static std::vector<int> probe(bool with_copies) {
    Problem problem(kBatchElems);
    course::DeviceBuffer<std::uint32_t> gmem_seen(kBlockThreads);
    pending_count_probe_kernel<<<1, kBlockThreads>>>(problem.gmem_in.data(), gmem_seen.data(), with_copies);
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> seen(kBlockThreads);
    gmem_seen.download(seen.data());
    std::vector<int> sorted(seen.begin(), seen.end());
    std::sort(sorted.rbegin(), sorted.rend());
    return sorted;
  }
};

TEST_F(Sm80_BarrierPrimitivesCounts, WithoutCopiesEachArrivalSeesTheCountFallByOne) {
  EXPECT_EQ(probe(false), probe_counts(kBlockThreads, 0)) << "257, 256, ..., 2 in some order";
}

// The j-th largest count lies between the model with every copy landed and with none landed (an arrive-on adds its
// +1 when issued and takes it back when its copy lands, whenever that is). What this GPU showed is printed.
TEST_F(Sm80_BarrierPrimitivesCounts, WithCopiesEachCountLiesBetweenAllLandedAndNoneLanded) {
  const std::vector<int> seen = probe(true);
  const std::vector<int> landed = probe_counts(kBlockThreads, 0);
  const std::vector<int> in_flight = probe_counts(kBlockThreads, kBlockThreads);
  for (std::size_t j = 0; j < seen.size(); ++j) {
    EXPECT_GE(seen[j], landed[j]) << j << "-th largest count";
    EXPECT_LE(seen[j], in_flight[j]) << j << "-th largest count";
  }
  std::cout << "pending counts with copies bound: largest " << seen.front() << ", smallest " << seen.back()
            << " (without: " << landed.front() << " to " << landed.back() << ")\n";
}

TEST_F(Sm80_BarrierPrimitivesCounts, TheExpectedCountShrinksByTheDrops) {
  for (int stayers : {2, 64, 255, kBlockThreads}) {
    course::DeviceBuffer<std::uint32_t> gmem_seen(1);
    expected_after_drops_kernel<<<1, kBlockThreads>>>(stayers, gmem_seen.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::uint32_t seen = 0;
    gmem_seen.download(&seen);
    BarrierModel model;
    model.init(kBlockThreads);
    model.arrive(stayers);
    for (int t = stayers; t < kBlockThreads; ++t) arrive_and_drop(model);
    EXPECT_EQ(static_cast<int>(seen), model.pending) << stayers << " stayers";
    EXPECT_EQ(model.pending, stayers);
  }
}

// ---- Broken counts, stopped by the bounded waits ------------------------------------------------------

// The primitives with one arrival too many expected: the lesson's own bounded loop must diagnose it.
__global__ void primitives_one_too_many_kernel(const std::uint32_t* gmem_in) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ __mbarrier_t full_bar;
  if (threadIdx.x == 0) __mbarrier_init(&full_bar, blockDim.x + 1);  // BROKEN: nobody makes the extra arrival
  __syncthreads();
  __pipeline_memcpy_async(&smem_batch[threadIdx.x * kChunkElems], gmem_in + threadIdx.x * kChunkElems, kChunkBytes);
  __pipeline_arrive_on(&full_bar);
  bounded_mbarrier_wait(&full_bar, __mbarrier_arrive(&full_bar), {"full", 0, 0});
}

// arrive_and_drop_kernel's release, with threads that leave after round 1: with kDrop they arrive_and_drop there,
// without it they arrive and exit, and the stayers' release of round 2 waits for them (BROKEN).
template <bool kDrop>
__global__ void leave_after_round_one_kernel(int stayers) {
  __shared__ block_barrier done_bar;
  if (threadIdx.x == 0) init(&done_bar, blockDim.x);
  __syncthreads();
  for (unsigned round = 0; round < 3; ++round) {
    if (round == 1 && static_cast<int>(threadIdx.x) >= stayers) {
      if (kDrop) {
        done_bar.arrive_and_drop();
      } else {
        (void)done_bar.arrive();
      }
      return;
    }
    course::bounded_wait(done_bar, done_bar.arrive(), {"done", -1, round});
  }
}

// The completion function's barrier counted for one thread more than the block: its bounded wait must diagnose it.
__global__ void completion_one_too_many_kernel() {
  __shared__ counting_barrier bar;
  __shared__ unsigned completed;
  if (threadIdx.x == 0) {
    completed = 0;
    init(&bar, blockDim.x + 1, CountPhase{&completed});  // BROKEN: nobody makes the extra arrival
  }
  __syncthreads();
  bounded_wait_counted(bar, bar.arrive(), completed, 0, {"full", 0, 0});
}

class Sm80_BarrierPrimitivesBroken : public course::GpuTest {
 protected:
  Sm80_BarrierPrimitivesBroken() : GpuTest(chapter_info().requirement) {}
};

// Launchers without a synchronisation: the death test's child synchronises and reports.
void launch_primitives_one_too_many(const std::uint32_t* gmem_in) {
  primitives_one_too_many_kernel<<<2, kBlockThreads>>>(gmem_in);
  COURSE_CHECK_LAUNCH();
}
template <bool kDrop>
void launch_leave_after_round_one() {
  leave_after_round_one_kernel<kDrop><<<2, kBlockThreads>>>(64);
  COURSE_CHECK_LAUNCH();
}
void launch_completion_one_too_many() {
  completion_one_too_many_kernel<<<2, kBlockThreads>>>();
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm80_BarrierPrimitivesBroken, OneArrivalTooManyIsDiagnosedByThePrimitivesWait) {
  Problem problem(kBatchElems);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_primitives_one_too_many(problem.gmem_in.data()),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

TEST_F(Sm80_BarrierPrimitivesBroken, ThreadsThatLeaveWithArriveAndDropAreNotWaitedFor) {
  launch_leave_after_round_one<true>();
  COURSE_CHECK(cudaDeviceSynchronize());
}

TEST_F(Sm80_BarrierPrimitivesBroken, ThreadsThatLeaveWithAPlainArriveAreWaitedForForever) {
  COURSE_EXPECT_DIAGNOSED_HANG(launch_leave_after_round_one<false>(),
                               "bounded wait: gave up .*barrier 'done', stage -, phase 2", 30.0);
}

TEST_F(Sm80_BarrierPrimitivesBroken, OneArrivalTooManyIsDiagnosedByTheCountingWait) {
  COURSE_EXPECT_DIAGNOSED_HANG(launch_completion_one_too_many(),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
