#include "course/mbarrier_model.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mbarrier_sequences.hpp"

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

TEST(HostMbarrierModel, AnExpectTxThatBringsTheCountBackToZeroCompletesThePhase) {
  course::MbarrierModel bar;
  bar.init(2);
  bar.arrive();
  bar.complete_tx(224);  // bytes land before anyone announced them
  bar.arrive();          // every arrival in, the count at -224: the phase stays open
  EXPECT_FALSE(bar.phase_done(0));
  bar.expect_tx(200);
  EXPECT_FALSE(bar.phase_done(0)) << "the count is -24";
  bar.expect_tx(24);
  EXPECT_TRUE(bar.phase_done(0)) << "no arrival pending and the count at zero";
  EXPECT_EQ(bar.pending, 2);
}

TEST(HostMbarrierModel, ArriveExpectTxIsTheExpectThenOneArrival) {
  course::MbarrierModel bar;
  bar.init(1);
  bar.complete_tx(64);
  bar.arrive_expect_tx(64);  // the count returns to zero with the only arrival
  EXPECT_TRUE(bar.phase_done(0));
  bar.arrive_expect_tx(32);
  EXPECT_FALSE(bar.phase_done(1)) << "phase 1 waits for its 32 bytes";
  bar.complete_tx(32);
  EXPECT_TRUE(bar.phase_done(1));
}

TEST(HostMbarrierModel, AnArriveWithACountTakesThatManyArrivalsAtOnce) {
  course::MbarrierModel bar;
  bar.init(512);
  bar.arrive(511);
  EXPECT_FALSE(bar.phase_done(0));
  bar.arrive(1);
  EXPECT_TRUE(bar.phase_done(0));
  EXPECT_EQ(bar.pending, 512);
}

// ---- The comparison the GPU oracle test makes, on a planted fault -------------------------------

// The model as it was: expect-tx never completes a phase.
struct ExpectTxNeverCompletes : course::MbarrierModel {
  void expect_tx(int bytes) { tx += bytes; }
  void arrive_expect_tx(int bytes) {
    expect_tx(bytes);
    arrive();
  }
};

// Recorded on an H200 (count 2): after the last expect-tx the hardware's phase 0 is complete.
mbarrier_sequences::Sequence recorded_sequence() {
  using mbarrier_sequences::Op;
  return {0, 2, {{Op::arrive, 1}, {Op::complete_tx, 224}, {Op::arrive, 1}, {Op::complete_tx, 176},
                 {Op::expect_tx, 0}, {Op::expect_tx, 0}, {Op::expect_tx, 336}, {Op::expect_tx, 64}}};
}
// The readings: parity(1) done and parity(0) open (phase 0 running) after init and after the first
// seven operations, then parity(0) done and parity(1) open (phase 1 running).
const std::vector<std::uint8_t> kRecordedReadings = {2, 2, 2, 2, 2, 2, 2, 2, 1};

TEST(HostMbarrierOracleComparison, TheModelAgreesWithTheRecordedHardware) {
  EXPECT_EQ(mbarrier_sequences::first_disagreement<course::MbarrierModel>(recorded_sequence(), kRecordedReadings.data()),
            "");
}

TEST(HostMbarrierOracleComparison, CatchesAModelWhoseExpectTxNeverCompletes) {
  const std::string verdict =
      mbarrier_sequences::first_disagreement<ExpectTxNeverCompletes>(recorded_sequence(), kRecordedReadings.data());
  EXPECT_EQ(verdict,
            "seed 0, init(2): operation 7 (expect-tx 64) differs; operations 0..7: arrive 1, complete-tx 224, arrive 1, "
            "complete-tx 176, expect-tx 0, expect-tx 0, expect-tx 336, expect-tx 64; hardware: parity(0) done, "
            "parity(1) open; model: parity(0) open, parity(1) done");
}

TEST(HostMbarrierOracleComparison, NamesAReadingAfterInitThatNoModelWouldGive) {
  const std::vector<std::uint8_t> both_done(kRecordedReadings.size(), 3);
  EXPECT_NE(mbarrier_sequences::first_disagreement<course::MbarrierModel>(recorded_sequence(), both_done.data())
                .find("right after init"),
            std::string::npos);
}

// The GPU test's sweep (its seeds, kSweepSequences of them) must contain what it is meant to
// catch: sequences on which the planted fault differs from the model, phases completed by each
// kind of operation, counts at 1 and at the largest, zero amounts, counts below zero and back.
TEST(HostMbarrierOracleComparison, TheSweepExercisesEveryWayToCompleteAPhase) {
  using namespace mbarrier_sequences;
  int planted_caught = 0, zero_amounts = 0, back_from_negative = 0, count_one = 0, count_max = 0;
  int completed_by[4] = {};
  for (std::uint32_t s = 0; s < kSweepSequences; ++s) {
    const Sequence seq = make_sequence(kSweepFirstSeed + s);
    ASSERT_GE(seq.count, 1);
    ASSERT_LE(seq.count, kMaxCount);
    ASSERT_LE(seq.steps.size(), static_cast<std::size_t>(kMaxSteps));
    count_one += seq.count == 1;
    count_max += seq.count == kMaxCount;
    const std::vector<std::uint8_t> readings = predict<course::MbarrierModel>(seq);
    planted_caught += !first_disagreement<ExpectTxNeverCompletes>(seq, readings.data()).empty();
    course::MbarrierModel bar;
    bar.init(seq.count);
    bool was_negative = false;
    for (const Step& step : seq.steps) {
      ASSERT_GE(step.amount, step.op == Op::arrive ? 1 : 0);
      ASSERT_LE(step.amount, step.op == Op::arrive ? bar.pending : kMaxBytes) << "an arrival beyond the pending ones";
      zero_amounts += step.op != Op::arrive && step.amount == 0;
      const unsigned before = bar.completed;
      apply(bar, step);
      if (bar.completed != before) ++completed_by[static_cast<int>(step.op)];
      if (bar.tx < 0) was_negative = true;
      if (was_negative && bar.tx == 0) {
        ++back_from_negative;
        was_negative = false;
      }
    }
  }
  EXPECT_GT(planted_caught, static_cast<int>(kSweepSequences / 10)) << "at least 10 % of the sweep";
  for (int op = 0; op < 4; ++op) EXPECT_GT(completed_by[op], 1000) << describe({static_cast<Op>(op), 0});
  EXPECT_GT(zero_amounts, 1000);
  EXPECT_GT(back_from_negative, 1000);
  EXPECT_GT(count_one, 100);
  EXPECT_GT(count_max, 100);
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
