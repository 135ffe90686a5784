#include "course/stage_cursor.hpp"

#include <gtest/gtest.h>

namespace {

// The cursor after n steps must be at stage n mod S, in round n / S, whose parity it carries.
template <int kStages>
void expect_walks_the_ring() {
  course::StageCursor<kStages> cursor;
  for (int step = 0; step < 10 * kStages + 3; ++step, cursor.advance()) {
    ASSERT_EQ(cursor.stage, step % kStages) << kStages << " stages, step " << step;
    ASSERT_EQ(cursor.phase, static_cast<std::uint32_t>((step / kStages) % 2)) << kStages << " stages, step " << step;
  }
}

TEST(HostStageCursor, WalksTheRingForOneToSixStages) {
  expect_walks_the_ring<1>();
  expect_walks_the_ring<2>();
  expect_walks_the_ring<3>();
  expect_walks_the_ring<4>();
  expect_walks_the_ring<5>();
  expect_walks_the_ring<6>();
}

TEST(HostStageCursor, ThreeStagesIsNotTheTwoStageFlip) {
  // `stage ^ 1` is a correct advance only for two stages: with three, the ring must visit stage 2.
  course::StageCursor<3> cursor;
  cursor.advance();
  cursor.advance();
  EXPECT_EQ(cursor.stage, 2);
  EXPECT_EQ(cursor.phase, 0u);
  cursor.advance();
  EXPECT_EQ(cursor.stage, 0);
  EXPECT_EQ(cursor.phase, 1u);
}

}  // namespace
