// Tests for 06_tma_1d's further lesson, bulk_spellings.cu: the order rule of expect-tx played on a
// model barrier (course::MbarrierModel), the variant table and the command line (host); what each
// kernel compiles to for compute_90: the arrival that carries the bytes, mbarrier.expect_tx and no
// arrive.expect_tx, the full cp.async.bulk.wait_group against the .read form (PTX, and sm_90
// machine code where cuobjdump can read it); every variant bit-exact on the GPU at awkward sizes,
// in place and repeated; wait_group's read-back
// covering every word without a mismatch, and catching a store that falls short; requests that break
// a rule refused before launch; arrivals made before the expect-tx completing the phase before the
// copy is even issued; an expect-tx larger than the copy diagnosed by the bounded wait.
#include "bulk_spellings.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/mbarrier_model.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The order rule of expect-tx, on a model barrier --------------------------------------------

// One tile's phase on a barrier of kBlockThreads arrivals, the events in the given order:
//   E  the leader's expect-tx of the tile's bytes (no arrival)
//   L  the leader's own plain arrival
//   A  the arrivals of every other thread
//   C  the copy's bytes land (complete-tx)
// Returns the index of the event after which phase 0 had completed, or -1 if it never did.
int completing_event(const std::string& order, int bytes = static_cast<int>(kTileBytes)) {
  course::MbarrierModel bar;
  bar.init(kBlockThreads);
  for (std::size_t i = 0; i < order.size(); ++i) {
    switch (order[i]) {
      case 'E': bar.expect_tx(bytes); break;
      case 'L': bar.arrive(); break;
      case 'A': for (int t = 1; t < kBlockThreads; ++t) bar.arrive(); break;
      case 'C': bar.complete_tx(bytes); break;
      default: ADD_FAILURE() << "unknown event " << order[i];
    }
    if (bar.phase_done(0)) return static_cast<int>(i);
  }
  return -1;
}

TEST(HostBulkSpellingsExpectOrder, TheLessonsOrderCompletesOnlyWhenTheBytesHaveLanded) {
  // expect_tx_then_arrive: E before L in the leader; the others and the copy come when they come.
  EXPECT_EQ(completing_event("ELAC"), 3) << "slow copy: the phase waits for its bytes";
  EXPECT_EQ(completing_event("AELC"), 3) << "the others arrive first: still waits for the bytes";
  EXPECT_EQ(completing_event("ECAL"), 3) << "fast copy: the last arrival completes the phase, bytes in";
  EXPECT_EQ(completing_event("EACL"), 3);
}

TEST(HostBulkSpellingsExpectOrder, CopyBeforeExpectIsLegalWhileTheLeadersArrivalIsMissing) {
  // The guide's order (copy, then expect-tx): the count dips to -bytes and returns to zero.
  EXPECT_EQ(completing_event("CEAL"), 3);
  EXPECT_EQ(completing_event("ACEL"), 3);
}

TEST(HostBulkSpellingsExpectOrder, ArrivingBeforeTheExpectCompletesThePhaseWithoutTheBytes) {
  // The leader arrives first: once the others are in, phase 0 completes with nothing announced,
  // before its expect-tx and before a byte has landed (Sm90_BulkSpellingsOrder runs this).
  EXPECT_EQ(completing_event("LAEC"), 1);
  EXPECT_EQ(completing_event("ALEC"), 1);
  // The late expect-tx and the bytes then count in phase 1: the next tile's phase waits for this
  // tile's bytes, not its own, and every later phase is one tile late.
  course::MbarrierModel bar;
  bar.init(kBlockThreads);
  for (int t = 0; t < kBlockThreads; ++t) bar.arrive();
  bar.expect_tx(static_cast<int>(kTileBytes));
  bar.complete_tx(static_cast<int>(kTileBytes));
  EXPECT_EQ(bar.completed, 1u);
  EXPECT_EQ(bar.tx, 0) << "phase 1 has taken this tile's bytes for its own";
}

TEST(HostBulkSpellingsExpectOrder, OnePhaseCountsTheTileButNotAMebibyte) {
  EXPECT_LE(kTileBytes, kMaxTxBytes);
  EXPECT_TRUE(is_legal_tile(kTileBytes));
  EXPECT_FALSE(is_legal_tile(std::size_t{1} << 20)) << "2^20 bytes do not fit one phase's transaction count";
}

// ---- The variant table and the command line -----------------------------------------------------

TEST(HostBulkSpellings, CommandLineAsInTheLesson) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_STREQ(info.program, "bulk_spellings");
  EXPECT_EQ(info.requirement.major, 9);
  EXPECT_EQ(info.bench_bytes, std::size_t{1} << 30);
  EXPECT_FALSE(info.size_rule(16));
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_EQ(tile_bytes_of(num_tiles_of(info.verify_bytes, kTileBytes) - 1, info.verify_bytes, kTileBytes), 48u)
      << "the default run ends on a ragged tile";
  ASSERT_TRUE(info.size_rule(4100));
  EXPECT_TRUE(contains(*info.size_rule(4100), "multiple of 16 bytes"));
  char program[] = "bulk_spellings", variant[] = "--variant=wait_group_read";
  char* argv[] = {program, variant, nullptr};
  EXPECT_THROW(course::resolve_options(2, argv, info, course::variant_infos(kVariants)), course::UsageError)
      << "the .read form is not a variant of its own: the other three use it";
}

TEST(HostBulkSpellings, TheHostModelPrintsTheRules) {
  std::ostringstream out;
  chapter_info().host_model(out);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "expect-tx without arriving: before the issuing thread's own arrival, at most 1048575"))
      << text;
  EXPECT_TRUE(contains(text, "1025 elements, 4100 bytes")) << text;
}

// ---- What the compiler emits for compute_90 ----------------------------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("bulk_spellings", "90"); }
  static std::string kernel(const std::string& name_part) {
    EXPECT_FALSE(ptx_.empty()) << "no bulk_spellings.compute_90.ptx in " << COURSE_PTX_DIR;
    const std::string k = course::ptx_kernel_body(ptx_, name_part);
    EXPECT_FALSE(k.empty()) << "no kernel " << name_part << " in bulk_spellings.compute_90.ptx";
    return k;
  }
  static inline std::string ptx_;
};

constexpr const char* kExpectKernel = "28expect_tx_then_arrive_kernel";
constexpr const char* kWaitGroupKernel = "17wait_group_kernel";
constexpr const char* kArriveTxKernel = "22memcpy_async_tx_kernel";
const char* const kKernels[] = {kArriveTxKernel, kExpectKernel, kWaitGroupKernel};
constexpr const char* kExpectTx = "mbarrier.expect_tx.relaxed.cta.shared::cta.b64";
constexpr const char* kWaitRead = "cp.async.bulk.wait_group.read 0";
constexpr const char* kWaitFull = "cp.async.bulk.wait_group 0";

TEST_F(HostCodegen, MemcpyAsyncTxLeavesTheBytesToTheArrival) {
  const std::string k = kernel(kArriveTxKernel);
  EXPECT_TRUE(contains(k, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"));
  EXPECT_FALSE(contains(k, "mbarrier.expect_tx")) << "no separate expect-tx: the arrival carries the bytes";
}

TEST_F(HostCodegen, ExpectTxThenArriveAnnouncesWithoutArrivingThenArrivesPlainly) {
  const std::string k = kernel(kExpectKernel);
  const std::size_t expect = k.find(kExpectTx);
  const std::size_t copy = k.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes");
  const std::size_t arrive = k.find("mbarrier.arrive.shared::cta.b64");
  ASSERT_NE(expect, std::string::npos) << "cuda::device::barrier_expect_tx is mbarrier.expect_tx";
  ASSERT_NE(copy, std::string::npos) << "memcpy_async_tx is a bulk copy";
  ASSERT_NE(arrive, std::string::npos) << "every thread's plain arrive()";
  EXPECT_FALSE(contains(k, "mbarrier.arrive.expect_tx")) << "no arrival carries bytes in this variant";
  EXPECT_LT(expect, copy) << "announce, then copy";
  EXPECT_LT(expect, arrive) << "the leader's expect-tx comes before its own arrival";
  for (const char* name : {kWaitGroupKernel, kArriveTxKernel}) {
    EXPECT_FALSE(contains(kernel(name), kExpectTx)) << name << ": its arrivals carry the bytes";
  }
}

TEST_F(HostCodegen, WaitGroupWaitsForTheWritesThenReadsTheDestinationBack) {
  const std::string k = kernel(kWaitGroupKernel);
  const std::size_t store = k.find("cp.async.bulk.global.shared::cta.bulk_group");
  const std::size_t wait = k.find(kWaitFull);
  ASSERT_NE(store, std::string::npos);
  ASSERT_NE(wait, std::string::npos) << "cp_async_bulk_wait_group: no .read";
  EXPECT_FALSE(contains(k, kWaitRead)) << "this kernel's only wait is the full one";
  const std::size_t read_back = k.find("ld.global.v4.u32", wait);
  EXPECT_NE(read_back, std::string::npos) << "the issuing thread reads the destination after the wait";
  EXPECT_EQ(k.find("ld.global"), read_back) << "no global load before the wait";
  EXPECT_FALSE(contains(k, "ld.global.nc")) << "the read-back must not go through the read-only path";
  EXPECT_LT(store, wait);
}

TEST_F(HostCodegen, TheOtherKernelsWaitOnlyForTheirStoresToReadTheTile) {
  for (const char* name : {kArriveTxKernel, kExpectKernel}) {
    const std::string k = kernel(name);
    EXPECT_TRUE(contains(k, kWaitRead)) << name;
    EXPECT_FALSE(contains(k, kWaitFull)) << name << ": no wait for the writes";
    EXPECT_FALSE(contains(k, "ld.global.v4")) << name << ": nothing read back";
  }
}

TEST_F(HostCodegen, EveryKernelIsElectedFencedAndStoresThroughAFencedBulkStore) {
  for (const char* name : kKernels) {
    const std::string k = kernel(name);
    const std::size_t fence = k.find("fence.proxy.async.shared::cta");
    const std::size_t sync = k.find("bar.sync", fence == std::string::npos ? 0 : fence);
    const std::size_t store = k.find("cp.async.bulk.global.shared::cta.bulk_group");
    ASSERT_NE(fence, std::string::npos) << name;
    ASSERT_NE(store, std::string::npos) << name;
    EXPECT_LT(fence, sync) << name << ": the fence comes before the block sync";
    EXPECT_LT(sync, store) << name << ": the block sync comes before the store";
    EXPECT_TRUE(contains(k, "cp.async.bulk.commit_group")) << name;
    EXPECT_TRUE(contains(k, "elect.sync")) << name;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
    EXPECT_FALSE(contains(k, "cp.async.cg")) << name << ": no LDGSTS";
  }
}

TEST_F(HostCodegen, MachineCodeHasTheBulkCopiesAndTheReadBack) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (const char* name : kKernels) {
    const std::string k = course::sass_kernel_body(sass, name);
    ASSERT_FALSE(k.empty()) << "no " << name << " in the sm_90 machine code";
    EXPECT_GE(course::count_matches(k, "UBLKCP\\.S\\.G"), 1) << name;
    EXPECT_GE(course::count_matches(k, "UBLKCP\\.G\\.S"), 1) << name;
    EXPECT_GE(course::count_matches(k, "FENCE\\.VIEW\\.ASYNC\\.S"), 1) << name;
  }
  EXPECT_GE(course::count_matches(course::sass_kernel_body(sass, kWaitGroupKernel), "LDG\\.E\\.128"), 1)
      << "the read-back loads 16 bytes at a time";
}

// ---- On the GPU: every variant ---------------------------------------------------------------

class Sm90_BulkSpellings : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_BulkSpellings() : GpuTest(chapter_info().requirement) {}
  static std::size_t elems(std::size_t bytes) { return bytes / sizeof(std::uint32_t); }
  void expect_correct(std::size_t num_bytes) {
    Problem problem(elems(num_bytes));
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << num_bytes << " bytes: " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_BulkSpellings, OneTile) { expect_correct(GetParam().tile_bytes); }

TEST_P(Sm90_BulkSpellings, SixteenBytesOnly) { expect_correct(16); }

TEST_P(Sm90_BulkSpellings, ManyTilesWithARaggedLastTile) { expect_correct(777 * GetParam().tile_bytes + 48); }

TEST_P(Sm90_BulkSpellings, TheDefaultSize) { expect_correct(chapter_info().verify_bytes); }

TEST_P(Sm90_BulkSpellings, InPlace) {
  const std::size_t num_elems = elems(5 * GetParam().tile_bytes + 16);
  Problem problem(num_elems);
  problem.gmem_out.poison();
  COURSE_CHECK(cudaMemcpy(problem.gmem_out.data(), problem.host_in.data(), num_elems * sizeof(std::uint32_t),
                          cudaMemcpyHostToDevice));  // the output array starts as the input
  GetParam().launch(problem.gmem_out.data(), problem.gmem_out.data(), num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = problem.gmem_out.check(problem.expected);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_BulkSpellings, RepeatedRunsGiveTheSameBits) {
  Problem problem(elems(33 * GetParam().tile_bytes));
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

TEST_P(Sm90_BulkSpellings, BrokenRulesAreRefusedBeforeAnythingIsLaunched) {
  Problem problem(elems(4 * GetParam().tile_bytes));
  problem.gmem_out.poison();
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data() + 1, problem.gmem_out.data(), problem.num_elems - 4),
               course::UsageError);  // input 4 bytes past a 16-byte boundary
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data(), problem.gmem_out.data() + 2, problem.num_elems - 4),
               course::UsageError);  // output 8 bytes past
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems - 1),
               course::UsageError);  // 4 bytes short of a 16-byte unit
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data(), problem.gmem_in.data() + 4, problem.num_elems - 4),
               course::UsageError);  // output overlapping the input by all but 16 bytes
  COURSE_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(problem.gmem_out.check(problem.expected).untouched, problem.num_elems)
      << "a refused request must not write anything";
}

// A variant of the table by its name (the tests do not depend on the table's order).
const Variant& variant_named(const std::string& name) {
  for (const Variant& v : kVariants) {
    if (name == v.name) return v;
  }
  throw std::invalid_argument("no variant " + name);
}

const auto kVariantName = [](const auto& info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(Lesson, Sm90_BulkSpellings, ::testing::ValuesIn(kVariants), kVariantName);

// ---- On the GPU: wait_group's read-back ------------------------------------------------------

class Sm90_BulkSpellingsReadBack : public course::GpuTest {
 protected:
  Sm90_BulkSpellingsReadBack() : GpuTest(chapter_info().requirement) {}
  static ReadbackTally tally() {
    ReadbackTally t{};
    COURSE_CHECK(cudaMemcpyFromSymbol(&t, gmem_readback, sizeof t));
    return t;
  }
};

TEST_F(Sm90_BulkSpellingsReadBack, TheIssuingThreadsReadBackEveryWordAndFindNoMismatch) {
  for (const std::size_t num_bytes : {std::size_t{16}, kTileBytes, 777 * kTileBytes + 48, chapter_info().verify_bytes}) {
    Problem problem(num_bytes / sizeof(std::uint32_t));
    const course::Comparison result = verify(variant_named("wait_group"), problem);
    EXPECT_TRUE(result.ok()) << num_bytes << " bytes: " << result.summary() << '\n' << result.first;
    const ReadbackTally t = tally();
    EXPECT_EQ(t.words, problem.num_elems) << num_bytes << " bytes: every stored word is read back once";
    EXPECT_EQ(t.mismatches, 0u) << num_bytes << " bytes: after the full wait the writes are visible to the issuer";
  }
}

TEST_F(Sm90_BulkSpellingsReadBack, NoOtherVariantReadsBack) {
  for (const Variant* v : {&variant_named("memcpy_async_tx"), &variant_named("expect_tx_then_arrive")}) {
    Problem problem((64 * kTileBytes + 48) / sizeof(std::uint32_t));
    ASSERT_TRUE(verify(*v, problem).ok()) << v->name;
    EXPECT_EQ(tally().words, 0u) << v->name << " waits only for its stores to read the tile";
  }
}

// wait_group_kernel's store and full wait, with a store 16 bytes short of the tile: the read-back
// finds the last four words of every tile still poisoned.
__global__ void short_store_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;
  if (is_elected_leader()) {
    ptx::mbarrier_init(&full_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  unsigned long long differing = 0;
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar, bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile, gmem_in + tile * kTileElems, bytes, &full_bar);
    }
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    ptx::fence_proxy_async(ptx::space_shared);
    __syncthreads();
    if (is_elected_leader()) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_out + tile * kTileElems, smem_tile, bytes - 16);  // SHORT
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
      differing += count_differing(gmem_out + tile * kTileElems, smem_tile, bytes);
      ptx::fence_proxy_async(ptx::space_shared);
    }
  }
  if (is_elected_leader()) atomicAdd(&gmem_readback.mismatches, differing);
}

TEST_F(Sm90_BulkSpellingsReadBack, TheReadBackCatchesAStoreThatFallsShort) {
  const std::size_t num_bytes = 37 * kTileBytes + 48;  // every tile longer than 16 bytes
  Problem problem(num_bytes / sizeof(std::uint32_t));
  const ReadbackTally zero{};
  COURSE_CHECK(cudaMemcpyToSymbol(gmem_readback, &zero, sizeof zero));
  problem.gmem_out.poison();
  short_store_kernel<<<5, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), num_bytes);
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  std::size_t expected_differing = 0;  // the last 4 words of each tile, where the tile's value is not the poison
  for (std::size_t tile = 0; tile < num_tiles_of(num_bytes, kTileBytes); ++tile) {
    const std::size_t end = tile * kTileElems + tile_bytes_of(tile, num_bytes, kTileBytes) / sizeof(std::uint32_t);
    for (std::size_t i = end - 4; i < end; ++i) {
      expected_differing += problem.expected[i] != course::poison_value<std::uint32_t>();
    }
  }
  ASSERT_GT(expected_differing, 0u);
  EXPECT_EQ(tally().mismatches, expected_differing);
  EXPECT_FALSE(problem.gmem_out.check(problem.expected).ok()) << "and the host sees the same short tiles";
}

// ---- On the GPU: the order rule, and a wrong byte count ------------------------------------------

// Phase 0 of a barrier of blockDim.x arrivals: the leader's expect-tx before (kExpectFirst) or after
// every thread's arrival. After a block sync, when all arrivals are in and no copy has been issued,
// every block records whether phase 0 has already completed. Then the copy, and the waits that
// leave no copy in flight when the block exits.
template <bool kExpectFirst>
__global__ void expect_order_kernel(const std::uint32_t* gmem_in, int* gmem_completed_before_copy) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (kExpectFirst && is_elected_leader()) cuda::device::barrier_expect_tx(full_bar, kTileBytes);
  block_barrier::arrival_token token = full_bar.arrive();
  __syncthreads();  // every arrival of phase 0 is in; no copy has been issued yet
  const bool completed = ptx::mbarrier_test_wait_parity(cuda::device::barrier_native_handle(full_bar), 0u);
  if (is_elected_leader()) {
    if (!kExpectFirst) cuda::device::barrier_expect_tx(full_bar, kTileBytes);  // BROKEN: too late, phase 1's
    cuda::device::memcpy_async_tx(smem_tile, gmem_in, cuda::aligned_size_t<16>(kTileBytes), full_bar);
  }
  course::bounded_wait(full_bar, std::move(token), {"full", 0, 0});
  if (threadIdx.x == 0) gmem_completed_before_copy[blockIdx.x] = completed ? 1 : 0;
  // With the late expect-tx, phase 1 holds the copy's bytes: arrive once more to wait for them.
  if (!kExpectFirst) course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, 1});
}

class Sm90_BulkSpellingsOrder : public course::GpuTest {
 protected:
  Sm90_BulkSpellingsOrder() : GpuTest(chapter_info().requirement) {}
  template <bool kExpectFirst>
  static std::vector<int> completed_before_copy() {
    constexpr int kBlocks = 16;
    Problem problem(kTileElems);
    course::DeviceBuffer<int> gmem_flags(kBlocks);
    COURSE_CHECK(cudaMemset(gmem_flags.data(), 0xff, kBlocks * sizeof(int)));  // -1: never written
    expect_order_kernel<kExpectFirst><<<kBlocks, kBlockThreads>>>(problem.gmem_in.data(), gmem_flags.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<int> flags(kBlocks);
    gmem_flags.download(flags.data());
    return flags;
  }
};

TEST_F(Sm90_BulkSpellingsOrder, AnExpectTxBeforeTheLeadersArrivalHoldsThePhaseForTheBytes) {
  for (const int flag : completed_before_copy<true>()) EXPECT_EQ(flag, 0) << "phase 0 completed with no copy issued";
}

TEST_F(Sm90_BulkSpellingsOrder, ArrivalsBeforeTheExpectTxCompleteThePhaseBeforeTheCopyIsIssued) {
  for (const int flag : completed_before_copy<false>()) EXPECT_EQ(flag, 1) << "phase 0 should be over already";
}

// expect_tx_then_arrive_kernel with 16 bytes more announced than the copy delivers: the
// transaction count never returns to zero, so phase 0 of full_bar never completes.
__global__ void expect_too_many_bytes_kernel(const std::uint32_t* gmem_in, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  const std::uint32_t bytes = tile_bytes_of(blockIdx.x, num_bytes, kTileBytes);
  if (is_elected_leader()) {
    cuda::device::barrier_expect_tx(full_bar, bytes + 16);  // BROKEN
    cuda::device::memcpy_async_tx(smem_tile, gmem_in + blockIdx.x * kTileElems, cuda::aligned_size_t<16>(bytes),
                                  full_bar);
  }
  course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, 0});
}

class Sm90_BulkSpellingsBroken : public course::GpuTest {
 protected:
  Sm90_BulkSpellingsBroken() : GpuTest(chapter_info().requirement) {}
};

void launch_expect_too_many_bytes(Problem& problem) {
  expect_too_many_bytes_kernel<<<2, kBlockThreads>>>(problem.gmem_in.data(), problem.num_elems * sizeof(std::uint32_t));
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm90_BulkSpellingsBroken, ExpectTxLargerThanTheCopyIsDiagnosed) {
  Problem problem(2 * kTileElems);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_expect_too_many_bytes(problem),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
