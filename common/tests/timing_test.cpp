#include "course/bandwidth.hpp"
#include "course/timing.hpp"

#include <gtest/gtest.h>

namespace {

TEST(HostTiming, MedianOfOddAndEvenCounts) {
  const course::TimingStats odd = course::summarize({5.0, 1.0, 3.0});
  EXPECT_DOUBLE_EQ(odd.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(odd.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(odd.max_ms, 5.0);
  EXPECT_EQ(odd.samples, 3);
  EXPECT_DOUBLE_EQ(course::summarize({4.0, 1.0, 2.0, 3.0}).median_ms, 2.5);
}

TEST(HostTiming, MedianIgnoresOneOutlier) { EXPECT_DOUBLE_EQ(course::summarize({1, 1, 1, 1, 90}).median_ms, 1.0); }

TEST(HostTiming, NoSamplesIsAnError) { EXPECT_THROW(course::summarize({}), std::invalid_argument); }

TEST(HostBandwidth, CountsBytesPerSecondInGigabytes) {
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(2e9, 1000.0), 2.0);
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(3e9, 1.0), 3000.0);
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(1e9, 0.0), 0.0);
}

TEST(HostBandwidth, WorkingSetMustBeTwiceTheL2) {
  const std::size_t l2 = 50u << 20;
  EXPECT_TRUE(course::working_set_too_small(99u << 20, l2));
  EXPECT_FALSE(course::working_set_too_small(100u << 20, l2));
}

}  // namespace
