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
  if (!close(needed_bytes_per_sm(1500, 600, 132), 1500.0 * 600 / 132)) ADD_FAILURE()
      << "1500 GB/s at 600 ns over 132 SMs: needed_bytes_per_sm gives " << needed_bytes_per_sm(1500, 600, 132)
      << " bytes; the lesson's page says about 6.7 KiB per SM";
  if (!close(needed_bytes_per_sm(2048, 2, 1), 4096)) ADD_FAILURE() << "2048 GB/s at 2 ns on one SM: 1 GB/s x 1 ns is 1 byte";
  for (double gbps : {500.0, 1000.0, 1500.0, 2000.0, 3000.0}) {
    for (double ns : {400.0, 600.0, 800.0, 1000.0}) {
      if (!close(needed_bytes_per_sm(gbps, ns, 132), bytes_in_flight_per_sm(gbps, ns, 132))) ADD_FAILURE()
          << gbps << " GB/s at " << ns << " ns over 132 SMs: " << needed_bytes_per_sm(gbps, ns, 132)
          << " bytes, but the table the lesson prints says otherwise";
    }
  }
}

TEST(HostExerciseBytesInFlight, OfferedBytesPerSm) {
  if (!close(offered_bytes_per_sm(16, kH100), 32768)) ADD_FAILURE()
      << "16-byte loads, 8 blocks of 256 threads: offered_bytes_per_sm gives " << offered_bytes_per_sm(16, kH100)
      << "; the model's batch table has this row (sync_copy_uint4, column 'per SM')";
  if (!close(offered_bytes_per_sm(4, kH100), 8192)) ADD_FAILURE()
      << "4-byte loads, 8 blocks of 256 threads: " << offered_bytes_per_sm(4, kH100) << " bytes";
  if (!close(offered_bytes_per_sm(4, {132, 1024, 2}), 8192)) ADD_FAILURE()
      << "4-byte loads, 2 blocks of 1024 threads: the same 2048 threads as 8 blocks of 256";
}

// Fails with what the student's narrowest_load() says and why the answer is otherwise.
void expect_narrowest(double gbps, double ns, const Residency& residency, int want, const char* why) {
  const int got = narrowest_load(gbps, ns, residency);
  if (got != want) ADD_FAILURE() << gbps << " GB/s at " << ns << " ns: narrowest_load() says " << got << "; " << why;
}

// Fails with what the student's fewest_blocks_per_sm() says and why the answer is otherwise.
void expect_fewest(double gbps, double ns, int load_bytes, const Residency& residency, int want, const char* why) {
  const int got = fewest_blocks_per_sm(gbps, ns, load_bytes, residency, 8);
  if (got != want) {
    ADD_FAILURE() << gbps << " GB/s at " << ns << " ns, " << load_bytes << "-byte loads: fewest_blocks_per_sm() says "
                  << got << "; " << why;
  }
}

TEST(HostExerciseBytesInFlight, NarrowestLoadOnTheH100) {
  expect_narrowest(1500, 600, kH100, 4, "about 6.7 KiB are needed per SM");
  expect_narrowest(2000, 600, kH100, 8, "about 8.9 KiB are needed per SM");
  expect_narrowest(3000, 1000, kH100, 16, "about 22 KiB are needed per SM");
  expect_narrowest(3000, 2000, kH100, 0,
                   "about 44 KiB are needed per SM, more than any width offers one load at a time");
}

TEST(HostExerciseBytesInFlight, NarrowestLoadWhenTheOfferMeetsTheNeedExactly) {
  const Residency one_block{1, 256, 1};
  expect_narrowest(512, 2, one_block, 4, "1024 bytes are needed, 256 threads x 4 bytes offered");
  expect_narrowest(1024, 2, one_block, 8, "2048 bytes are needed, 256 threads x 8 bytes offered");
  expect_narrowest(2048, 2, one_block, 16, "4096 bytes are needed, 256 threads x 16 bytes offered");
}

TEST(HostExerciseBytesInFlight, FewestBlocksPerSm) {
  for (int resident : {8, 1}) {  // the answer does not depend on the blocks the residency had before
    const Residency h100{132, 256, resident};
    expect_fewest(1500, 600, 16, h100, 2, "each block of 256 threads offers 256 loads at a time");
    expect_fewest(1500, 600, 4, h100, 7, "each block of 256 threads offers 256 loads at a time");
    expect_fewest(3000, 600, 16, h100, 4, "each block of 256 threads offers 256 loads at a time");
    expect_fewest(3000, 600, 4, h100, 0, "8 blocks of 256 threads offer 8 KiB, about 13 KiB are needed");
  }
  expect_fewest(2048, 2, 16, {1, 256, 8}, 1, "4096 bytes are needed, one block offers 4096");
  expect_fewest(2048, 4, 16, {1, 256, 8}, 2, "8192 bytes are needed, one block offers 4096");
}

}  // namespace
