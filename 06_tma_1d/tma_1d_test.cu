// Tests for 06_tma_1d: the host rules for bulk copies, the tile plan and the stage cursor; what
// each kernel compiles to for compute_90 (which copy cuda::memcpy_async really issues); every
// variant bit-exact on the GPU at awkward sizes and in place; rings of 1-4 stages and the largest
// shared-memory ring; requests that break a rule refused before launch; a wrong byte count diagnosed.
#include "tma_1d.cu"

#include <gtest/gtest.h>

#include <string>

#include "course/elect.cuh"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The problem and the tile plan ----------------------------------------------------------

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
}

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

TEST(HostSmemPlan, RingMustFitTheOptInMaximum) {
  constexpr std::size_t kH100OptIn = 232448;  // 227 KiB, cudaDevAttrMaxSharedMemoryPerBlockOptin on H100/H200
  EXPECT_FALSE(smem_plan_problem(prefetch_smem_bytes(4, kStageBytes), kH100OptIn));
  EXPECT_FALSE(smem_plan_problem(prefetch_smem_bytes(4, 56 * 1024), kH100OptIn));
  const auto broken = smem_plan_problem(prefetch_smem_bytes(4, 64 * 1024), kH100OptIn);
  ASSERT_TRUE(broken);
  EXPECT_TRUE(contains(*broken, "262176 bytes")) << *broken;
  EXPECT_TRUE(contains(*broken, "allows 232448")) << *broken;
}

TEST(HostSmemPlan, TilesComeFirstThenEightByteBarriers) {
  EXPECT_EQ(prefetch_smem_bytes(2, kStageBytes), 2 * kStageBytes + 16);
  EXPECT_EQ(kStageBytes % kBulkAlignBytes, 0u) << "every stage starts 16-byte aligned";
  EXPECT_EQ((4 * kStageBytes) % alignof(std::uint64_t), 0u) << "the barriers after the tiles are 8-byte aligned";
}

// ---- The stage cursor -------------------------------------------------------------------------

template <int kStages>
void expect_cursor_sequence() {
  StageCursor<kStages> cursor;
  for (int k = 0; k < 20; ++k, cursor.advance()) {
    ASSERT_EQ(cursor.stage, k % kStages) << kStages << " stages, tile " << k;
    ASSERT_EQ(cursor.phase, static_cast<std::uint32_t>((k / kStages) & 1)) << kStages << " stages, tile " << k;
  }
}

TEST(HostStageCursor, ParityFlipsOncePerRoundForOneToFourStages) {
  expect_cursor_sequence<1>();  // one stage: the parity flips on every tile
  expect_cursor_sequence<2>();
  expect_cursor_sequence<3>();
  expect_cursor_sequence<4>();
}

// ---- What the compiler emits for compute_90 (PTX generated by the build) -------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::read_text_file(COURSE_PTX_DIR "/tma_1d.compute_90.ptx"); }
  // From a kernel's .entry line to the next kernel's: the cuda::ptx wrappers emit inline-asm
  // blocks whose closing brace starts a line, which ends course::ptx_kernel_body too early.
  static std::string kernel(const char* name) {
    std::size_t pos = 0;
    while ((pos = ptx_.find(".entry ", pos)) != std::string::npos) {
      const std::size_t line_end = ptx_.find('\n', pos);
      if (ptx_.substr(pos, line_end - pos).find(name) != std::string::npos) {
        return ptx_.substr(pos, ptx_.find(".entry ", line_end) - pos);
      }
      pos = line_end;
    }
    ADD_FAILURE() << "no kernel " << name << " in " << COURSE_PTX_DIR "/tma_1d.compute_90.ptx";
    return "";
  }
  static inline std::string ptx_;
};

constexpr const char* kLoadBulkCluster = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
constexpr const char* kLoadBulkCta = "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes";
const char* const kAllKernels[] = {
    "memcpy_async_kernelILm16ELb0E", "memcpy_async_kernelILm16ELb1E", "memcpy_async_kernelILm4ELb0E",
    "memcpy_async_kernelILm1ELb0E",  "memcpy_async_tx_kernel",        "cp_async_bulk_kernel",
    "prefetch_kernelILi1E",          "prefetch_kernelILi2E",          "prefetch_kernelILi3E",
    "prefetch_kernelILi4E"};

TEST_F(HostCodegen, MemcpyAsyncWithASharedMemoryBarrierIsABulkCopy) {
  const std::string k = kernel("memcpy_async_kernelILm16ELb0E");
  EXPECT_TRUE(contains(k, kLoadBulkCluster));
  EXPECT_TRUE(contains(k, "mbarrier.expect_tx")) << "the library announces the bytes itself";
  EXPECT_FALSE(contains(k, "cp.async.cg"));
  EXPECT_FALSE(contains(k, "cp.async.ca"));
}

TEST_F(HostCodegen, MemcpyAsyncWithABarrierInGlobalMemoryIsBlockingLdgsts) {
  const std::string k = kernel("memcpy_async_kernelILm16ELb1E");
  EXPECT_TRUE(contains(k, "cp.async.cg.shared.global"));
  EXPECT_TRUE(contains(k, ", 16, 16;"));
  EXPECT_TRUE(contains(k, "cp.async.wait_all")) << "the copying thread waits for its own copies";
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
  EXPECT_FALSE(contains(k, "mbarrier.")) << "a barrier outside shared memory is not an mbarrier";
}

TEST_F(HostCodegen, MemcpyAsyncWithFourByteAlignmentIsLdgstsThroughL1) {
  const std::string k = kernel("memcpy_async_kernelILm4ELb0E");
  EXPECT_TRUE(contains(k, "cp.async.ca.shared.global"));
  EXPECT_TRUE(contains(k, ", 4, 4;"));
  EXPECT_TRUE(contains(k, "cp.async.mbarrier.arrive.shared.b64")) << "completion through the barrier, no .noinc";
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
}

TEST_F(HostCodegen, MemcpyAsyncWithUnknownAlignmentIsASynchronousByteLoop) {
  const std::string k = kernel("memcpy_async_kernelILm1ELb0E");
  EXPECT_TRUE(contains(k, "ld.global.u8"));
  EXPECT_TRUE(contains(k, "st.shared.u8"));
  EXPECT_FALSE(contains(k, "cp.async.ca"));
  EXPECT_FALSE(contains(k, "cp.async.cg"));
  EXPECT_FALSE(contains(k, kLoadBulkCluster));
}

TEST_F(HostCodegen, MemcpyAsyncTxLeavesTheBytesToTheArrival) {
  const std::string k = kernel("memcpy_async_tx_kernel");
  EXPECT_TRUE(contains(k, kLoadBulkCluster));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"));
  EXPECT_FALSE(contains(k, "mbarrier.expect_tx")) << "no separate expect-tx: the arrival carries the bytes";
}

TEST_F(HostCodegen, CpAsyncBulkHasOneArrivalWithBytesAndParityWaits) {
  const std::string k = kernel("cp_async_bulk_kernel");
  EXPECT_TRUE(contains(k, kLoadBulkCta));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"));
  EXPECT_TRUE(contains(k, "mbarrier.try_wait.parity.shared::cta.b64"));
  EXPECT_FALSE(contains(k, "mbarrier.arrive.shared")) << "no arrival without bytes: count 1";
  for (const char* ring :
       {"prefetch_kernelILi1E", "prefetch_kernelILi2E", "prefetch_kernelILi3E", "prefetch_kernelILi4E"}) {
    const std::string r = kernel(ring);
    EXPECT_TRUE(contains(r, kLoadBulkCta)) << ring;
    EXPECT_TRUE(contains(r, "mbarrier.try_wait.parity.shared::cta.b64")) << ring;
  }
}

TEST_F(HostCodegen, EveryKernelWritesBackThroughAFencedBulkStore) {
  for (const char* name : kAllKernels) {
    const std::string k = kernel(name);
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
}

TEST_F(HostCodegen, LeadersAreElectedAndBarrierInitIsFenced) {
  for (const char* name : kAllKernels) {
    const std::string k = kernel(name);
    EXPECT_TRUE(contains(k, "elect.sync")) << name;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
  }
}

// ---- On the GPU: every variant --------------------------------------------------------------

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

INSTANTIATE_TEST_SUITE_P(Variants, Sm90_Tma1d, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- On the GPU: ring sizes -------------------------------------------------------------------

class Sm90_Tma1dRing : public course::GpuTest {
 protected:
  Sm90_Tma1dRing() : GpuTest(chapter_info().requirement) {}
  template <int kStages, std::size_t kStageTileBytes>
  void expect_ring_correct() {
    for (const std::size_t num_bytes : {kStageTileBytes, 3 * kStageTileBytes + 32, 1000 * kStageTileBytes + 4080}) {
      Problem problem(num_bytes / sizeof(std::uint32_t));
      const Variant ring{"ring", "", &launch_ring<kStages, kStageTileBytes>, kStageTileBytes};
      const course::Comparison result = verify(ring, problem);
      EXPECT_TRUE(result.ok()) << kStages << " x " << kStageTileBytes << " bytes, array of " << num_bytes
                               << " bytes: " << result.summary() << '\n'
                               << result.first;
    }
  }
};

TEST_F(Sm90_Tma1dRing, OneToFourStages) {
  expect_ring_correct<1, kStageBytes>();
  expect_ring_correct<2, kStageBytes>();
  expect_ring_correct<3, kStageBytes>();
  expect_ring_correct<4, kStageBytes>();
}

TEST_F(Sm90_Tma1dRing, SmallStagesManyBlocksPerSm) {
  expect_ring_correct<2, 4096>();
  expect_ring_correct<4, 16 * 1024>();
}

TEST_F(Sm90_Tma1dRing, LargestSharedMemoryRing) {
  constexpr std::size_t kLargeStage = 56 * 1024;  // 4 x 56 KiB + 4 barriers = 229408 bytes
  const std::size_t smem = prefetch_smem_bytes(4, kLargeStage);
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

// cp_async_bulk_kernel with the leader announcing 16 bytes more than the copy delivers: the
// transaction count never returns to zero, so phase 0 of full_bar never completes.
__global__ void expect_too_many_bytes_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                             std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;
  if (is_elected_leader()) {
    cuda::ptx::mbarrier_init(&full_bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                 cuda::ptx::space_shared, &full_bar, bytes + 16);  // BROKEN
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem_tile,
                               gmem_in + tile * kTileElems, bytes, &full_bar);
    }
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    modify_tile(smem_tile, bytes);
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

}  // namespace
