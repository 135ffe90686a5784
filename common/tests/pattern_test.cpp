#include "course/pattern.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace {

TEST(HostPattern, DependsOnPositionAndSeed) {
  std::set<std::uint32_t> values;
  for (std::uint64_t i = 0; i < 4096; ++i) values.insert(course::pattern_u32(i));
  EXPECT_GT(values.size(), 4090u);  // a constant or short-period fill would collapse this
  EXPECT_NE(course::pattern_u32(7, 1), course::pattern_u32(7, 2));
}

TEST(HostPattern, NeverEqualsThePoison) {
  for (std::uint64_t i = 0; i < (1u << 20); ++i) ASSERT_NE(course::pattern_u32(i), 0xA5A5A5A5u) << i;
}

TEST(HostPattern, FloatsAreSmallExactMultiples) {
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const float f = course::pattern_f32(i);
    ASSERT_GE(f, -64.0f);
    ASSERT_LT(f, 64.0f);
    ASSERT_EQ(f * 256.0f, std::round(f * 256.0f));
  }
}

TEST(HostPattern, FillStartsAtTheGivenPosition) {
  std::vector<std::uint32_t> a(8), b(4);
  course::fill_pattern(a, 3);
  course::fill_pattern(b, 3, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[4 + i], b[i]);
}

TEST(HostPattern, PoisonIsTheByteRepeated) {
  EXPECT_EQ(course::poison_value<std::uint32_t>(), 0xA5A5A5A5u);
  EXPECT_EQ(course::poison_value<std::uint8_t>(), 0xA5u);
}

}  // namespace
