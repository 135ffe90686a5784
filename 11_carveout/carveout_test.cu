// Tests for 11_carveout: the capacity table and the rounding rule against the guide (CPU),
// what the kernels of the lesson and the lab compile to (PTX on 8.0 and 9.0, machine code on
// 9.0), every lesson variant and lab row bit-exact, what the driver grants for each setting
// (the lesson's occupancy table, the lab's residency probe), and the opt-in for more than
// 48 KiB per block (GPU).
#include "carveout_lab.cu"  // the lab, which brings the lesson and the model
#include "carveout_figures.cpp"  // the concept figure, drawn from the model

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

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
  EXPECT_THROW(prefer_carveout(staged_copy_kernel<1>, 101), std::invalid_argument);
  EXPECT_THROW(prefer_carveout(lab::gather_kernel<lab::Api::attribute>, -2), std::invalid_argument);
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
  // The same numbers with a limit from threads: 64-thread blocks, 2048 threads per SM.
  EXPECT_EQ(model_blocks_per_sm(cc90, 100, block, 32), 7);
  EXPECT_EQ(model_blocks_per_sm(cc90, 100, block, 5), 5) << "another limit can be lower";
  EXPECT_FALSE(model_blocks_per_sm(cc90, 100, 229 * kKiB, 32).has_value());
}

// The lesson's four copies on an H100, from the model: a 4 KiB step takes 5 KiB with the driver's
// reservation, a 64 KiB step 65 KiB; 256-thread blocks, so at most 8 per SM by threads.
TEST(HostCarveout, TheLessonsCopiesOnHopper) {
  const SharedCapacities cc90 = *shared_capacities(9, 0);
  const int thread_limit = 2048 / kBlockThreads;
  EXPECT_EQ(launch_capacity_kib(cc90, cudaSharedmemCarveoutMaxL1, kBatchBytes + kKiB), 8);
  EXPECT_EQ(model_blocks_per_sm(cc90, cudaSharedmemCarveoutMaxL1, kBatchBytes + kKiB, thread_limit), 1)
      << "copy_max_l1: one block per SM";
  EXPECT_EQ(model_blocks_per_sm(cc90, cudaSharedmemCarveoutMaxShared, kBatchBytes + kKiB, thread_limit), 8)
      << "copy_max_shared: the thread limit";
  EXPECT_EQ(model_blocks_per_sm(cc90, cudaSharedmemCarveoutMaxShared, kBigStepBytes + kKiB, thread_limit), 3)
      << "copy_big_step";
}

TEST(HostCarveout, HostModelPrintsTheGuideExample) {
  std::ostringstream out;
  print_host_model(out);
  EXPECT_NE(out.str().find("12.0 at 50% asks for 50 KiB and gets 64 KiB"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("9.0   0, 8, 16, 32, 64, 100, 132, 164, 196, 228"), std::string::npos) << out.str();
}

// ---- The two problems ------------------------------------------------------------------------

TEST(HostGather, ChunksStayInsideTheTableAndCoverIt) {
  using namespace lab;
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
  using namespace lab;
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
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);                           // wraps inside batch 0
  EXPECT_EQ(out[kBatchElems], (2u * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));  // batch 1's ring
}

TEST(HostCli, SizeMustBeWholeSixtyFourKiBSteps) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(64 * kKiB).has_value()) << info.program;
    EXPECT_FALSE(info.size_rule(1u << 30).has_value()) << info.program;
    ASSERT_TRUE(info.size_rule(4 * kKiB).has_value()) << info.program;
    EXPECT_NE(info.size_rule(4 * kKiB)->find("64 KiB"), std::string::npos) << info.program;
  }
}

// ---- The concept figure and the program that draws it -----------------------------------------

TEST(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, DrawsTheModelsRounding) {
  const std::string svg = carveout_rounding_svg();
  EXPECT_NE(svg.find("viewBox=\"0 0 720 "), std::string::npos) << "scales to its column";
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos) << "no fixed width";
  EXPECT_NE(svg.find("50 %: asks 114 KiB, gets 132 KiB"), std::string::npos) << svg;
  EXPECT_NE(svg.find("58 %: asks 132.2 KiB, gets 164 KiB"), std::string::npos) << svg;
  EXPECT_NE(svg.find("50 %: asks 50 KiB, gets 64 KiB"), std::string::npos) << "the guide's example";
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ----------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* arch : {"80", "90"}) {
      lesson_[arch] = course::chapter_ptx("carveout", arch);
      lab_[arch] = course::chapter_ptx("carveout_lab", arch);
    }
  }
  static std::string kernel(const std::map<std::string, std::string>& ptx, const std::string& arch,
                            const std::string& part) {
    const std::string body = course::ptx_kernel_body(ptx.at(arch), part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in the compute_" << arch << " PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static inline std::map<std::string, std::string> lesson_, lab_;
};

// Mangled-name fragments: the lesson's copy in 4 KiB and 64 KiB steps; the lab's copy, gather
// and residency probe, once per API (Api0: the carveout attribute, Api1: the cache config).
const char* const kLessonCopy1 = "18staged_copy_kernelILi1EEvPKj";
const char* const kLessonCopy16 = "18staged_copy_kernelILi16EEvPKj";
const char* const kLabCopy[] = {"3lab18staged_copy_kernelILi1ELNS_3ApiE0EEEv", "3lab18staged_copy_kernelILi1ELNS_3ApiE1EEEv"};
const char* const kLabGather[] = {"3lab13gather_kernelILNS_3ApiE0EEEv", "3lab13gather_kernelILNS_3ApiE1EEEv"};
const char* const kLabProbe[] = {"3lab16residency_kernelILNS_3ApiE0EEEv", "3lab16residency_kernelILNS_3ApiE1EEEv"};

// cp.async.cg with 16 bytes: the LDGSTS that bypasses L1. cooperative_groups::memcpy_async
// waits with cp.async.wait_group and never becomes a bulk copy, on 9.0 either.
TEST_F(HostCodegen, TheCopyIsSixteenByteLdgstsOnAmpereAndHopper) {
  for (const char* arch : {"80", "90"}) {
    std::vector<std::pair<std::string, std::string>> kernels = {
        {kLessonCopy1, kernel(lesson_, arch, kLessonCopy1)}, {kLessonCopy16, kernel(lesson_, arch, kLessonCopy16)}};
    for (const char* part : kLabCopy) kernels.push_back({part, kernel(lab_, arch, part)});
    for (const auto& [name, k] : kernels) {
      EXPECT_GE(course::count_matches(k, R"(cp\.async\.cg\.shared\.global [^;]*, 16, 16;)"), 1) << name << arch;
      EXPECT_TRUE(has(k, "cp.async.wait_group")) << name << arch;
      EXPECT_FALSE(has(k, "cp.async.bulk")) << name << arch << ": cooperative_groups keeps LDGSTS on 9.0";
    }
  }
}

TEST_F(HostCodegen, NothingIsABulkCopy) {
  for (const char* arch : {"80", "90"}) {
    EXPECT_EQ(course::count_matches(lesson_.at(arch), R"(cp\.async\.bulk)"), 0) << "carveout.compute_" << arch;
    EXPECT_EQ(course::count_matches(lab_.at(arch), R"(cp\.async\.bulk)"), 0) << "carveout_lab.compute_" << arch;
  }
}

// ld.global.nc: the read-only (texture) path, which L1 caches.
TEST_F(HostCodegen, TheGatherReadsThroughTheReadOnlyPathAndUsesNoSharedMemory) {
  for (const char* part : kLabGather) {
    const std::string k = kernel(lab_, "80", part);
    EXPECT_GE(course::count_matches(k, R"(ld\.global\.nc\.v4\.u32)"), 1) << part;
    EXPECT_FALSE(has(k, ".shared")) << part << ": its speed depends on L1 alone";
  }
}

TEST_F(HostCodegen, TheResidencyProbeReadsTheSmIdAndTheGlobalTimer) {
  const std::string k = kernel(lab_, "80", kLabProbe[0]);
  EXPECT_GE(course::count_matches(k, "%smid"), 1);
  EXPECT_GE(course::count_matches(k, "%globaltimer"), 1);
  EXPECT_TRUE(has(k, "atom.global.max"));
}

TEST_F(HostCodegen, EachApiHasItsOwnInstantiation) {
  // cudaFuncSetCacheConfig and the carveout attribute never meet on the same function.
  for (const auto* parts : {&kLabCopy, &kLabGather, &kLabProbe}) {
    for (const char* part : *parts) EXPECT_FALSE(course::ptx_kernel_body(lab_.at("80"), part).empty()) << part;
  }
}

// The machine code on 9.0 (this executable's sm_90 code; skipped where cuobjdump or that code is
// missing): LDGSTS.E.BYPASS.128 is the 16-byte cp.async.cg of the copy, LDG.E.128.CONSTANT the
// gather's 16-byte read-only load (ld.global.nc), and no kernel has a bulk copy (UBLKCP).
TEST_F(HostCodegen, MachineCodeOnHopperIsLdgstsForTheCopyAndReadOnlyLoadsForTheGather) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto body = [&](const std::string& part) {
    const std::string k = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(k.empty()) << "no kernel " << part << " in the sm_90 machine code";
    return k;
  };
  for (const char* part : {kLessonCopy1, kLessonCopy16, kLabCopy[0], kLabCopy[1]}) {
    EXPECT_GE(course::count_matches(body(part), R"(LDGSTS\.E\.BYPASS\.128)"), 1) << part;
  }
  for (const char* part : kLabGather) EXPECT_GE(course::count_matches(body(part), R"(LDG\.E\.128\.CONSTANT)"), 1) << part;
  EXPECT_EQ(course::count_matches(sass, "UBLKCP"), 0);
}

// ---- On the GPU: the lesson's variants and the lab's rows ------------------------------------

class Sm80_Carveout : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_Carveout() : GpuTest(chapter_info().requirement) {}
  static course::Comparison verify_size(std::size_t size_bytes) {
    Problem problem(size_bytes);
    return verify(GetParam().launch, problem);
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
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm80_Carveout, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm80_CarveoutLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm80_CarveoutLab() : GpuTest(lab::chapter_info().requirement) {}
  static course::Comparison verify_size(std::size_t size_bytes) {
    lab::Problem problem(size_bytes);
    return lab::verify(GetParam(), problem);
  }
};

TEST_P(Sm80_CarveoutLab, OneSixtyFourKiBStep) {
  const course::Comparison result = verify_size(kSizeQuantum);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_CarveoutLab, ManyStepsAnOddNumberOfThem) {
  const course::Comparison result = verify_size(37 * kSizeQuantum);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_CarveoutLab, PoisonedOutputIsFullyOverwrittenTwice) {
  lab::Problem problem(5 * kSizeQuantum);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = lab::verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Sm80_CarveoutLab, ::testing::ValuesIn(lab::kVariants),
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
    const int other_limit =
        std::min(prop_.maxBlocksPerMultiProcessor, prop_.maxThreadsPerMultiProcessor / lab::kProbeThreads);
    return *model_blocks_per_sm(caps_, percent, block_bytes_, other_limit);
  }
  static lab::Granted granted_at(int carveout) {
    COURSE_CHECK(cudaFuncSetAttribute(lab::residency_kernel<lab::Api::attribute>,
                                      cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
    return lab::measure_granted<lab::Api::attribute>(kDynamicBytes);
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
    const lab::Granted g = granted_at(carveout);
    EXPECT_EQ(g.measured_max, g.occupancy_api) << carveout_name(carveout);
    EXPECT_EQ(g.measured_min, g.occupancy_api) << carveout_name(carveout) << ": every SM reaches it";
  }
}

TEST_F(Sm80_Granted, FiftyPercentRoundsUpOnThisDevice) {
  const double asked_kib = caps_.max_kib() * 0.5;
  const int without_rounding = static_cast<int>(asked_kib * kKiB / block_bytes_);
  const lab::Granted g = granted_at(50);
  EXPECT_EQ(g.measured_max, model_blocks(50));
  EXPECT_GT(g.measured_max, without_rounding) << "50% = " << asked_kib << " KiB would hold only " << without_rounding;
}

TEST_F(Sm80_Granted, ThePreferenceReadsBackNotTheGrant) {
  const lab::Granted g = granted_at(10);  // asks for 10 %, less than one 31 KiB block
  EXPECT_EQ(g.preference, 10);
  EXPECT_GE(g.occupancy_api, 1) << "the driver raised the carveout so that one block fits";
}

TEST_F(Sm80_Granted, TheRuntimeRejectsOutOfRangeCarveouts) {
  for (int bad : {-2, 101}) {
    EXPECT_EQ(cudaFuncSetAttribute(lab::residency_kernel<lab::Api::attribute>,
                                   cudaFuncAttributePreferredSharedMemoryCarveout, bad),
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
    COURSE_CHECK(cudaFuncSetCacheConfig(lab::residency_kernel<lab::Api::cache_config>, configs[i]));
    blocks[i] = lab::measure_granted<lab::Api::cache_config>(kDynamicBytes).measured_max;
  }
  EXPECT_LT(blocks[0], blocks[2]) << "PreferL1 leaves fewer blocks than PreferShared";
  EXPECT_LE(blocks[1], blocks[2]);
  EXPECT_EQ(blocks[2], model_blocks(100)) << "PreferShared grants as much as MaxShared";
}

TEST_F(Sm80_Granted, TheLabsTablePrints) {
  std::ostringstream out;
  lab::print_residency(out);
  EXPECT_NE(out.str().find("cudaSharedmemCarveoutMaxL1 (0%)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("cudaFuncSetCacheConfig PreferShared"), std::string::npos) << out.str();
}

// The lesson's copy at MaxL1: a 4 KiB block (5 KiB with the reservation) gets an 8 KiB carveout,
// which holds one block per SM; at MaxShared the SM holds what the model allows and no fewer
// than at MaxL1. The lesson's table prints a row per variant.
TEST_F(Sm80_Granted, TheLessonsCopyAtMaxL1FitsOneBlockPerSm) {
  const auto occupancy = [](auto kernel, int carveout, std::size_t dynamic_bytes) {
    prefer_carveout(kernel, carveout);
    int blocks = 0;
    COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kBlockThreads, dynamic_bytes));
    return blocks;
  };
  const int thread_limit = std::min(prop_.maxBlocksPerMultiProcessor, prop_.maxThreadsPerMultiProcessor / kBlockThreads);
  const std::size_t block = kBatchBytes + prop_.reservedSharedMemPerBlock;
  const int max_l1 = occupancy(staged_copy_kernel<1>, cudaSharedmemCarveoutMaxL1, kBatchBytes);
  const int max_shared = occupancy(staged_copy_kernel<1>, cudaSharedmemCarveoutMaxShared, kBatchBytes);
  EXPECT_EQ(max_l1, *model_blocks_per_sm(caps_, cudaSharedmemCarveoutMaxL1, block, thread_limit));
  EXPECT_GT(max_shared, max_l1);
  EXPECT_LE(max_shared, *model_blocks_per_sm(caps_, cudaSharedmemCarveoutMaxShared, block, thread_limit))
      << "registers may allow fewer, never more";
  std::ostringstream out;
  print_granted(out);
  for (const Variant& v : kVariants) EXPECT_NE(out.str().find(std::string(v.name) + ":"), std::string::npos) << out.str();
}

// ---- On the GPU: more than 48 KiB per block ------------------------------------------------------

// Thread t writes words t, t + blockDim.x, ... of the dynamic shared memory, then every word
// is read back by another thread (mirrored) and stored: the whole allocation must be usable.
__global__ void shared_extent_kernel(std::uint32_t* gmem_out, std::size_t num_words) {
  extern __shared__ std::uint32_t smem_words[];
  for (std::size_t w = threadIdx.x; w < num_words; w += blockDim.x) smem_words[w] = static_cast<std::uint32_t>(w) * 7u + 1u;
  __syncthreads();  // every word written before any is read back
  for (std::size_t w = threadIdx.x; w < num_words; w += blockDim.x) gmem_out[w] = smem_words[num_words - 1 - w];
}

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
