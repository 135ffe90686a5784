#include "course/mbarrier_model.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(HostMbarrierModel, AFreshBarrierCountsThePhaseBeforeTheFirstAsComplete) {
  course::MbarrierModel bar;
  bar.init(2);
  EXPECT_TRUE(bar.phase_done(1));   // the producer's first "empty" wait passes at once
  EXPECT_FALSE(bar.phase_done(0));  // phase 0 has not completed
}

TEST(HostMbarrierModel, APhaseNeedsEveryArrivalAndEveryByte) {
  course::MbarrierModel bar;
  bar.init(2);
  bar.arrive();
  bar.expect_tx(32);
  bar.arrive();
  EXPECT_FALSE(bar.phase_done(0));  // both arrivals, 32 bytes still outstanding
  bar.complete_tx(32);
  EXPECT_TRUE(bar.phase_done(0));
  EXPECT_FALSE(bar.phase_done(1));  // re-armed for phase 1
  EXPECT_EQ(bar.pending, 2);
}

TEST(HostMbarrierModel, BytesMayLandBeforeTheyAreExpected) {
  course::MbarrierModel bar;  // one arrival per phase
  bar.complete_tx(16);
  EXPECT_EQ(bar.tx, -16);
  bar.expect_tx(16);
  EXPECT_FALSE(bar.phase_done(0));  // the arrival is still missing
  bar.arrive();
  EXPECT_TRUE(bar.phase_done(0));
}

TEST(HostMbarrierModel, ParityAlternatesWithEveryCompletedPhase) {
  course::MbarrierModel bar;
  for (unsigned phase = 0; phase < 4; ++phase) {
    EXPECT_FALSE(bar.phase_done(phase & 1u)) << phase;
    bar.arrive();
    EXPECT_TRUE(bar.phase_done(phase & 1u)) << phase;
  }
  EXPECT_EQ(bar.completed, 4u);
}

// A load of 3 rows of 256 bytes: only 768 announced bytes complete the phase with the last row.
TEST(HostMbarrierModel, APlayedLoadCompletesWithItsLastRowOnlyForItsOwnCount) {
  EXPECT_EQ(course::play_load(768, 3, 256), course::LoadVerdict::exact);
  EXPECT_EQ(course::play_load(512, 3, 256), course::LoadVerdict::completes_early);
  EXPECT_EQ(course::play_load(0, 3, 256), course::LoadVerdict::completes_early);
  EXPECT_EQ(course::play_load(1024, 3, 256), course::LoadVerdict::never_completes);
  EXPECT_EQ(course::play_load(700, 3, 256), course::LoadVerdict::never_completes) << "the count passes zero between rows";
  EXPECT_NE(std::string(course::load_verdict_text(course::LoadVerdict::completes_early)).find("still landing"), std::string::npos);
}

}  // namespace
