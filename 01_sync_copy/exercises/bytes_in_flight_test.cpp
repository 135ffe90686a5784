// Grades exercise 01.2: Little's law per SM against the chapter's model and the table the lesson
// prints, what a residency offers, and the narrowest width and fewest blocks that meet a need,
// including needs met exactly (at least as many bytes as needed is enough).
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cmath>

#include "sync_copy_model.hpp"

namespace {

constexpr Residency kH100{132, 256, 8};  // the lesson's figures: 132 SMs, 8 blocks of 256 threads each

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b) + 1e-9; }

TEST(HostExerciseBytesInFlight, NeededBytesPerSmIsLittlesLawShared) {
  EXPECT_TRUE(close(needed_bytes_per_sm(1500, 600, 132), 1500.0 * 600 / 132))
      << "1500 GB/s at 600 ns over 132 SMs: needed_bytes_per_sm gives " << needed_bytes_per_sm(1500, 600, 132)
      << " bytes; the lesson's page says about 6.7 KiB per SM";
  EXPECT_TRUE(close(needed_bytes_per_sm(2048, 2, 1), 4096)) << "2048 GB/s at 2 ns on one SM: 1 GB/s x 1 ns is 1 byte";
  for (double gbps : {500.0, 1000.0, 1500.0, 2000.0, 3000.0}) {
    for (double ns : {400.0, 600.0, 800.0, 1000.0}) {
      EXPECT_TRUE(close(needed_bytes_per_sm(gbps, ns, 132), bytes_in_flight_per_sm(gbps, ns, 132)))
          << gbps << " GB/s at " << ns << " ns over 132 SMs: " << needed_bytes_per_sm(gbps, ns, 132)
          << " bytes, but the table the lesson prints says otherwise";
    }
  }
}

TEST(HostExerciseBytesInFlight, OfferedBytesPerSm) {
  EXPECT_TRUE(close(offered_bytes_per_sm(16, kH100), 32768))
      << "16-byte loads, 8 blocks of 256 threads: offered_bytes_per_sm gives " << offered_bytes_per_sm(16, kH100)
      << "; the model's batch table has this row (sync_copy_uint4, column 'per SM')";
  EXPECT_TRUE(close(offered_bytes_per_sm(4, kH100), 8192))
      << "4-byte loads, 8 blocks of 256 threads: " << offered_bytes_per_sm(4, kH100) << " bytes";
  EXPECT_TRUE(close(offered_bytes_per_sm(4, {132, 1024, 2}), 8192))
      << "4-byte loads, 2 blocks of 1024 threads: the same 2048 threads as 8 blocks of 256";
}

TEST(HostExerciseBytesInFlight, NarrowestLoadOnTheH100) {
  EXPECT_EQ(narrowest_load(1500, 600, kH100), 4) << "1500 GB/s at 600 ns: about 6.7 KiB needed per SM";
  EXPECT_EQ(narrowest_load(2000, 600, kH100), 8) << "2000 GB/s at 600 ns: about 8.9 KiB needed per SM";
  EXPECT_EQ(narrowest_load(3000, 1000, kH100), 16) << "3000 GB/s at 1000 ns: about 22 KiB needed per SM";
  EXPECT_EQ(narrowest_load(3000, 2000, kH100), 0)
      << "3000 GB/s at 2000 ns: about 44 KiB needed per SM, more than any width offers one load at a time";
}

TEST(HostExerciseBytesInFlight, NarrowestLoadWhenTheOfferMeetsTheNeedExactly) {
  const Residency one_block{1, 256, 1};
  EXPECT_EQ(narrowest_load(512, 2, one_block), 4) << "1024 bytes needed, 256 threads x 4 bytes offered";
  EXPECT_EQ(narrowest_load(1024, 2, one_block), 8) << "2048 bytes needed, 256 threads x 8 bytes offered";
  EXPECT_EQ(narrowest_load(2048, 2, one_block), 16) << "4096 bytes needed, 256 threads x 16 bytes offered";
}

TEST(HostExerciseBytesInFlight, FewestBlocksPerSm) {
  for (int resident : {8, 1}) {  // the answer does not depend on the blocks the residency had before
    const Residency h100{132, 256, resident};
    EXPECT_EQ(fewest_blocks_per_sm(1500, 600, 16, h100, 8), 2) << "1500 GB/s at 600 ns, 16-byte loads";
    EXPECT_EQ(fewest_blocks_per_sm(1500, 600, 4, h100, 8), 7) << "1500 GB/s at 600 ns, 4-byte loads";
    EXPECT_EQ(fewest_blocks_per_sm(3000, 600, 16, h100, 8), 4) << "3000 GB/s at 600 ns, 16-byte loads";
    EXPECT_EQ(fewest_blocks_per_sm(3000, 600, 4, h100, 8), 0)
        << "3000 GB/s at 600 ns, 4-byte loads: 8 blocks of 256 threads offer 8 KiB, about 13 KiB are needed";
  }
  EXPECT_EQ(fewest_blocks_per_sm(2048, 2, 16, {1, 256, 8}, 8), 1) << "4096 bytes needed, one block offers 4096";
  EXPECT_EQ(fewest_blocks_per_sm(2048, 4, 16, {1, 256, 8}, 8), 2) << "8192 bytes needed, one block offers 4096";
}

}  // namespace
