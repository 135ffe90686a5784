// Tests for 08_swizzle's second lesson, the guide's 8 x 8 int4 transpose (transpose_guide.cu): its
// loop simulated on the CPU against a simulated TMA load and store, with the offsets the guide
// leaves out; its reference and store coordinates; what its kernels compile to; both variants
// bit-exact on the GPU. The model, the lesson and the lab have swizzle_test.cu.
#include "transpose_guide.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// What a TMA load with `mode` writes into a buffer whose first row is pattern row `offset`.
std::vector<int4> to_shared(Swizzle mode, const std::vector<int4>& tile, int offset) {
  std::vector<int4> image(tile.size());
  for (int i = 0; i < kGuideDim; ++i) {
    for (int j = 0; j < kGuideDim; ++j) {
      image[i * kGuideDim + swizzled_chunk(mode, i, j, offset)] = tile[i * kGuideDim + j];
    }
  }
  return image;
}
// What a TMA store with `mode` reads out of such a buffer.
std::vector<int4> from_shared(Swizzle mode, const std::vector<int4>& image, int offset) {
  std::vector<int4> tile(image.size());
  for (int i = 0; i < kGuideDim; ++i) {
    for (int j = 0; j < kGuideDim; ++j) {
      tile[i * kGuideDim + j] = image[i * kGuideDim + swizzled_chunk(mode, i, j, offset)];
    }
  }
  return tile;
}
std::vector<int4> numbered_tile() {
  std::vector<int4> tile(kGuideDim * kGuideDim);
  for (int i = 0; i < kGuideDim * kGuideDim; ++i) tile[i] = make_int4(i, -i, 3 * i, 100 + i);
  return tile;
}
bool same(const std::vector<int4>& a, const std::vector<int4>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(int4) * a.size()) == 0;
}

// The kernel's loop: eight threads, each one column, through the buffers' offsets.
std::vector<int4> transpose_in_shared(Swizzle mode, const std::vector<int4>& in_image, int in_offset, int out_offset) {
  std::vector<int4> out_image(in_image.size());
  for (int j = 0; j < kGuideThreads; ++j) {
    guide_transpose_column(mode, in_image.data(), out_image.data(), j, in_offset, out_offset);
  }
  return out_image;
}

TEST(HostGuidePlan, EightThreadsTransposeTheInt4Tile) {
  const std::vector<int4> tile = numbered_tile();
  const std::vector<int4> expected = reference_transpose(tile, kGuideDim, kGuideDim);
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    for (int offset : {0, 5}) {
      const std::vector<int4> out = transpose_in_shared(mode, to_shared(mode, tile, offset), offset, offset);
      EXPECT_TRUE(same(from_shared(mode, out, offset), expected)) << swizzle_name(mode) << " offset " << offset;
    }
    // The two buffers need not share an offset: each is indexed with its own.
    const std::vector<int4> out = transpose_in_shared(mode, to_shared(mode, tile, 2), 2, 7);
    EXPECT_TRUE(same(from_shared(mode, out, 7), expected)) << swizzle_name(mode);
  }
}

// The guide's loop hard-codes offset 0, (i % 8) ^ j. A buffer 384 bytes past a 1024-byte boundary
// has offset 3: indexing it as if it had none moves the wrong elements.
TEST(HostGuidePlan, TheGuidesIndexingNeedsTheOffsetOfAnUnalignedBuffer) {
  const std::vector<int4> tile = numbered_tile();
  const std::vector<int4> expected = reference_transpose(tile, kGuideDim, kGuideDim);
  const int offset = swizzle_offset(Swizzle::b128, 384);
  ASSERT_EQ(offset, 3);
  const std::vector<int4> in_image = to_shared(Swizzle::b128, tile, offset);
  EXPECT_FALSE(same(from_shared(Swizzle::b128, transpose_in_shared(Swizzle::b128, in_image, 0, 0), offset), expected));
  EXPECT_TRUE(same(from_shared(Swizzle::b128, transpose_in_shared(Swizzle::b128, in_image, offset, offset), offset),
                   expected));
}

TEST(HostGuidePlan, UnswizzledStoresHitOneChunkColumnSwizzledStoresAll) {
  for (int i = 0; i < kGuideDim; ++i) {
    int plain = 0, swizzled = 0;  // bank groups (chunk columns) touched by step i's eight stores
    for (int j = 0; j < kGuideThreads; ++j) {
      plain |= 1 << guide_store_index(Swizzle::none, i, j, 0) % kGuideDim;
      swizzled |= 1 << guide_store_index(Swizzle::b128, i, j, 0) % kGuideDim;
    }
    EXPECT_EQ(plain, 1 << i) << "step " << i;
    EXPECT_EQ(swizzled, 0xFF) << "step " << i;
  }
}

TEST(HostGuideReference, TheInt4ViewMovesSixteenByteElements) {
  std::vector<float> in(2 * 8);  // 2 rows of 8 floats = 2 x 2 int4
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  EXPECT_EQ(reference_int4_transpose(in, 2, 8),
            (std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}));
}

TEST(HostGuideReference, TheMapsDescribeTheInt4MatrixAsInt32Words) {
  alignas(1024) static float matrix[64 * 128];
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    const course::TensorMapRequest in = matrix_request(CU_TENSOR_MAP_DATA_TYPE_INT32, matrix, 64, 128, kGuideDim,
                                                       kInt4Words * kGuideDim, mode);
    EXPECT_FALSE(course::broken_tensor_map_rule(in)) << swizzle_name(mode);
    EXPECT_EQ(in.box_dim[0] * course::element_bytes(in.data_type), static_cast<std::uint32_t>(kRowBytes));
  }
  // One int32 more per box row would break the 128B mode's span.
  EXPECT_TRUE(course::broken_tensor_map_rule(matrix_request(CU_TENSOR_MAP_DATA_TYPE_INT32, matrix, 64, 128, kGuideDim,
                                                            kInt4Words * kGuideDim + 4, Swizzle::b128)));
}

// The program takes the chapter's sizes: square matrices of whole slabs.
TEST(HostChapter, TheGuidesSizesAreTheChapters) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  EXPECT_TRUE(info.size_rule(3u << 20));
}

// ---- What the compiler emits ------------------------------------------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("transpose_guide", "90"); }
  static std::string kernel(const char* name) {
    const std::string body = course::ptx_kernel_body(ptx_, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string ptx_;
};

const char* const kGuideKernels[] = {"guide_int4_kernelIL7Swizzle0E", "guide_int4_kernelIL7Swizzle3E"};

// One tensor load (completing on the barrier by bytes) and one tensor store (a bulk group) per
// tile; the store waits until shared memory is read; every thread waits with the plain try_wait
// loop of the minimal kernel; the threads' st.shared are fenced for the async proxy; the int4
// elements move 16 bytes at a time.
TEST_F(HostCodegen, TheGuidesKernelMovesTheTileWithTensorCopies) {
  for (const char* name : kGuideKernels) {
    const std::string k = kernel(name);
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")) << name;
    EXPECT_TRUE(has(k, "mbarrier.arrive.expect_tx")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.commit_group")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.wait_group.read 0")) << name;
    EXPECT_TRUE(has(k, "fence.proxy.async.shared::cta")) << name;
    EXPECT_TRUE(has(k, "fence.mbarrier_init.release.cluster")) << name << ": the guide's snippet leaves this fence out";
    EXPECT_TRUE(has(k, "mbarrier.try_wait.parity")) << name;
    EXPECT_FALSE(has(k, "%globaltimer")) << name << ": the minimal kernel waits plainly";
    EXPECT_EQ(course::count_matches(k, R"(ld\.shared\.v4\.u32)"), kGuideDim) << name;
    EXPECT_EQ(course::count_matches(k, R"(st\.shared\.v4\.u32)"), kGuideDim) << name;
    EXPECT_EQ(course::count_matches(k, R"(ld\.global|st\.global)"), 0) << name << ": no element through registers";
  }
}

TEST_F(HostCodegen, MachineCodeUsesTheTmaUnit) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (const char* name : kGuideKernels) {
    const std::string k = course::sass_kernel_body(sass, name);
    ASSERT_FALSE(k.empty()) << "no kernel " << name << " in the sm_90 machine code";
    EXPECT_TRUE(has(k, "UTMALDG")) << name;
    EXPECT_TRUE(has(k, "UTMASTG")) << name;
  }
}

// ---- On the GPU: both variants --------------------------------------------------------------

class Sm90_TransposeGuide : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_TransposeGuide() : GpuTest(chapter_info().requirement) {}
  void expect_correct(int rows, int cols) {
    Problem problem(rows, cols);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << rows << " x " << cols << ": " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_TransposeGuide, OneTile) { expect_correct(kGuideDim, kInt4Words * kGuideDim); }
// Tiles off the diagonal: the store must go to the mirrored tile (the guide's undefined {x, y}).
TEST_P(Sm90_TransposeGuide, ARowOfTilesBecomesAColumn) { expect_correct(kGuideDim, 5 * kInt4Words * kGuideDim); }
TEST_P(Sm90_TransposeGuide, Rectangle) { expect_correct(256, 96); }
TEST_P(Sm90_TransposeGuide, ManyTiles) { expect_correct(1024, 1024); }

TEST_P(Sm90_TransposeGuide, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(256, 256);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90_TransposeGuide, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
