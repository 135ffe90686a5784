// Tests for 01_sync_copy: the host reference by hand, the size rule, and every
// variant bit-exact on the GPU for one batch, many batches and an odd count.
#include "sync_copy.cu"

#include <gtest/gtest.h>

#include "course/testing.hpp"

// Test names and skip lists show the variant's name instead of its bytes.
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

TEST(HostSyncCopy, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps to the end of its own batch
  EXPECT_EQ(out[kBatchElems - 1], (kBatchElems - 2) + 2u * (kBatchElems - 1) + 0u);
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));  // not batch 0's
}

TEST(HostSyncCopy, SizeMustBeWholeBatches) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kBatchBytes));
  EXPECT_FALSE(info.size_rule(1000 * kBatchBytes));
  EXPECT_TRUE(info.size_rule(kBatchBytes + 4));
  EXPECT_TRUE(info.size_rule(100));
}

class Sm75_SyncCopy : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm75_SyncCopy() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm75_SyncCopy, OneBatch) {
  Problem problem(1);
  const course::Comparison result = verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm75_SyncCopy, ManyMoreBatchesThanResidentBlocks) {
  Problem problem(10007);  // prime: blocks do unequal numbers of batches
  const course::Comparison result = verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm75_SyncCopy, RepeatedRunsGiveTheSameBits) {
  Problem problem(777);
  for (int i = 0; i < 3; ++i) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << i << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm75_SyncCopy, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
