// Grades exercise 10.2: one block's waits replayed on model barriers (one filled and one ready per
// buffer) for rings of one to five buffers, the guide's order on one buffer, the chapter's
// ring_waits() tables, and iterations far beyond any walk.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "stas_cluster_model.hpp"  // ring_waits<kStages>(), the table the programs print

namespace {

std::string buffers(int stages) { return std::to_string(stages) + (stages == 1 ? " buffer" : " buffers"); }

void replay(int stages, int iterations) {
  std::vector<course::MbarrierModel> filled(stages), ready(stages);  // one arrival per phase each
  for (int it = 0; it < iterations; ++it) {
    const RingStep step = ring_step(stages, it);
    ASSERT_TRUE(step.stage >= 0 && step.stage < stages)
        << buffers(stages) << ", iteration " << it << ": buffer " << step.stage << " does not exist";
    ASSERT_EQ(step.stage, it % stages) << buffers(stages) << ", iteration " << it << ": buffer " << step.stage
                                       << "; the buffers are used in turn, 0, 1, ..., and again from 0";
    course::MbarrierModel& rdy = ready[step.stage];
    if (it >= stages) {
      ASSERT_FALSE(rdy.phase_done(step.ready_parity))
          << buffers(stages) << ", iteration " << it << ": the ready wait on parity " << step.ready_parity
          << " would return before the right neighbour has read message " << it - stages
          << ", and the send would overwrite it";
      rdy.arrive();  // the right neighbour has read message it - stages
    }
    ASSERT_TRUE(rdy.phase_done(step.ready_parity))
        << buffers(stages) << ", iteration " << it << ": the ready wait on parity " << step.ready_parity
        << " would never return"
        << (it < stages ? " (no message went into this buffer before, and nothing arrives on ready until one has)"
                        : " (it names a phase that has not begun)");
    course::MbarrierModel& fil = filled[step.stage];
    ASSERT_FALSE(fil.phase_done(step.filled_parity))
        << buffers(stages) << ", iteration " << it << ": the filled wait on parity " << step.filled_parity
        << " would return before message " << it << " has landed";
    fil.arrive();  // message it has landed (one arrival stands for the announcement and the bytes)
    ASSERT_TRUE(fil.phase_done(step.filled_parity))
        << buffers(stages) << ", iteration " << it << ": the filled wait on parity " << step.filled_parity
        << " would never return (it names a phase that has not begun)";
  }
}

TEST(HostExerciseRingWalk, WaitsForTheRightPhasesWithOneToFiveBuffers) {
  for (int stages = 1; stages <= 5; ++stages) {
    replay(stages, 6 * stages + 1);
    if (HasFatalFailure()) return;
  }
}

TEST(HostExerciseRingWalk, AgreesWithTheChaptersTables) {
  auto compare = [](int stages, const std::vector<RingWait>& table) {
    for (std::size_t it = 0; it < table.size(); ++it) {
      const RingStep step = ring_step(stages, it);
      EXPECT_TRUE(step.stage == table[it].stage && step.filled_parity == table[it].filled_parity &&
                  step.ready_parity == table[it].ready_parity)
          << buffers(stages) << ", iteration " << it << ": " << step.stage << '/' << step.filled_parity << '/'
          << step.ready_parity << " (stage / filled parity / ready parity), the model's ring_waits() has "
          << table[it].stage << '/' << table[it].filled_parity << '/' << table[it].ready_parity;
    }
  };
  compare(1, ring_waits<1>(12));
  compare(2, ring_waits<2>(12));
  compare(3, ring_waits<3>(12));
  compare(4, ring_waits<4>(12));
}

TEST(HostExerciseRingWalk, FarIterations) {
  for (int stages = 1; stages <= 5; ++stages) {
    for (std::uint64_t it : {std::uint64_t{1'000'003}, (std::uint64_t{1} << 33) + 5}) {
      const RingStep step = ring_step(stages, it);
      const auto use = static_cast<std::uint32_t>((it / stages) & 1u);  // the parity of this buffer's use
      EXPECT_TRUE(step.stage == static_cast<int>(it % stages) && step.filled_parity == use &&
                  step.ready_parity == (use ^ 1u))
          << buffers(stages) << ", iteration " << it << ": not where the walk from iteration 0 would be";
    }
  }
}

TEST(HostExerciseRingWalk, TheGuidesOrderWaitsForTheMessageJustSent) {
  course::MbarrierModel ready;  // the guide's one buffer
  for (std::uint64_t it = 0; it < 6; ++it) {
    const std::uint32_t parity = guide_ready_parity(it);
    ASSERT_FALSE(ready.phase_done(parity)) << "the guide's order, iteration " << it << ": the ready wait on parity "
                                           << parity << " would return before the right neighbour has read message "
                                           << it << ", and the next send would overwrite it";
    ready.arrive();  // the right neighbour has read message it
    ASSERT_TRUE(ready.phase_done(parity)) << "the guide's order, iteration " << it << ": the ready wait on parity "
                                          << parity << " would never return";
  }
  EXPECT_EQ(guide_ready_parity((std::uint64_t{1} << 33) + 5), 1u) << "iteration 2^33 + 5";
}

}  // namespace
