// One rule for a barrier's phases: chapter 03 teaches what an mbarrier counts with its own model
// (03_barrier/barrier_model.hpp, BarrierModel, quoted on its page); the simulations and the
// exercises use the shared one (course/mbarrier_model.hpp, which Sm90_MbarrierOracle checks
// against the hardware). Both replay every sequence of the oracle test's sweep here, and must
// report the same parities after every operation.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../03_barrier/barrier_model.hpp"
#include "course/mbarrier_model.hpp"
#include "mbarrier_sequences.hpp"

namespace {

// 03's model under the shared model's names. An arrive of `count` is `count` arrivals there;
// the sweep never arrives beyond the pending ones, so only the last of them can complete a phase,
// as with the single counted arrive.
struct ChapterThreeBarrier {
  BarrierModel bar;
  void init(int count) { bar.init(count); }
  void arrive(int count) { bar.arrive(count); }
  void expect_tx(int bytes) { bar.expect_tx(bytes); }
  void complete_tx(int bytes) { bar.bytes_land(bytes); }
  void arrive_expect_tx(int bytes) {  // mbarrier.arrive.expect_tx: the expect-tx, then the arrival
    bar.expect_tx(bytes);
    bar.arrive(1);
  }
  bool phase_done(unsigned parity) const { return bar.parity_done(parity); }
};

bool has_standalone_expect_tx(const mbarrier_sequences::Sequence& seq) {
  for (const mbarrier_sequences::Step& step : seq.steps) {
    if (step.op == mbarrier_sequences::Op::expect_tx) return true;
  }
  return false;
}

// The sweep's sequences (all, or those without a standalone expect-tx) replayed on both models:
// how many differ, and the first difference.
std::string sweep_disagreement(bool with_standalone_expect_tx, int& compared) {
  using namespace mbarrier_sequences;
  std::string first;
  int differing = 0;
  compared = 0;
  for (std::uint32_t s = 0; s < kSweepSequences; ++s) {
    const Sequence seq = make_sequence(kSweepFirstSeed + s);
    if (!with_standalone_expect_tx && has_standalone_expect_tx(seq)) continue;
    ++compared;
    const std::vector<std::uint8_t> shared_model = predict<course::MbarrierModel>(seq);
    const std::string verdict = first_disagreement<ChapterThreeBarrier>(seq, shared_model.data());
    if (!verdict.empty() && differing++ == 0) first = verdict;
  }
  if (differing == 0) return "";
  return std::to_string(differing) + " of " + std::to_string(compared) + " sequences differ (\"hardware\" is the "
         "shared model, \"model\" chapter 03's); first: " + first;
}

TEST(HostBarrierModelAgreement, ArrivalsCompleteTxAndArriveExpectTxAgreeOnEverySweepSequence) {
  int compared = 0;
  EXPECT_EQ(sweep_disagreement(false, compared), "");
  EXPECT_GT(compared, 500) << "the sweep has too few sequences without a standalone expect-tx";
}

TEST(HostBarrierModelAgreement, EverySweepSequenceAgreesStandaloneExpectTxIncluded) {
  int compared = 0;
  EXPECT_EQ(sweep_disagreement(true, compared), "");
}

}  // namespace
