// Tests for 06_tma_1d, lesson, lab and model: the host rules for bulk copies, the tile and ring
// plans and the stage cursor (model); what each kernel compiles to for compute_90 (which copy
// cuda::memcpy_async really issues) and, where cuobjdump can read it, for sm_90; every variant of
// lesson and lab bit-exact on the GPU at awkward sizes and in place; rings of 1-4 stages, dealt
// and in order, and the largest shared-memory ring; requests that break a rule refused before
// launch; the chapter's election against the library's; a wrong byte count diagnosed.
#include "tma_1d_lab.cu"
#include "tma_1d_figures.cpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "course/codegen.hpp"
#include "course/elect.cuh"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

using Launch = decltype(Variant::launch);  // one launcher signature for lesson and lab

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The problem and the command line ---------------------------------------------------------

TEST(HostTma1d, ModifyIsThreeXPlusOneModuloTwoToThe32) {
  EXPECT_EQ(modify(0u), 1u);
  EXPECT_EQ(modify(5u), 16u);
  EXPECT_EQ(modify(0x55555555u), 0u);  // 3 * 0x55555555 = 0xFFFFFFFF
  const std::vector<std::uint32_t> out = reference({7u, 8u});
  EXPECT_EQ(out, (std::vector<std::uint32_t>{22u, 25u}));
}

TEST(HostTma1d, SizeRuleAsksForSixteenByteUnits) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(16));
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  ASSERT_TRUE(info.size_rule(4100));
  EXPECT_TRUE(contains(*info.size_rule(4100), "multiple of 16 bytes"));
  EXPECT_NE(info.verify_bytes % kTileBytes, 0u) << "the default run should exercise a ragged last tile";
  EXPECT_NE(info.verify_bytes % kStageBytes, 0u) << "... in the ring too";
}

TEST(HostTma1d, TheLabTakesTheLessonsCommandLine) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_STREQ(lesson.program, "tma_1d");
  EXPECT_STREQ(lab.program, "tma_1d_lab");
  EXPECT_EQ(lab.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab.bench_bytes, lesson.bench_bytes);
  EXPECT_EQ(lab.requirement.major, 9);
  ASSERT_TRUE(lab.size_rule(4100));
  EXPECT_EQ(*lab.size_rule(4100), *lesson.size_rule(4100));
}

// Names as --variant takes them: unique within a program.
template <class Table>
std::vector<std::string> unique_names(const Table& table) {
  std::vector<std::string> names;
  for (const Variant& v : table) {
    EXPECT_EQ(std::find(names.begin(), names.end(), v.name), names.end()) << v.name << " twice";
    names.push_back(v.name);
  }
  return names;
}

TEST(HostTma1d, TheLabRecordsTheCounterRingAsItsTimeline) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_FALSE(lesson.timeline) << "a lesson records no timeline";
  ASSERT_TRUE(lab.timeline);
  EXPECT_EQ(lab.timeline_variant, "counter_sync_ring");
  EXPECT_NE(std::find_if(std::begin(lab::kVariants), std::end(lab::kVariants),
                         [&](const Variant& v) { return v.name == lab.timeline_variant; }),
            std::end(lab::kVariants))
      << "the recorded variant is a row of the lab";
  EXPECT_FALSE(lab.size_rule(lab.timeline_bytes));
  EXPECT_GE(lab.timeline_bytes, 132u * course::timeline::kDefaultIterations * kStageBytes)
      << "on an H100 (132 SMs, one ring per SM) every block takes at least the recorded number of tiles";
}

TEST(HostTma1d, LessonAndLabVariantNamesAreUniquePerProgram) {
  EXPECT_LE(unique_names(kVariants).size(), 4u) << "a lesson has at most 4 variants";
  unique_names(lab::kVariants);
}

// ---- The tile plan ------------------------------------------------------------------------------

TEST(HostTiles, RaggedEndIsOneSmallerLegalCopy) {
  const std::size_t num_bytes = 3 * kTileBytes + 48;
  ASSERT_EQ(num_tiles_of(num_bytes, kTileBytes), 4u);
  std::size_t total = 0;
  for (std::size_t t = 0; t < 4; ++t) {
    const std::uint32_t bytes = tile_bytes_of(t, num_bytes, kTileBytes);
    EXPECT_EQ(bytes % kBulkAlignBytes, 0u) << "tile " << t;
    total += bytes;
  }
  EXPECT_EQ(tile_bytes_of(3, num_bytes, kTileBytes), 48u);
  EXPECT_EQ(total, num_bytes);
}

TEST(HostTiles, WholeTilesAndTinyArrays) {
  EXPECT_EQ(num_tiles_of(4 * kStageBytes, kStageBytes), 4u);
  EXPECT_EQ(tile_bytes_of(3, 4 * kStageBytes, kStageBytes), kStageBytes);
  EXPECT_EQ(num_tiles_of(16, kTileBytes), 1u);
  EXPECT_EQ(tile_bytes_of(0, 16, kTileBytes), 16u);
}

TEST(HostTiles, ALegalTileIsWholeSixteenByteUnitsWithinOnePhase) {
  EXPECT_TRUE(is_legal_tile(16));
  EXPECT_TRUE(is_legal_tile(kTileBytes));
  EXPECT_TRUE(is_legal_tile(kStageBytes));
  EXPECT_TRUE(is_legal_tile(kMaxTxBytes / 16 * 16)) << "the largest tile one barrier phase can count";
  EXPECT_FALSE(is_legal_tile(0));
  EXPECT_FALSE(is_legal_tile(8)) << "not whole 16-byte units";
  EXPECT_FALSE(is_legal_tile(std::size_t{1} << 20)) << "1 MiB is one byte more than a phase counts";
  EXPECT_EQ(kMaxTxBytes, (std::size_t{1} << 20) - 1);
}

// ---- The rules checked on the host -----------------------------------------------------------

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(HostBulkCopyRules, AlignedDisjointOrIdenticalArraysPass) {
  EXPECT_FALSE(bulk_copy_problem(at(0x10000), at(0x20000), 4096));
  EXPECT_FALSE(bulk_copy_problem(at(0x10000), at(0x10000), 4096)) << "in place is allowed";
  EXPECT_FALSE(bulk_copy_problem(at(0x10000), at(0x10000 + 4096), 4096)) << "adjacent is not overlapping";
}

TEST(HostBulkCopyRules, LengthNotAMultipleOfSixteenBytesIsRejected) {
  const auto broken = bulk_copy_problem(at(0x10000), at(0x20000), 4100);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "multiple of 4 uint32 elements")) << *broken;
  EXPECT_TRUE(contains(*broken, "1025 elements, 4100 bytes")) << *broken;
}

TEST(HostBulkCopyRules, MisalignedInputIsRejected) {
  const auto broken = bulk_copy_problem(at(0x10004), at(0x20000), 4096);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "the input is 4 bytes past a 16-byte boundary")) << *broken;
}

TEST(HostBulkCopyRules, MisalignedOutputIsRejected) {
  const auto broken = bulk_copy_problem(at(0x10000), at(0x20008), 4096);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "the output is 8 bytes past a 16-byte boundary")) << *broken;
}

TEST(HostBulkCopyRules, PartialOverlapIsRejected) {
  const auto broken = bulk_copy_problem(at(0x10000), at(0x10000 + 1024), 4096);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "must not partly overlap")) << *broken;
  EXPECT_TRUE(bulk_copy_problem(at(0x10000 + 1024), at(0x10000), 4096));
}

TEST(HostBulkCopyRules, RequireThrowsAUsageError) {
  EXPECT_THROW(require_bulk_copy_rules(at(0x10004), at(0x20000), 4096), course::UsageError);
  EXPECT_NO_THROW(require_bulk_copy_rules(at(0x10000), at(0x20000), 4096));
}

// ---- The ring's shared-memory plan -----------------------------------------------------------

TEST(HostSmemPlan, RingMustFitTheOptInMaximum) {
  constexpr std::size_t kH100OptIn = 232448;  // 227 KiB, cudaDevAttrMaxSharedMemoryPerBlockOptin on H100/H200
  EXPECT_FALSE(smem_plan_problem(ring_smem_bytes(4, kStageBytes), kH100OptIn));
  EXPECT_FALSE(smem_plan_problem(ring_smem_bytes(4, 56 * 1024), kH100OptIn));
  EXPECT_FALSE(smem_plan_problem(0, kH100OptIn)) << "the single-tile kernels use no dynamic shared memory";
  const auto broken = smem_plan_problem(ring_smem_bytes(4, 64 * 1024), kH100OptIn);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "262208 bytes")) << *broken;
  EXPECT_TRUE(contains(*broken, "allows 232448")) << *broken;
}

TEST(HostSmemPlan, TilesComeFirstThenEightByteBarriers) {
  EXPECT_EQ(prefetch_smem_bytes(2, kStageBytes), 2 * kStageBytes + 16) << "one barrier per stage";
  EXPECT_EQ(ring_smem_bytes(4, kStageBytes), 4 * kStageBytes + 64) << "the lesson's ring: full, empty";
  EXPECT_EQ(kStageBytes % kBulkAlignBytes, 0u) << "every stage starts 16-byte aligned";
  EXPECT_EQ((4 * kStageBytes) % alignof(std::uint64_t), 0u) << "the barriers after the tiles are 8-byte aligned";
}

TEST(HostSmemPlan, BlocksPerSmOnNinePointZeroForOneToFourStages) {
  // 6, 3, 2 and 1 blocks of 1, 2, 3 and 4 stages of 32 KiB; 4 stages of 56 KiB still fit one.
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(1, kStageBytes)), 6u);
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(2, kStageBytes)), 3u);
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(3, kStageBytes)), 2u);
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(4, kStageBytes)), 1u);
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(4, 56 * 1024)), 1u);
  EXPECT_EQ(ring_blocks_per_sm_90(ring_smem_bytes(4, 57 * 1024)), 0u) << "no longer fits an SM";
}

TEST(HostSmemPlan, TheHostModelPrintsTheRulesTheWaitsAndThePlan) {
  std::ostringstream out;
  print_host_model<kStages>(out, kStageBytes);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "at most 1048575 bytes per barrier phase")) << text;
  EXPECT_TRUE(contains(text, "1025 elements, 4100 bytes")) << text;
  EXPECT_TRUE(contains(text, "0/0 1/0 2/0 3/0 0/1 1/1 2/1 3/1 0/0 1/0")) << text;
  EXPECT_TRUE(contains(text, "ring of 4 x 32 KiB: 131136 bytes per block, 1 block per SM on 9.0, up to 128 KiB"))
      << text;
  EXPECT_TRUE(contains(text, "ring of 2 x 32 KiB: 65568 bytes per block, 3 blocks per SM on 9.0, up to 192 KiB"))
      << text;
  EXPECT_FALSE(contains(text, "ring of 1 x")) << "the ring needs two stages at least:\n" << text;
}

// ---- The stage cursor the rings use (course::StageCursor) --------------------------------------

template <int kRingStages>
void expect_cursor_sequence() {
  course::StageCursor<kRingStages> cursor;
  for (int k = 0; k < 20; ++k, cursor.advance()) {
    ASSERT_EQ(cursor.stage, k % kRingStages) << kRingStages << " stages, tile " << k;
    ASSERT_EQ(cursor.phase, static_cast<std::uint32_t>((k / kRingStages) & 1)) << kRingStages << " stages, tile " << k;
  }
}

TEST(HostStageCursor, ParityFlipsOncePerRoundForOneToFourStages) {
  expect_cursor_sequence<1>();  // one stage: the parity flips on every tile
  expect_cursor_sequence<2>();
  expect_cursor_sequence<3>();
  expect_cursor_sequence<4>();
}

// ---- The data path and its proxies (the model and the figure) ------------------------------

TEST(HostDataPath, TheMinimalKernelOrdersEveryAccessAcrossProxies) {
  EXPECT_EQ(proxy_order_problems(minimal_path()), "");
}

// The minimal path without the `count` steps whose code starts with `code`.
std::vector<PathStep> without(const char* code, std::size_t count = 1) {
  std::vector<PathStep> steps;
  for (const PathStep& step : minimal_path()) {
    if (std::string(step.code).rfind(code, 0) != 0) steps.push_back(step);
  }
  EXPECT_EQ(steps.size() + count, minimal_path().size()) << code;
  return steps;
}

TEST(HostDataPath, EachFenceAndTheWaitIsWhatOrdersItsObject) {
  const std::string no_init_fence = proxy_order_problems(without("fence_mbarrier_init"));
  EXPECT_TRUE(contains(no_init_fence, "cp_async_bulk: global -> tile (async proxy) "
                                      "accesses the barrier written by mbarrier_init(&bar, 1)"))
      << no_init_fence;
  const std::string no_proxy_fence = proxy_order_problems(without("fence_proxy_async"));
  EXPECT_TRUE(contains(no_proxy_fence, "cp_async_bulk: tile -> global (async proxy) accesses "
                                       "the tile written by tile[i] = 3 * tile[i] + 1"))
      << no_proxy_fence;
  const std::string no_wait = proxy_order_problems(without("mbarrier_try_wait_parity"));
  EXPECT_TRUE(contains(no_wait, "tile[i] = 3 * tile[i] + 1 (generic proxy) accesses the tile written by "
                                "cp_async_bulk: global -> tile"))
      << no_wait;
  EXPECT_EQ(proxy_order_problems(without("__syncthreads", 2)), "") << "block syncs order threads, not proxies";
}

TEST(HostFigures, CommittedSvgIsWhatTheModelDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, TheFigureScalesAndHasABackground) {
  const std::string svg = data_path_svg(minimal_path());
  EXPECT_TRUE(contains(svg, "viewBox=\"0 0 720 "));
  EXPECT_TRUE(contains(svg, "width=\"100%\""));
  EXPECT_TRUE(contains(svg, "fill=\"#ffffff\""));
  EXPECT_FALSE(contains(svg, "font-size=\"11\"")) << "text at least 12 units";
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits for compute_90 (PTX generated by the build) -------------------
//
// The instructions, and the H100 machine code they become:
//   cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes  the library's bulk load
//     (cuda::memcpy_async, memcpy_async_tx); ...shared::cta... is cuda::ptx's. SASS UBLKCP.S.G
//   cp.async.bulk.global.shared::cta.bulk_group   the bulk store, SASS UBLKCP.G.S
//   cp.async.bulk.commit_group / wait_group.read  the store's bulk async-group (commit: UTMACMDFLUSH)
//   fence.proxy.async.shared::cta                 generic-proxy writes visible to the async proxy
//                                                 (FENCE.VIEW.ASYNC.S)
//   fence.mbarrier_init.release.cluster           the barrier's init visible to the async proxy
//   mbarrier.expect_tx                            the library announcing bytes without arriving
//   mbarrier.arrive.expect_tx                     an arrival that carries bytes (SYNCS.ARRIVE.TRANS...)
//   mbarrier.try_wait.parity                      a wait by phase parity (SYNCS.PHASECHK.TRANS...)
//   elect.sync                                    one lane elected, known to the compiler (ELECT)
//   cp.async.cg / cp.async.ca (LDGSTS)            what cuda::memcpy_async falls back to

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ = course::chapter_ptx("tma_1d", "90");
    lab_ = course::chapter_ptx("tma_1d_lab", "90");
  }
  // A kernel of the lesson by its mangled name part (e.g. "19memcpy_async_kernel"), or of the lab.
  static std::string lesson_kernel(const std::string& name_part) { return body(lesson_, "tma_1d", name_part); }
  static std::string lab_kernel(const std::string& name_part) { return body(lab_, "tma_1d_lab", name_part); }
  static std::string body(const std::string& ptx, const std::string& program, const std::string& name_part) {
    EXPECT_FALSE(ptx.empty()) << "no " << program << ".compute_90.ptx in " << COURSE_PTX_DIR;
    const std::string k = course::ptx_kernel_body(ptx, name_part);
    EXPECT_FALSE(k.empty()) << "no kernel " << name_part << " in " << program << ".compute_90.ptx";
    return k;
  }
  static inline std::string lesson_, lab_;
};

constexpr const char* kLoadBulkCluster = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
constexpr const char* kLoadBulkCta = "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes";
const char* const kLessonKernels[] = {"14minimal_kernel", "19memcpy_async_kernel", "ring_kernelILi4ELm32768E"};
// The lab's own kernels (its ring_2_stages is the lesson's ring_kernel<2, ...>).
const char* const kLabKernels[] = {
    "memcpy_async_fallback_kernelILm16ELb1E", "memcpy_async_fallback_kernelILm4ELb0E",
    "memcpy_async_fallback_kernelILm1ELb0E",  "sync_ring_kernelILi4ELNS_9TileOrderE0ELb0ELb0E",
    "sync_ring_kernelILi4ELNS_9TileOrderE1ELb0ELb0E", "sync_ring_kernelILi4ELNS_9TileOrderE1ELb1ELb0E"};
const char* const kLabRings[] = {"sync_ring_kernelILi4ELNS_9TileOrderE0ELb0ELb0E",
                                 "sync_ring_kernelILi4ELNS_9TileOrderE1ELb0ELb0E",
                                 "sync_ring_kernelILi4ELNS_9TileOrderE1ELb1ELb0E"};

TEST_F(HostCodegen, MemcpyAsyncWithASharedMemoryBarrierIsABulkCopy) {
  const std::string k = lesson_kernel("19memcpy_async_kernel");
  EXPECT_TRUE(contains(k, kLoadBulkCluster));
  EXPECT_TRUE(contains(k, "mbarrier.expect_tx")) << "the library announces the bytes itself";
  EXPECT_FALSE(contains(k, "cp.async.cg"));
  EXPECT_FALSE(contains(k, "cp.async.ca"));
}

TEST_F(HostCodegen, MemcpyAsyncWithABarrierInGlobalMemoryIsBlockingLdgsts) {
  const std::string k = lab_kernel("memcpy_async_fallback_kernelILm16ELb1E");
  EXPECT_TRUE(contains(k, "cp.async.cg.shared.global"));
  EXPECT_TRUE(contains(k, ", 16, 16;"));
  EXPECT_TRUE(contains(k, "cp.async.wait_all")) << "the copying thread waits for its own copies";
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
  EXPECT_FALSE(contains(k, "mbarrier.")) << "a barrier outside shared memory is not an mbarrier";
}

TEST_F(HostCodegen, MemcpyAsyncWithFourByteAlignmentIsLdgstsThroughL1) {
  const std::string k = lab_kernel("memcpy_async_fallback_kernelILm4ELb0E");
  EXPECT_TRUE(contains(k, "cp.async.ca.shared.global"));
  EXPECT_TRUE(contains(k, ", 4, 4;"));
  EXPECT_TRUE(contains(k, "cp.async.mbarrier.arrive.shared.b64")) << "completion through the barrier, no .noinc";
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
}

TEST_F(HostCodegen, MemcpyAsyncWithUnknownAlignmentIsASynchronousByteLoop) {
  const std::string k = lab_kernel("memcpy_async_fallback_kernelILm1ELb0E");
  EXPECT_TRUE(contains(k, "ld.global.u8"));
  EXPECT_TRUE(contains(k, "st.shared.u8"));
  EXPECT_FALSE(contains(k, "cp.async.ca"));
  EXPECT_FALSE(contains(k, "cp.async.cg"));
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
}

TEST_F(HostCodegen, MinimalKernelHasOneArrivalWithBytesAndAParityWait) {
  const std::string k = lesson_kernel("14minimal_kernel");
  EXPECT_TRUE(contains(k, kLoadBulkCta));
  EXPECT_TRUE(contains(k, "mbarrier.init.shared.b64"));
  EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster"));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"));
  EXPECT_TRUE(contains(k, "mbarrier.try_wait.parity.shared::cta.b64"));
  EXPECT_FALSE(contains(k, "mbarrier.arrive.release")) << "no arrival without bytes: count 1";
  EXPECT_FALSE(contains(k, "globaltimer")) << "the plain wait, not the course's bounded one";
}

TEST_F(HostCodegen, RingHasFullAndEmptyBarriersANamedConsumerSyncAndNoCounter) {
  const std::string k = lesson_kernel("ring_kernelILi4ELm32768E");
  EXPECT_TRUE(contains(k, kLoadBulkCta));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << "full: bytes";
  EXPECT_TRUE(contains(k, "mbarrier.arrive.release.cta.shared::cta.b64")) << "empty: a release";
  EXPECT_TRUE(contains(k, "mbarrier.try_wait.parity.shared::cta.b64"));
  EXPECT_TRUE(contains(k, "bar.sync 1, 256")) << "the consumer warps' own block sync";
  EXPECT_FALSE(contains(k, "atom.global")) << "the ring strides over its tiles, no counter";
  for (const char* ring : kLabRings) {
    const std::string r = lab_kernel(ring);
    EXPECT_TRUE(contains(r, kLoadBulkCta)) << ring;
    EXPECT_TRUE(contains(r, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << ring;
    EXPECT_TRUE(contains(r, "mbarrier.arrive.release.cta.shared::cta.b64")) << ring << ": none left";
    EXPECT_TRUE(contains(r, "mbarrier.try_wait.parity.shared::cta.b64")) << ring;
  }
  EXPECT_FALSE(contains(lab_kernel(kLabRings[0]), "atom.global")) << "the dealt ring needs no counter";
  EXPECT_TRUE(contains(lab_kernel(kLabRings[1]), "atom.global.add.u64")) << "the counter ring";
  EXPECT_TRUE(contains(lab_kernel(kLabRings[2]), "cp.async.bulk.prefetch.L2.global"));
  EXPECT_FALSE(contains(lab_kernel(kLabRings[1]), "cp.async.bulk.prefetch")) << "only one row prefetches";
}

TEST_F(HostCodegen, NoLessonKernelFallsBackToLdgsts) {
  for (const char* name : kLessonKernels) {
    const std::string k = lesson_kernel(name);
    EXPECT_FALSE(contains(k, "cp.async.ca")) << name;
    EXPECT_FALSE(contains(k, "cp.async.cg")) << name;
    EXPECT_FALSE(contains(k, "ld.global.u8")) << name;
    EXPECT_TRUE(contains(k, "cp.async.bulk.shared::")) << name << ": every load is a bulk copy";
  }
}

// Every kernel's write-back: proxy fence, then block sync, then the bulk store, committed and waited for.
void expect_fenced_bulk_store(const std::string& k, const char* name) {
  const std::size_t fence = k.find("fence.proxy.async.shared::cta");
  const std::size_t sync = k.find("bar.sync", fence == std::string::npos ? 0 : fence);
  const std::size_t store = k.find("cp.async.bulk.global.shared::cta.bulk_group");
  ASSERT_NE(fence, std::string::npos) << name;
  ASSERT_NE(store, std::string::npos) << name;
  EXPECT_LT(fence, sync) << name << ": the fence comes before the block sync";
  EXPECT_LT(sync, store) << name << ": the block sync comes before the store";
  EXPECT_TRUE(contains(k, "cp.async.bulk.commit_group")) << name;
  EXPECT_TRUE(contains(k, "cp.async.bulk.wait_group.read 0")) << name;
}

TEST_F(HostCodegen, EveryKernelWritesBackThroughAFencedBulkStore) {
  for (const char* name : kLessonKernels) expect_fenced_bulk_store(lesson_kernel(name), name);
  for (const char* name : kLabKernels) expect_fenced_bulk_store(lab_kernel(name), name);
}

TEST_F(HostCodegen, LeadersAreElectedAndBarrierInitIsFenced) {
  for (const char* name : kLessonKernels) {
    const std::string k = lesson_kernel(name);
    if (name != kLessonKernels[0]) EXPECT_TRUE(contains(k, "elect.sync")) << name;  // not minimal
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
  }
  for (const char* name : kLabKernels) {
    const std::string k = lab_kernel(name);
    EXPECT_TRUE(contains(k, "elect.sync")) << name;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
  }
}

// ---- The H100's machine code (sm_90), where cuobjdump can read it ---------------------------

TEST_F(HostCodegen, MachineCodeHasTheBulkCopiesTheirGroupsFencesBarriersAndElection) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const std::string minimal = course::sass_kernel_body(sass, "14minimal_kernel");
  ASSERT_FALSE(minimal.empty()) << "no minimal_kernel in the sm_90 machine code";
  for (const char* pattern : {"UBLKCP\\.S\\.G", "UBLKCP\\.G\\.S", "UTMACMDFLUSH", "FENCE\\.VIEW\\.ASYNC\\.S",
                              "SYNCS\\.ARRIVE\\.TRANS", "SYNCS\\.PHASECHK\\.TRANS"}) {
    EXPECT_GE(course::count_matches(minimal, pattern), 1) << pattern;
  }
  const std::string memcpy_async = course::sass_kernel_body(sass, "19memcpy_async_kernel");
  ASSERT_FALSE(memcpy_async.empty()) << "no memcpy_async_kernel in the sm_90 machine code";
  EXPECT_GE(course::count_matches(memcpy_async, "UBLKCP\\.S\\.G"), 1) << "cuda::memcpy_async issues a bulk copy";
  const std::string ring = course::sass_kernel_body(sass, "ring_kernelILi4ELm32768E");
  ASSERT_FALSE(ring.empty()) << "no ring_kernel<4, 32768> in the sm_90 machine code";
  for (const char* pattern : {"UBLKCP\\.S\\.G", "UBLKCP\\.G\\.S", "ELECT"}) {
    EXPECT_GE(course::count_matches(ring, pattern), 1) << pattern;
  }
}

TEST_F(HostCodegen, MachineCodeOfTheGlobalBarrierFallbackIsSixteenByteLdgsts) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const std::string k = course::sass_kernel_body(sass, "memcpy_async_fallback_kernelILm16ELb1E");
  ASSERT_FALSE(k.empty()) << "no memcpy_async_fallback_kernel<16, true> in the sm_90 machine code";
  EXPECT_GE(course::count_matches(k, "LDGSTS\\.E\\.BYPASS\\.128"), 1);
  EXPECT_EQ(course::count_matches(k, "UBLKCP\\.S\\.G"), 0) << "no bulk load without a shared-memory barrier";
}

// ---- On the GPU: every variant of the lesson and of the lab -----------------------------------

class Sm90_Tma1d : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_Tma1d() : GpuTest(chapter_info().requirement) {}
  static std::size_t elems(std::size_t bytes) { return bytes / sizeof(std::uint32_t); }
  void expect_correct(std::size_t num_bytes) {
    Problem problem(elems(num_bytes));
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << num_bytes << " bytes: " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_Tma1d, OneTile) { expect_correct(GetParam().tile_bytes); }

TEST_P(Sm90_Tma1d, SixteenBytesOnly) { expect_correct(16); }

TEST_P(Sm90_Tma1d, ManyTilesWithARaggedLastTile) { expect_correct(777 * GetParam().tile_bytes + 48); }

TEST_P(Sm90_Tma1d, InPlace) {
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

// For the in-order rings also: the counter starts at zero on every launch.
TEST_P(Sm90_Tma1d, RepeatedRunsGiveTheSameBits) {
  Problem problem(elems(33 * GetParam().tile_bytes));
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

TEST_P(Sm90_Tma1d, BrokenRulesAreRefusedBeforeAnythingIsLaunched) {
  Problem problem(elems(4 * GetParam().tile_bytes));
  problem.gmem_out.poison();
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data() + 1, problem.gmem_out.data(), problem.num_elems - 4),
               course::UsageError);  // input 4 bytes past a 16-byte boundary
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data(), problem.gmem_out.data() + 2, problem.num_elems - 4),
               course::UsageError);  // output 8 bytes past
  EXPECT_THROW(GetParam().launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems - 1),
               course::UsageError);  // 4 bytes short of a 16-byte unit
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = problem.gmem_out.check(problem.expected);
  EXPECT_EQ(result.untouched, problem.num_elems) << "a refused request must not write anything";
}

const auto kVariantName = [](const auto& info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(Lesson, Sm90_Tma1d, ::testing::ValuesIn(kVariants), kVariantName);
INSTANTIATE_TEST_SUITE_P(Lab, Sm90_Tma1d, ::testing::ValuesIn(lab::kVariants), kVariantName);

// ---- On the GPU: ring sizes (the lesson's ring; the lab's rings freed by a block sync) ---------

class Sm90_Tma1dRing : public course::GpuTest {
 protected:
  Sm90_Tma1dRing() : GpuTest(chapter_info().requirement) {}
  static void expect_correct(const char* what, Launch launch, std::size_t stage_bytes) {
    for (const std::size_t num_bytes : {stage_bytes, 3 * stage_bytes + 32, 1000 * stage_bytes + 4080}) {
      Problem problem(num_bytes / sizeof(std::uint32_t));
      const Variant ring{what, "", launch, stage_bytes};
      const course::Comparison result = verify(ring, problem);
      EXPECT_TRUE(result.ok()) << what << ", array of " << num_bytes << " bytes: " << result.summary() << '\n'
                               << result.first;
    }
  }
  // A block per 16 tiles, not the lesson's 4: every stage of the ring goes round several times.
  template <int kRingStages, std::size_t kRingStageBytes>
  static void expect_ring_correct() {
    expect_correct("full/empty ring", &launch_ring<kRingStages, kRingStageBytes, 16>,
                   kRingStageBytes);
  }
};

// The lesson's ring keeps the bytes in flight per SM that Little's law asks of this GPU.
TEST_F(Sm90_Tma1dRing, TheLessonKeepsTheBytesInFlightThisGpuNeeds) {
  ASSERT_TRUE(chapter_info().in_flight.has_value());
  course::expect_enough_in_flight(*chapter_info().in_flight, device());
}

TEST_F(Sm90_Tma1dRing, TwoToFourStages) {  // a stage is released one tile late: at least two
  expect_ring_correct<2, kStageBytes>();
  expect_ring_correct<3, kStageBytes>();
  expect_ring_correct<4, kStageBytes>();
}

TEST_F(Sm90_Tma1dRing, SmallStagesManyBlocksPerSmManyTilesPerBlock) {
  expect_ring_correct<2, 4096>();
  expect_ring_correct<4, 16 * 1024>();
}

TEST_F(Sm90_Tma1dRing, RingsFreedByABlockSyncTwoToFourStages) {
  using lab::TileOrder;
  expect_correct("dealt, 2 stages", &lab::launch_sync_ring<2, TileOrder::dealt>, kStageBytes);
  expect_correct("dealt, 3 stages", &lab::launch_sync_ring<3, TileOrder::dealt>, kStageBytes);
  expect_correct("counter, 2 stages", &lab::launch_sync_ring<2, TileOrder::counter>, kStageBytes);
  expect_correct("counter, 3 stages", &lab::launch_sync_ring<3, TileOrder::counter>, kStageBytes);
}

TEST_F(Sm90_Tma1dRing, LargestSharedMemoryRing) {
  constexpr std::size_t kLargeStage = 56 * 1024;  // 4 x 56 KiB + 8 barriers = 229440 bytes
  const std::size_t smem = ring_smem_bytes(4, kLargeStage);
  ASSERT_LE(smem, device().smem_per_block_optin);
  EXPECT_GT(smem + 4 * 1024, device().smem_per_block_optin) << "no longer the largest 4-stage ring of whole KiB";
  expect_ring_correct<4, kLargeStage>();
}

TEST_F(Sm90_Tma1dRing, TooLargeRingIsRefusedBeforeLaunch) {
  Problem problem(64 * 1024);
  problem.gmem_out.poison();
  try {
    launch_ring<4, 64 * 1024>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
    ADD_FAILURE() << "a ring of 4 x 64 KiB does not fit 227 KiB of shared memory and must be refused";
  } catch (const course::UsageError& error) {
    EXPECT_TRUE(contains(error.what(), "cudaDevAttrMaxSharedMemoryPerBlockOptin")) << error.what();
  }
  COURSE_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(problem.gmem_out.check(problem.expected).untouched, problem.num_elems);
}

// ---- The library's election (course/elect.cuh) against this chapter's ----------------------

// Bit 0: the chapter's is_elected_leader(); bit 1: course::elect_tma_leader(), for every thread.
__global__ void election_kernel(int* gmem_votes) {
  const bool chapter = is_elected_leader();
  const bool library = course::elect_tma_leader();
  gmem_votes[blockIdx.x * blockDim.x + threadIdx.x] = (chapter ? 1 : 0) | (library ? 2 : 0);
}

class Sm90_Tma1dElection : public course::GpuTest {
 protected:
  Sm90_Tma1dElection() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_Tma1dElection, TheLibraryElectsTheThreadThisChapterElects) {
  for (const int threads : {32, 96, 256, 1024}) {
    const int blocks = 3;
    course::DeviceBuffer<int> gmem_votes(static_cast<std::size_t>(blocks) * threads);
    election_kernel<<<blocks, threads>>>(gmem_votes.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<int> votes(gmem_votes.size());
    gmem_votes.download(votes.data());
    for (int b = 0; b < blocks; ++b) {
      int both = 0, disagreements = 0;
      for (int t = 0; t < threads; ++t) {
        const int vote = votes[static_cast<std::size_t>(b) * threads + t];
        both += vote == 3;
        disagreements += vote == 1 || vote == 2;
        if (vote != 0) EXPECT_LT(t, 32) << "block " << b << " elected thread " << t << ", outside warp 0";
      }
      EXPECT_EQ(both, 1) << threads << " threads, block " << b << ": one thread elected by both";
      EXPECT_EQ(disagreements, 0) << threads << " threads, block " << b;
    }
  }
}

// ---- A wrong transaction count, stopped by the bounded wait ----------------------------------

// The minimal kernel, persistent, with the leader announcing 16 bytes more than the copy delivers: the
// transaction count never returns to zero, so phase 0 of full_bar never completes.
__global__ void expect_too_many_bytes_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                             std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;
  if (is_elected_leader()) {
    ptx::mbarrier_init(&full_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar,
                                           bytes + 16);  // BROKEN
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile, gmem_in + tile * kTileElems, bytes,
                         &full_bar);
    }
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    modify_tile(smem_tile, bytes, threadIdx.x, blockDim.x);
    write_back_tile(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}

class Sm90_Tma1dBroken : public course::GpuTest {
 protected:
  Sm90_Tma1dBroken() : GpuTest(chapter_info().requirement) {}
};

// Launches without synchronising: the death test's child synchronises and reports.
void launch_expect_too_many_bytes(Problem& problem) {
  expect_too_many_bytes_kernel<<<2, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(),
                                                     problem.num_elems * sizeof(std::uint32_t));
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm90_Tma1dBroken, ExpectTxLargerThanTheCopyIsDiagnosed) {
  Problem problem(8 * kTileElems);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_expect_too_many_bytes(problem),
                               "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}


// ---- The timeline (--timeline): the recorded ring is right, and so are its events -----------

class Sm90_Tma1dTimeline : public course::GpuTest {
 protected:
  Sm90_Tma1dTimeline() : GpuTest(chapter_info().requirement) {}
  static std::size_t count(const std::vector<course::timeline::Event>& events, std::uint32_t block,
                           course::timeline::Kind kind) {
    return std::count_if(events.begin(), events.end(), [&](const course::timeline::Event& e) {
      return e.block == block && e.kind == static_cast<std::uint32_t>(kind);
    });
  }
};

TEST_F(Sm90_Tma1dTimeline, EveryRecordedTileMakesARoundTripAndTheNextIsInFlightBeforeItsRelease) {
  using course::timeline::Kind;
  Problem problem((32u << 20) / sizeof(std::uint32_t) + 12);  // about 8 tiles per block, a ragged last one
  const lab::TimelineRun run = lab::record_counter_ring(problem, 4, 16);
  ASSERT_TRUE(run.result.ok()) << run.result.summary() << '\n' << run.result.first;
  EXPECT_EQ(course::timeline::round_trip_problems(run.events, kStages), "");
  for (std::uint32_t block = 0; block < 4; ++block) {
    const std::size_t tiles = count(run.events, block, Kind::issue);
    EXPECT_GE(tiles, 1u) << "block " << block;
    for (const Kind kind : {Kind::land, Kind::consume, Kind::release}) {
      EXPECT_EQ(count(run.events, block, kind), tiles) << "block " << block << ", " << static_cast<int>(kind);
    }
    // Tile n + 1 was issued at the prime or when tile n + 1 - 4 was released: before tile n's release.
    for (const course::timeline::Event& next : run.events) {
      if (next.block != block || next.kind != static_cast<std::uint32_t>(Kind::issue) || next.iteration == 0) continue;
      for (const course::timeline::Event& e : run.events) {
        if (e.block == block && e.iteration + 1 == next.iteration && e.kind == static_cast<std::uint32_t>(Kind::release)) {
          EXPECT_LE(next.t_ns, e.t_ns) << "block " << block << ": tile " << next.iteration;
        }
      }
    }
  }
  for (const course::timeline::Event& e : run.events) EXPECT_LT(e.block, 4u);
}

TEST_F(Sm90_Tma1dTimeline, OnlyTheAskedBlocksAndIterationsAreRecorded) {
  Problem problem((8u << 20) / sizeof(std::uint32_t));
  const lab::TimelineRun run = lab::record_counter_ring(problem, 1, 1);
  ASSERT_TRUE(run.result.ok()) << run.result.summary();
  ASSERT_EQ(run.events.size(), 4u) << "block 0's first tile: issue, land, consume, release";
  for (const course::timeline::Event& e : run.events) {
    EXPECT_EQ(e.block, 0u);
    EXPECT_EQ(e.iteration, 0u);
    EXPECT_EQ(e.sm, run.events[0].sm) << "one thread of one block records";
  }
}

TEST_F(Sm90_Tma1dTimeline, WritesTheCsvTheScriptDraws) {
  course::Options opts;
  opts.size_bytes = 8u << 20;
  opts.timeline = ::testing::TempDir() + "tma_1d_timeline.csv";
  std::ostringstream log;
  lab::write_timeline(opts, log);
  std::ifstream file(opts.timeline);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("# timeline: tma_1d_lab, variant counter_sync_ring, size 8388608 bytes", 0), 0u)
      << text.str().substr(0, 200);
  // The header, then rows in time order: which recorded block comes first is the GPU's choice.
  EXPECT_TRUE(contains(text.str(), "\nblock,sm,role,stage,iteration,kind,t_ns\n"));
  EXPECT_TRUE(contains(text.str(), ",producer,0,0,issue,"));
  EXPECT_TRUE(contains(log.str(), "events written to " + opts.timeline)) << log.str();
}

}  // namespace
