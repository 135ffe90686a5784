// Tests for 11_carveout: the capacity table and the rounding rule against the guide (CPU),
// what the kernels compile to (PTX), every variant bit-exact, what the driver grants for each
// setting, and the opt-in for more than 48 KiB per block (GPU).
#include "carveout.cu"

#include <gtest/gtest.h>

#include <climits>
#include <sstream>
#include <string>
#include <vector>

#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The capacity table (guide, Tables 31 and 32) -------------------------------------------

// Table 31, "Maximum amount of shared memory per SM": the largest capacity of each row.
TEST(HostCapacity, LargestCapacityIsTheMaximumSharedMemoryPerSm) {
  const struct {
    int major, minor, max_kib;
  } cases[] = {{7, 5, 64},   {8, 0, 164},  {8, 6, 100},  {8, 7, 164}, {8, 9, 100}, {9, 0, 228},
               {10, 0, 228}, {10, 3, 228}, {11, 0, 228}, {12, 0, 100}, {12, 1, 100}};
  for (const auto& c : cases) {
    const auto caps = shared_capacities(c.major, c.minor);
    ASSERT_TRUE(caps.has_value()) << c.major << '.' << c.minor;
    EXPECT_EQ(caps->max_kib(), c.max_kib) << c.major << '.' << c.minor;
  }
}

TEST(HostCapacity, HopperRowAsInTheGuide) {
  EXPECT_EQ(shared_capacities(9, 0)->kib, (std::vector<int>{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}));
  EXPECT_EQ(shared_capacities(9, 0)->unified_kib, 256);
  EXPECT_EQ(shared_capacities(8, 6)->kib, (std::vector<int>{0, 8, 16, 32, 64, 100}));
}

TEST(HostCapacity, CapacitiesAscendInsideTheUnifiedCache) {
  for (const SharedCapacities& row : capacity_table()) {
    for (std::size_t i = 1; i < row.kib.size(); ++i) EXPECT_LT(row.kib[i - 1], row.kib[i]) << row.major << '.' << row.minor;
    EXPECT_LT(row.max_kib(), row.unified_kib) << "some L1 always remains";
  }
}

TEST(HostCapacity, TwentyEightKiBOfL1RemainAtMaxSharedFromAmpereOn) {
  for (const SharedCapacities& row : capacity_table()) {
    if (row.major < 8) continue;
    EXPECT_EQ(row.unified_kib - row.max_kib(), 28) << row.major << '.' << row.minor;
    EXPECT_EQ(row.kib.front(), 0) << "8.0 and newer can give all of it to L1";
  }
}

TEST(HostCapacity, ArchitecturesOutsideTheGuideAreUnknownNotGuessed) {
  EXPECT_FALSE(shared_capacities(7, 0).has_value());
  EXPECT_FALSE(shared_capacities(8, 5).has_value());
  EXPECT_FALSE(shared_capacities(13, 0).has_value());
}

// ---- The rounding rule ---------------------------------------------------------------------

TEST(HostCarveout, GuideExampleFiftyPercentOnTwelveIsSixtyFourKiBNotFifty) {
  const SharedCapacities cc12 = *shared_capacities(12, 0);
  EXPECT_EQ(preferred_capacity_kib(cc12, 50), 64);
}

TEST(HostCarveout, PercentagesRoundUpToTheNextCapacity) {
  const struct {
    int major, minor, percent, kib;
  } cases[] = {
      {9, 0, 0, 0},    {9, 0, 1, 8},     {9, 0, 4, 16},    {9, 0, 10, 32},   {9, 0, 15, 64},  {9, 0, 43, 100},
      {9, 0, 44, 132}, {9, 0, 50, 132},  {9, 0, 57, 132},  {9, 0, 58, 164},  {9, 0, 75, 196}, {9, 0, 85, 196},
      {9, 0, 86, 228}, {9, 0, 100, 228}, {8, 0, 50, 100},  {8, 0, 60, 100},  {8, 0, 61, 132}, {8, 6, 8, 8},
      {8, 6, 9, 16},   {8, 6, 64, 64},   {8, 6, 65, 100},  {12, 0, 32, 32},  {12, 0, 33, 64}, {7, 5, 0, 32},
      {7, 5, 50, 32},  {7, 5, 51, 64}};
  for (const auto& c : cases) {
    EXPECT_EQ(preferred_capacity_kib(*shared_capacities(c.major, c.minor), c.percent), c.kib)
        << c.major << '.' << c.minor << " at " << c.percent << "%";
  }
}

TEST(HostCarveout, EveryPercentageSelectsTheSmallestSufficientCapacity) {
  for (const SharedCapacities& row : capacity_table()) {
    int previous = -1;
    for (int percent = 0; percent <= 100; ++percent) {
      const int kib = preferred_capacity_kib(row, percent);
      const auto at = std::find(row.kib.begin(), row.kib.end(), kib);
      ASSERT_NE(at, row.kib.end()) << "not a supported capacity";
      EXPECT_GE(kib * 100, percent * row.max_kib()) << "never less than asked for";
      if (at != row.kib.begin()) EXPECT_LT(*(at - 1) * 100, percent * row.max_kib()) << "the smallest that suffices";
      EXPECT_GE(kib, previous) << "more percent never gives less";
      previous = kib;
    }
  }
}

TEST(HostCarveout, ExactPercentagesKeepTheirCapacity) {
  const SharedCapacities cc86 = *shared_capacities(8, 6);  // max 100 KiB: every capacity is a whole percentage
  for (int kib : cc86.kib) EXPECT_EQ(preferred_capacity_kib(cc86, kib), kib);
}

TEST(HostCarveout, TheEnumsArePercentages) {
  static_assert(cudaSharedmemCarveoutMaxL1 == 0, "MaxL1 is 0 %");
  static_assert(cudaSharedmemCarveoutMaxShared == 100, "MaxShared is 100 %");
  static_assert(cudaSharedmemCarveoutDefault == -1, "Default is no preference");
  const SharedCapacities cc90 = *shared_capacities(9, 0);
  EXPECT_EQ(preferred_capacity_kib(cc90, cudaSharedmemCarveoutMaxL1), 0);
  EXPECT_EQ(preferred_capacity_kib(cc90, cudaSharedmemCarveoutMaxShared), 228);
  EXPECT_EQ(carveout_name(-1), "cudaSharedmemCarveoutDefault (-1)");
  EXPECT_EQ(carveout_name(0), "cudaSharedmemCarveoutMaxL1 (0%)");
  EXPECT_EQ(carveout_name(100), "cudaSharedmemCarveoutMaxShared (100%)");
  EXPECT_EQ(carveout_name(37), "37%");
}

TEST(HostCarveout, OutOfRangeValuesAreRejected) {
  for (int bad : {-2, 101, 1000, INT_MIN, INT_MAX}) {
    const auto problem = carveout_problem(bad);
    ASSERT_TRUE(problem.has_value()) << bad;
    EXPECT_NE(problem->find("from 0"), std::string::npos) << *problem;
  }
  for (int good : {-1, 0, 1, 50, 99, 100}) EXPECT_FALSE(carveout_problem(good).has_value()) << good;
  // prefer_carveout() checks before the runtime sees the value (no GPU needed for this).
  EXPECT_THROW(prefer_carveout(gather_kernel<Api::attribute>, 101), std::invalid_argument);
}

TEST(HostCarveout, TheDriverRaisesACarveoutThatCannotHoldOneBlock) {
  const SharedCapacities cc90 = *shared_capacities(9, 0);
  const std::size_t block = 31 * kKiB;  // 30 KiB dynamic + 1 KiB reserved
  EXPECT_EQ(launch_capacity_kib(cc90, 0, block), 32);
  EXPECT_EQ(launch_capacity_kib(cc90, 10, block), 32);
  EXPECT_EQ(launch_capacity_kib(cc90, 15, block), 64);
  EXPECT_EQ(launch_capacity_kib(cc90, 100, block), 228);
  EXPECT_FALSE(launch_capacity_kib(cc90, 100, 229 * kKiB).has_value()) << "no capacity holds it";
  EXPECT_EQ(launch_capacity_kib(*shared_capacities(8, 6), 0, 99 * kKiB), 100);
}

// The numbers the chapter's table shows on an H100, from the model alone.
TEST(HostCarveout, BlocksPerSmOfTheThirtyOneKiBProbeBlockOnHopper) {
  const SharedCapacities cc90 = *shared_capacities(9, 0);
  const std::size_t block = 31 * kKiB;
  const std::pair<int, int> expected[] = {{0, 1}, {10, 1}, {15, 2}, {50, 4}, {58, 5}, {75, 6}, {100, 7}};
  for (auto [percent, blocks] : expected) {
    EXPECT_EQ(blocks_per_sm_by_shared_memory(*launch_capacity_kib(cc90, percent, block), block), blocks) << percent;
  }
  // Without the rounding, 50 % would be 114 KiB and hold only 3 such blocks.
  EXPECT_EQ(blocks_per_sm_by_shared_memory(114, block), 3);
}

TEST(HostCarveout, HostModelPrintsTheGuideExample) {
  std::ostringstream out;
  print_host_model(out);
  EXPECT_NE(out.str().find("12.0 at 50% asks for 50 KiB and gets 64 KiB"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("9.0   0, 8, 16, 32, 64, 100, 132, 164, 196, 228"), std::string::npos) << out.str();
}

// ---- The two problems ------------------------------------------------------------------------

TEST(HostGather, ChunksStayInsideTheTableAndCoverIt) {
  std::vector<int> hits(kTableChunks, 0);
  for (std::uint64_t warp = 0; warp < 4096; ++warp) {
    std::uint32_t state = warp_seed(warp);
    for (int round = 0; round < kGatherRounds; ++round) {
      const std::uint32_t chunk = next_chunk(state);
      ASSERT_LT(chunk, kTableChunks);
      ++hits[chunk];
    }
  }
  for (std::uint32_t c = 0; c < kTableChunks; ++c) EXPECT_GT(hits[c], 0) << "chunk " << c << " never read";
}

TEST(HostGather, ReferenceSumsTheLaneOfEachChunkOfItsWarp) {
  std::vector<std::uint32_t> table(kTableBytes / sizeof(std::uint32_t));
  for (std::size_t w = 0; w < table.size(); ++w) table[w] = static_cast<std::uint32_t>(w);
  const std::vector<std::uint32_t> out = gather_reference(table, 64);
  for (std::size_t lane : {std::size_t{0}, std::size_t{5}, std::size_t{37}}) {
    std::uint32_t state = warp_seed(lane / 32), expected = 0;
    for (int round = 0; round < kGatherRounds; ++round) expected += 4 * (next_chunk(state) * 32 + lane % 32) + 2;
    EXPECT_EQ(out[4 * lane + 2], expected) << "component 2 of lane " << lane;
  }
}

TEST(HostCopy, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = copy_reference(in);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);                           // wraps inside batch 0
  EXPECT_EQ(out[kBatchElems], (2u * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));  // batch 1's ring
}

TEST(HostCli, SizeMustBeWholeSixtyFourKiBSteps) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(64 * kKiB).has_value());
  EXPECT_FALSE(info.size_rule(1u << 30).has_value());
  ASSERT_TRUE(info.size_rule(4 * kKiB).has_value());
  EXPECT_NE(info.size_rule(4 * kKiB)->find("64 KiB"), std::string::npos);
}

// ---- What the compiler emits (PTX generated by the build) ----------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ptx80_ = course::read_text_file(COURSE_PTX_DIR "/carveout.compute_80.ptx");
    ptx90_ = course::read_text_file(COURSE_PTX_DIR "/carveout.compute_90.ptx");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string ptx80_, ptx90_;
};

TEST_F(HostCodegen, TheCopyIsSixteenByteLdgstsOnAmpereAndHopper) {
  for (const std::string* ptx : {&ptx80_, &ptx90_}) {
    for (const char* name : {"staged_copy_kernelILi1EL3Api0E", "staged_copy_kernelILi1EL3Api1E",
                             "staged_copy_kernelILi16EL3Api0E"}) {
      const std::string k = kernel(*ptx, name);
      EXPECT_TRUE(has(k, "cp.async.cg.shared.global")) << name;
      EXPECT_TRUE(has(k, ", 16, 16;")) << name;
      EXPECT_TRUE(has(k, "cp.async.wait_group")) << name;
      EXPECT_FALSE(has(k, "cp.async.bulk")) << name << ": cooperative_groups keeps LDGSTS on 9.0";
    }
  }
}

TEST_F(HostCodegen, TheGatherReadsThroughTheReadOnlyPathAndUsesNoSharedMemory) {
  for (const char* name : {"gather_kernelIL3Api0E", "gather_kernelIL3Api1E"}) {
    const std::string k = kernel(ptx80_, name);
    EXPECT_TRUE(has(k, "ld.global.nc.v4.u32")) << name;
    EXPECT_FALSE(has(k, ".shared")) << name << ": its speed depends on L1 alone";
  }
}

TEST_F(HostCodegen, TheResidencyProbeReadsTheSmIdAndTheGlobalTimer) {
  const std::string k = kernel(ptx80_, "residency_kernelIL3Api0E");
  EXPECT_TRUE(has(k, "%smid"));
  EXPECT_TRUE(has(k, "%globaltimer"));
  EXPECT_TRUE(has(k, "atom.global.max"));
}

TEST_F(HostCodegen, EachApiHasItsOwnInstantiation) {
  // cudaFuncSetCacheConfig and the carveout attribute never meet on the same function.
  for (const char* name : {"gather_kernelIL3Api0E", "gather_kernelIL3Api1E", "staged_copy_kernelILi1EL3Api0E",
                           "staged_copy_kernelILi1EL3Api1E", "residency_kernelIL3Api1E"}) {
    EXPECT_FALSE(course::ptx_kernel_body(ptx80_, name).empty()) << name;
  }
}

// ---- On the GPU: the variants --------------------------------------------------------------

class Sm80_Carveout : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_Carveout() : GpuTest(chapter_info().requirement) {}
  static course::Comparison verify_size(std::size_t size_bytes) {
    Problem problem(size_bytes);
    return verify(GetParam(), problem);
  }
};

TEST_P(Sm80_Carveout, OneSixtyFourKiBStep) {
  const course::Comparison result = verify_size(kSizeQuantum);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Carveout, ManyStepsAnOddNumberOfThem) {
  const course::Comparison result = verify_size(37 * kSizeQuantum);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_Carveout, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(5 * kSizeQuantum);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm80_Carveout, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- On the GPU: what the driver granted -------------------------------------------------------

class Sm80_Granted : public course::GpuTest {
 protected:
  Sm80_Granted() : GpuTest(chapter_info().requirement) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    COURSE_CHECK(cudaGetDeviceProperties(&prop_, 0));
    const auto caps = shared_capacities(prop_.major, prop_.minor);
    if (!caps) GTEST_SKIP() << "compute capability " << prop_.major << '.' << prop_.minor << " is not in the guide's table";
    caps_ = *caps;
    block_bytes_ = kDynamicBytes + prop_.reservedSharedMemPerBlock;
  }
  // What the host model predicts for the 30 KiB probe block at `percent`.
  int model_blocks(int percent) const {
    const int other_limit = std::min(prop_.maxBlocksPerMultiProcessor, prop_.maxThreadsPerMultiProcessor / kProbeThreads);
    return std::min(other_limit, blocks_per_sm_by_shared_memory(*launch_capacity_kib(caps_, percent, block_bytes_),
                                                                block_bytes_));
  }
  static Granted granted_at(int carveout) {
    COURSE_CHECK(cudaFuncSetAttribute(residency_kernel<Api::attribute>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      carveout));
    return measure_granted<Api::attribute>(kDynamicBytes);
  }
  static constexpr std::size_t kDynamicBytes = 30 * kKiB;
  cudaDeviceProp prop_{};
  SharedCapacities caps_{};
  std::size_t block_bytes_ = 0;
};

TEST_F(Sm80_Granted, TheMaximumIsTheDevicesSharedMemoryPerSm) {
  EXPECT_EQ(static_cast<std::size_t>(caps_.max_kib()) * kKiB, prop_.sharedMemPerMultiprocessor);
}

TEST_F(Sm80_Granted, OccupancyApiFollowsTheModelForEveryPercentage) {
  for (int percent : {0, 1, 4, 10, 15, 25, 44, 50, 57, 58, 75, 85, 86, 100}) {
    EXPECT_EQ(granted_at(percent).occupancy_api, model_blocks(percent)) << percent << "%";
  }
}

TEST_F(Sm80_Granted, TheSmsHoldWhatTheOccupancyApiPlans) {
  for (int carveout : {-1, 0, 15, 50, 58, 100}) {
    const Granted g = granted_at(carveout);
    EXPECT_EQ(g.measured_max, g.occupancy_api) << carveout_name(carveout);
    EXPECT_EQ(g.measured_min, g.occupancy_api) << carveout_name(carveout) << ": every SM reaches it";
  }
}

TEST_F(Sm80_Granted, FiftyPercentRoundsUpOnThisDevice) {
  const double asked_kib = caps_.max_kib() * 0.5;
  const int without_rounding = static_cast<int>(asked_kib * kKiB / block_bytes_);
  const Granted g = granted_at(50);
  EXPECT_EQ(g.measured_max, model_blocks(50));
  EXPECT_GT(g.measured_max, without_rounding) << "50% = " << asked_kib << " KiB would hold only " << without_rounding;
}

TEST_F(Sm80_Granted, ThePreferenceReadsBackNotTheGrant) {
  const Granted g = granted_at(10);  // asks for 10 %, less than one 31 KiB block
  EXPECT_EQ(g.preference, 10);
  EXPECT_GE(g.occupancy_api, 1) << "the driver raised the carveout so that one block fits";
}

TEST_F(Sm80_Granted, TheRuntimeRejectsOutOfRangeCarveouts) {
  for (int bad : {-2, 101}) {
    EXPECT_EQ(cudaFuncSetAttribute(residency_kernel<Api::attribute>, cudaFuncAttributePreferredSharedMemoryCarveout, bad),
              cudaErrorInvalidValue)
        << bad;
    cudaGetLastError();  // not sticky: forget it
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(Sm80_Granted, CacheConfigPreferencesShowInOccupancyToo) {
  int blocks[3] = {};
  const cudaFuncCache configs[3] = {cudaFuncCachePreferL1, cudaFuncCachePreferEqual, cudaFuncCachePreferShared};
  for (int i = 0; i < 3; ++i) {
    COURSE_CHECK(cudaFuncSetCacheConfig(residency_kernel<Api::cache_config>, configs[i]));
    blocks[i] = measure_granted<Api::cache_config>(kDynamicBytes).measured_max;
  }
  EXPECT_LT(blocks[0], blocks[2]) << "PreferL1 leaves fewer blocks than PreferShared";
  EXPECT_LE(blocks[1], blocks[2]);
  EXPECT_EQ(blocks[2], model_blocks(100)) << "PreferShared grants as much as MaxShared";
}

TEST_F(Sm80_Granted, TheProgramsTablePrints) {
  std::ostringstream out;
  print_granted(out);
  EXPECT_NE(out.str().find("cudaSharedmemCarveoutMaxL1 (0%)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("cudaFuncSetCacheConfig PreferShared"), std::string::npos) << out.str();
}

// ---- On the GPU: more than 48 KiB per block ------------------------------------------------------

class Sm80_OptIn : public course::GpuTest {
 protected:
  Sm80_OptIn() : GpuTest(chapter_info().requirement) {}
  // Launches shared_extent_kernel with `bytes` of dynamic shared memory; on success, checks that
  // every word came back mirrored. Returns the launch status.
  static cudaError_t launch_and_check(std::size_t bytes) {
    const std::size_t words = bytes / sizeof(std::uint32_t);
    course::DeviceBuffer<std::uint32_t> out(words);
    out.fill_bytes(course::kPoisonByte);
    shared_extent_kernel<<<1, kBlockThreads, bytes>>>(out.data(), words);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return launched;
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> host(words);
    out.download(host.data());
    for (std::size_t w = 0; w < words; ++w) {
      EXPECT_EQ(host[w], static_cast<std::uint32_t>(words - 1 - w) * 7u + 1u) << "word " << w;
      if (host[w] != static_cast<std::uint32_t>(words - 1 - w) * 7u + 1u) break;
    }
    return launched;
  }
  static cudaError_t set_limit(std::size_t bytes) {
    const cudaError_t status =
        cudaFuncSetAttribute(shared_extent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    cudaGetLastError();
    return status;
  }
};

TEST_F(Sm80_OptIn, FortyEightKiBNeedNoOptInOneWordMoreDoes) {
  ASSERT_EQ(set_limit(kStaticLimitBytes), cudaSuccess);  // the default limit
  EXPECT_EQ(launch_and_check(kStaticLimitBytes), cudaSuccess);
  EXPECT_EQ(launch_and_check(kStaticLimitBytes + 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "a refused launch leaves the device usable";
}

TEST_F(Sm80_OptIn, SixtyFourKiBWithoutOptInIsAnInvalidValue) {
  ASSERT_EQ(set_limit(kStaticLimitBytes), cudaSuccess);
  EXPECT_EQ(launch_and_check(64 * kKiB), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error is not sticky";
  ASSERT_EQ(set_limit(64 * kKiB), cudaSuccess);
  EXPECT_EQ(launch_and_check(64 * kKiB), cudaSuccess);
}

TEST_F(Sm80_OptIn, UpToTheDevicesOptInLimitAndNotOneWordMore) {
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, shared_extent_kernel));
  const std::size_t limit = prop.sharedMemPerBlockOptin - attributes.sharedSizeBytes;
  ASSERT_EQ(set_limit(limit), cudaSuccess);
  EXPECT_EQ(launch_and_check(limit), cudaSuccess) << "every byte up to sharedMemPerBlockOptin is usable";
  EXPECT_EQ(launch_and_check(limit + 16), cudaErrorInvalidValue);
  EXPECT_EQ(set_limit(limit + kKiB), cudaErrorInvalidValue) << "the opt-in itself is capped";
}

TEST_F(Sm80_OptIn, TheProgramPrintsTheRule) {
  std::ostringstream out;
  print_opt_in(out);
  EXPECT_NE(out.str().find("48 KiB by default"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("64 KiB after the opt-in"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos) << out.str();
}

}  // namespace
