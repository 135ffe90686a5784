#include "course/compare.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

TEST(HostCompare, EqualVectorsMatch) {
  std::vector<std::uint32_t> a(100);
  course::fill_pattern(a);
  const course::Comparison c = course::compare_exact(a, a);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.summary(), "all 100 elements match");
}

TEST(HostCompare, ReportsCoordinatesAndUntouchedElements) {
  std::vector<std::uint32_t> expected(12), got;
  course::fill_pattern(expected);
  got = expected;
  got[5] = course::poison_value<std::uint32_t>();  // never written
  got[7] ^= 1u;                                    // written wrong
  const course::Comparison c = course::compare_exact(got, expected, /*row_elems=*/4);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_EQ(c.untouched, 1u);
  EXPECT_NE(c.first.find("(row 1, col 1)"), std::string::npos) << c.first;
  EXPECT_NE(c.first.find("(poison)"), std::string::npos) << c.first;
  EXPECT_NE(c.first.find("(row 1, col 3)"), std::string::npos) << c.first;
  EXPECT_EQ(c.summary(), "2 of 12 elements differ (1 never written)");
}

TEST(HostCompare, FloatsAreComparedByBits) {
  const std::vector<float> zero{0.0f}, negative_zero{-0.0f};
  EXPECT_FALSE(course::compare_exact(zero, negative_zero).ok());
}

TEST(HostCompare, ListsAtMostFiveMismatches) {
  std::vector<std::uint32_t> expected(50, 1), got(50, 2);
  const course::Comparison c = course::compare_exact(got, expected);
  EXPECT_EQ(c.mismatches, 50u);
  EXPECT_EQ(std::count(c.first.begin(), c.first.end(), '\n'), 5);
}

TEST(HostCompare, GuardBandDamageCounted) {
  std::vector<std::uint32_t> guard(8, course::poison_value<std::uint32_t>());
  EXPECT_EQ(course::guard_band_damage(guard.data(), guard.size()), 0u);
  guard[3] = 0;
  EXPECT_EQ(course::guard_band_damage(guard.data(), guard.size()), 1u);
}

TEST(HostCompare, DifferentLengthsAreAMismatch) {
  EXPECT_FALSE(course::compare_exact(std::vector<int>{1, 2}, std::vector<int>{1}).ok());
}

}  // namespace
