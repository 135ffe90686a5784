// Tests for 10_stas_cluster's third lesson, the histogram in distributed shared memory
// (dsmem_histogram.cu): how the bins are split between the blocks of a cluster, the shared memory
// each block needs, the host reference and the input pattern; the variant table and the command
// line; what each kernel compiles to (PTX for compute_90 and, where cuobjdump can read it, sm_90
// machine code); every variant bit-exact on the GPU for one word, one tile, a size that is not a
// multiple of the tile and more clusters than fit; a kernel that splits the bins one way and
// merges them another, caught by the comparison.
#include "dsmem_histogram.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

namespace histogram {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace histogram

namespace {

using namespace histogram;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The bins and the reference -----------------------------------------------------------------

// Every bin has exactly one owner and one place there, and the merge (owner's slice of the global
// histogram, place within it) puts its count back at the bin's own index.
TEST(HostHistogramBins, OwnerAndPlaceSplitTheBinsExactly) {
  for (int c : {1, 2, 4, 8, 16}) {
    std::vector<int> seen(kNumBins, 0);
    for (unsigned bin = 0; bin < static_cast<unsigned>(kNumBins); ++bin) {
      const unsigned owner = owner_rank(bin, c), place = local_bin(bin, c);
      ASSERT_LT(owner, static_cast<unsigned>(c)) << "bin " << bin;
      ASSERT_LT(place, static_cast<unsigned>(bins_per_block(c))) << "bin " << bin;
      const std::size_t merged = std::size_t{owner} * bins_per_block(c) + place;
      ASSERT_EQ(merged, bin) << "cluster of " << c;
      ++seen[merged];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kNumBins) << "cluster of " << c;
  }
  EXPECT_EQ(owner_rank(16383, 2), 0u);
  EXPECT_EQ(owner_rank(16384, 2), 1u);
  EXPECT_EQ(local_bin(16384 + 5, 2), 5u);
}

TEST(HostHistogramBins, AloneABlockNeedsTheOptInAndMoreThanHalfAnSm) {
  EXPECT_EQ(block_smem_bytes(1), 128u * 1024) << "all 32768 counters";
  EXPECT_GT(block_smem_bytes(1), 48u * 1024) << "more than a block gets without cudaFuncAttributeMaxDynamicSharedMemorySize";
  EXPECT_GT(2 * (block_smem_bytes(1) + 1024), 228u * 1024) << "two such blocks do not fit the 228 KiB of a 9.0 SM";
  EXPECT_EQ(block_smem_bytes(2), 64u * 1024);
  EXPECT_EQ(block_smem_bytes(8), 16u * 1024);
  for (const Variant& v : kVariants) EXPECT_LE(block_smem_bytes(v.cluster_blocks), 227u * 1024) << v.name;
  EXPECT_GT(2 * block_smem_bytes(1), 227u * 1024) << "twice the bins would need clusters: no block holds 256 KiB";
}

TEST(HostHistogramReference, CountsByHand) {
  const std::vector<std::uint32_t> words = {0u, 32768u, 5u, 5u + 65536u, 32767u, 0xFFFFFFFFu};
  const std::vector<std::uint32_t> counts = reference(words);
  ASSERT_EQ(counts.size(), std::size_t{kNumBins});
  EXPECT_EQ(counts[0], 2u);
  EXPECT_EQ(counts[5], 2u);
  EXPECT_EQ(counts[32767], 2u) << "32767 and 0xFFFFFFFF";
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0ull), words.size());
}

// The input pattern gives the bins different counts, so a kernel that counts into the wrong bin,
// or merges a slice into the wrong place, changes the output.
TEST(HostHistogramReference, PatternGivesBinsDifferentCounts) {
  std::vector<std::uint32_t> words((8u << 20) / sizeof(std::uint32_t));
  course::fill_pattern(words, 10);
  const std::vector<std::uint32_t> counts = reference(words);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0ull), words.size());
  const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
  EXPECT_LT(*low + 10, *high) << "counts spread around the mean of 64";
  std::vector<std::uint32_t> shifted(counts.size());
  std::rotate_copy(counts.begin(), counts.begin() + 1, counts.end(), shifted.begin());
  std::size_t differ = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) differ += shifted[b] != counts[b];
  EXPECT_GT(differ, counts.size() * 9 / 10) << "a histogram off by one bin differs almost everywhere";
  std::vector<std::uint32_t> halves(counts.size());
  std::rotate_copy(counts.begin(), counts.begin() + kNumBins / 2, counts.end(), halves.begin());
  EXPECT_NE(halves, counts) << "two slices merged into each other's place";
}

// ---- The variant table and the command line -----------------------------------------------------

TEST(HostHistogramVariants, ClusterSizesNamedByTheirSize) {
  std::vector<std::string> names;
  for (const Variant& v : kVariants) {
    names.push_back(v.name);
    EXPECT_EQ(std::string(v.name), "histogram_c" + std::to_string(v.cluster_blocks));
    EXPECT_EQ(kNumBins % v.cluster_blocks, 0) << v.name << ": every block the same number of bins";
    EXPECT_LE(v.cluster_blocks, 8) << v.name << ": portable cluster sizes, no opt-in";
  }
}

TEST(HostHistogramVariants, SizeIsWholeWordsOfInput) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_STREQ(info.program, "dsmem_histogram");
  EXPECT_EQ(info.requirement.major, 9);
  EXPECT_TRUE(info.bench_reads_device_memory) << "the input comes from device memory";
  for (std::size_t ok : {std::size_t{4}, std::size_t{4100}, kTileWords * 4 + 20, info.verify_bytes, info.bench_bytes,
                         kMaxInputBytes}) {
    EXPECT_FALSE(info.size_rule(ok)) << ok;
  }
  for (std::size_t bad : {std::size_t{0}, std::size_t{1}, std::size_t{4098}, kMaxInputBytes + 4}) {
    EXPECT_TRUE(info.size_rule(bad)) << bad;
  }
  EXPECT_LE(kMaxInputBytes / sizeof(std::uint32_t), std::size_t{1} << 31) << "every count fits 32 bits";
}

TEST(HostHistogramVariants, ProgramPrintsTheSplit) {
  std::ostringstream out;
  chapter_info().host_model(out);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "32768 bins = 128 KiB of counters per cluster")) << text;
  EXPECT_TRUE(contains(text, "cluster of 1: 32768 bins (128 KiB) per block; adds into another block's shared memory: "
                             "0 in 1"))
      << text;
  EXPECT_TRUE(contains(text, "cluster of 2: 16384 bins (64 KiB) per block; adds into another block's shared memory: "
                             "1 in 2"))
      << text;
}

// ---- What the compiler emits ----------------------------------------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("dsmem_histogram", "90"); }
  static std::string kernel(int cluster_blocks) {
    const std::string part = "histogram_kernelILi" + std::to_string(cluster_blocks) + "EE";
    const std::string body = course::ptx_kernel_body(ptx_, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in dsmem_histogram.compute_90.ptx";
    return body;
  }
  static inline std::string ptx_;
};

// Alone, a block counts with shared-memory atomics and synchronises only itself.
TEST_F(HostCodegen, ClusterOfOneCountsWithSharedMemoryAtomics) {
  const std::string k = kernel(1);
  EXPECT_GE(course::count_matches(k, R"(atom\.shared\.add\.u32)"), 16) << "four words of four loads, unrolled";
  EXPECT_FALSE(contains(k, "mapa"));
  EXPECT_FALSE(contains(k, "barrier.cluster"));
  EXPECT_GE(course::count_matches(k, R"(bar\.sync)"), 2);
}

// In a cluster, every add goes to the address map_shared_rank returns: mapa.u64 gives a generic
// address in the owner's shared memory, and the atomic is a generic atom.add on it (nvcc 13.0 emits
// no atom.shared::cluster for atomicAdd); two cluster barriers, before the first add and after the last.
TEST_F(HostCodegen, ClustersAddThroughMappedAddressesBetweenTwoClusterBarriers) {
  for (int c : {2}) {
    const std::string k = kernel(c);
    EXPECT_GE(course::count_matches(k, R"(mapa\.u64)"), 16) << c << ": one mapping per word";
    EXPECT_GE(course::count_matches(k, R"(\tatom\.add\.u32)"), 16) << c << ": the add on the mapped (generic) address";
    EXPECT_EQ(course::count_matches(k, R"(atom\.shared\.add)"), 0) << c << ": our own bins too go through mapa";
    EXPECT_EQ(course::count_matches(k, R"(barrier\.cluster\.arrive)"), 2) << c;
    EXPECT_EQ(course::count_matches(k, R"(barrier\.cluster\.wait)"), 2) << c;
  }
}

// Every kernel: four 16-byte loads in flight before the adds, the merge with global atomics.
TEST_F(HostCodegen, EveryKernelLoadsSixteenBytesAtATimeAndMergesWithGlobalAtomics) {
  for (int c : {1, 2}) {
    const std::string k = kernel(c);
    EXPECT_GE(course::count_matches(k, R"(ld\.global\.nc\.v4\.u32)"), kLoadsPerThread) << c;
    EXPECT_GE(course::count_matches(k, R"((atom|red)\.global\.add\.u32)"), 1) << c << ": the merge";
  }
}

// The machine code on 9.0 (skipped where cuobjdump or sm_90 code is missing): ATOMS for the
// shared-memory atomics of a lone block; in clusters, no ATOMS (the adds go through the generic
// path, ATOM) and the cluster barrier UCGABAR.
TEST_F(HostCodegen, MachineCodeOnHopperShowsSharedAndGenericAtomics) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto body = [&](int c) {
    const std::string k = course::sass_kernel_body(sass, "histogram_kernelILi" + std::to_string(c) + "EE");
    EXPECT_FALSE(k.empty()) << "no kernel for a cluster of " << c << " in the sm_90 machine code";
    return k;
  };
  const std::string alone = body(1);
  EXPECT_GE(course::count_matches(alone, "ATOMS"), 1);
  EXPECT_EQ(course::count_matches(alone, "UCGABAR"), 0);
  for (int c : {2}) {
    const std::string k = body(c);
    EXPECT_EQ(course::count_matches(k, "ATOMS"), 0) << c;
    EXPECT_GE(course::count_matches(k, R"(ATOM\.E\.ADD)"), 1) << c;
    EXPECT_GE(course::count_matches(k, "UCGABAR_ARV"), 2) << c;
  }
}

// ---- On the GPU: every variant ----------------------------------------------------------------

class Sm90_DsmemHistogram : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_DsmemHistogram() : GpuTest(chapter_info().requirement) {}
  void expect_correct(std::size_t num_words, unsigned num_clusters) {
    Problem problem(num_words);
    const course::Comparison result = verify(GetParam(), problem, num_clusters);
    EXPECT_TRUE(result.ok()) << num_words << " words, " << num_clusters << " clusters: " << result.summary() << '\n'
                             << result.first;
  }
};

TEST_P(Sm90_DsmemHistogram, OneWord) { expect_correct(1, 1); }

TEST_P(Sm90_DsmemHistogram, OneTileForOneCluster) { expect_correct(kTileWords, 1); }

TEST_P(Sm90_DsmemHistogram, OneTilePerBlockOfOneCluster) {
  expect_correct(kTileWords * GetParam().cluster_blocks, 1);
}

TEST_P(Sm90_DsmemHistogram, NotAMultipleOfTheTile) { expect_correct(5 * kTileWords + 777, 3); }

TEST_P(Sm90_DsmemHistogram, TheBenchGridAndMoreClustersThanFitAtOnce) {
  const unsigned resident = GetParam().resident_clusters();
  expect_correct((3u << 20) / sizeof(std::uint32_t) + 5, resident);
  expect_correct((3u << 20) / sizeof(std::uint32_t) + 5, 2 * resident + 3);
}

TEST_P(Sm90_DsmemHistogram, RepeatedRunsGiveTheSameBits) {
  Problem problem(kTileWords * 40 + 3);
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem, 4);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm90_DsmemHistogram, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm90_DsmemHistogramLimits : public course::GpuTest {
 protected:
  Sm90_DsmemHistogramLimits() : GpuTest(chapter_info().requirement) {}
};

// The trade-off the lesson states: alone, one block per SM; split, more blocks fit.
TEST_F(Sm90_DsmemHistogramLimits, SplittingTheBinsLetsMoreBlocksFit) {
  const unsigned sms = static_cast<unsigned>(device().sm_count);
  EXPECT_LE(resident_clusters<1>(), sms) << "128 KiB per block: at most one per SM";
  EXPECT_GT(resident_clusters<2>() * 2, resident_clusters<1>()) << "64 KiB per block: more blocks at once";
  EXPECT_GE(resident_clusters<4>() * 4, resident_clusters<2>() * 2);
}

// ---- A kernel that splits the bins one way and merges them another ----------------------------

// The lesson's kernel for a cluster of 2, simplified (one word per thread at a time), with one
// change: bin b is owned by block b % 2 at place b / 2 (interleaved), while the merge still takes
// block r's place p for bin r * 16384 + p (blocked). Every count lands in some bin: wrong ones.
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads)
    interleaved_owner_kernel(const std::uint32_t* gmem_in, std::size_t num_words, std::uint32_t* gmem_hist) {
  constexpr int kBlockBins = kNumBins / 2;
  extern __shared__ std::uint32_t smem_bins[];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  for (int b = threadIdx.x; b < kBlockBins; b += kThreads) smem_bins[b] = 0;
  cluster.sync();
  for (std::size_t i = std::size_t{blockIdx.x} * kThreads + threadIdx.x; i < num_words;
       i += std::size_t{gridDim.x} * kThreads) {
    const unsigned bin = bin_of(gmem_in[i]);
    atomicAdd(cluster.map_shared_rank(smem_bins, bin % 2) + bin / 2, 1u);  // BROKEN: not the merge's split
  }
  cluster.sync();
  std::uint32_t* gmem_slice = gmem_hist + std::size_t{cluster.block_rank()} * kBlockBins;
  for (int b = threadIdx.x; b < kBlockBins; b += kThreads) atomicAdd(&gmem_slice[b], smem_bins[b]);
}

class Sm90_DsmemHistogramBroken : public course::GpuTest {
 protected:
  Sm90_DsmemHistogramBroken() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_DsmemHistogramBroken, BinsSplitOneWayAndMergedAnotherAreCaught) {
  Problem problem((8u << 20) / sizeof(std::uint32_t));  // 64 words per bin on average: few equal neighbours
  constexpr std::size_t kSmemBytes = block_smem_bytes(2);
  COURSE_CHECK(cudaFuncSetAttribute(interleaved_owner_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSmemBytes)));
  problem.gmem_hist.poison();
  COURSE_CHECK(cudaMemset(problem.gmem_hist.data(), 0, kHistogramBytes));
  interleaved_owner_kernel<<<8, kThreads, kSmemBytes>>>(problem.gmem_in.data(), problem.words.size(),
                                                        problem.gmem_hist.data());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = problem.gmem_hist.check(problem.expected);
  EXPECT_FALSE(result.ok()) << "the comparison did not notice counts in the wrong bins";
  EXPECT_GT(result.mismatches, std::size_t{kNumBins} * 9 / 10) << result.summary();
  EXPECT_EQ(result.untouched, 0u) << "every bin was written (zeroed, then added to)";
  // The same words through the lesson's kernel for a cluster of 2: correct.
  const course::Comparison lesson = verify(kVariants[1], problem, 4);
  EXPECT_TRUE(lesson.ok()) << lesson.summary() << '\n' << lesson.first;
}

}  // namespace
