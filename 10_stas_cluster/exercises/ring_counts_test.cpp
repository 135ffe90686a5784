// Grades exercise 10.1: the neighbours of rings of 1 to 16 blocks; filled and ready replayed phase
// by phase on model barriers with your counts, for several message shapes, block sizes and kinds
// of release; then the lesson's ring with your numbers through the chapter's protocol simulation.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "course/mbarrier_model.hpp"

namespace {

std::string describe(const MessageShape& s) {
  std::ostringstream text;
  text << s.block_threads << " threads x " << s.stores_per_thread << " st.async of " << s.store_bytes << " bytes";
  return text.str();
}

const char* name_of(Release release) {
  return release == Release::per_block ? "release per block" : release == Release::per_warp ? "release per warp"
                                                                                               : "release per thread";
}

TEST(HostExerciseRingCounts, EveryBlockSendsToTheNextAndHearsFromThePrevious) {
  for (unsigned size = 1; size <= 16; ++size) {
    for (unsigned rank = 0; rank < size; ++rank) {
      const unsigned to = sends_to(rank, size);
      ASSERT_LT(to, size) << "ring of " << size << ": block " << rank << " would send to block " << to
                          << ", which is not in the cluster";
      ASSERT_EQ(to, ring_right(rank, size))
          << "ring of " << size << ": block " << rank << " would send to block " << to
          << "; in the lesson's ring each block sends to the next rank, and the last to block 0";
      ASSERT_EQ(receives_from(to, size), rank)
          << "ring of " << size << ": block " << to << " would not read the messages block " << rank
          << " writes into its shared memory";
    }
  }
}

// One phase of filled per message, twice: announce first, then the stores land; and the other way.
void replay_filled(const MessageShape& shape) {
  const int count = filled_count(shape);
  ASSERT_GT(count, 0) << describe(shape) << ": mbarrier.init needs a positive count (got " << count << ")";
  const auto bytes = static_cast<int>(expect_tx_bytes(shape));
  const int stores = shape.block_threads * shape.stores_per_thread;
  for (bool announce_first : {true, false}) {
    course::MbarrierModel filled;
    filled.init(count);
    const std::string order = announce_first ? " (announced before the bytes landed)" : " (the bytes landed first)";
    for (unsigned phase = 0; phase < 2; ++phase) {
      auto announce = [&] {  // arrive.expect_tx: the bytes, then the arrival, in one step
        filled.expect_tx(bytes);
        filled.arrive();
      };
      if (announce_first) announce();
      for (int s = 0; s < stores; ++s) {
        ASSERT_EQ(filled.completed, phase)
            << describe(shape) << order << ", init(" << count << "), arrive.expect_tx(" << bytes << "): phase "
            << phase << " completed after " << s << " of the " << stores
            << " st.async had landed: the receiver would read a message still on its way";
        filled.complete_tx(shape.store_bytes);
      }
      if (!announce_first) {
        ASSERT_EQ(filled.completed, phase) << describe(shape) << order << ": phase " << phase
                                           << " completed before the receiver had announced anything";
        announce();
      }
      ASSERT_EQ(filled.completed, phase + 1)
          << describe(shape) << order << ", init(" << count << "), arrive.expect_tx(" << bytes << "): phase "
          << phase << " never completed once the whole message had landed: it waits for arrivals or bytes that "
          << "never come, and the receiver hangs on 'filled'";
    }
  }
}

TEST(HostExerciseRingCounts, FilledCompletesWhenTheWholeMessageHasLanded) {
  replay_filled({kThreads, kVecsPerThread, 16});  // the lesson's message: 8 KiB
  replay_filled({128, 4, 16});
  replay_filled({256, 1, 8});
  replay_filled({64, 3, 4});
  replay_filled({1024, 1, 16});
  replay_filled({96, 5, 4});
}

// One phase of ready per message read, twice, with the arrivals the release really makes.
void replay_ready(Release release, int block_threads) {
  const int count = ready_count(release, block_threads);
  const std::string what = std::string(name_of(release)) + ", " + std::to_string(block_threads) + " threads";
  ASSERT_GT(count, 0) << what << ": mbarrier.init needs a positive count (got " << count << ")";
  const int arrivals = release == Release::per_block  ? 1
                       : release == Release::per_warp ? (block_threads + 31) / 32
                                                      : block_threads;
  course::MbarrierModel ready;
  ready.init(count);
  for (unsigned phase = 0; phase < 2; ++phase) {
    for (int a = 0; a < arrivals; ++a) {
      ASSERT_EQ(ready.completed, phase) << what << ", init(" << count << "): phase " << phase << " completed after "
                                        << a << " of the right neighbour's " << arrivals
                                        << " arrivals: the sender would overwrite a message still being read";
      ready.arrive();
    }
    ASSERT_EQ(ready.completed, phase + 1)
        << what << ", init(" << count << "): phase " << phase << " never completed after the right neighbour's "
        << arrivals << " arrival" << (arrivals == 1 ? "" : "s") << ": the sender hangs on 'ready'";
  }
}

TEST(HostExerciseRingCounts, ReadyCompletesWhenTheNeighbourHasReadTheMessage) {
  for (Release release : {Release::per_block, Release::per_warp, Release::per_thread}) {
    for (int threads : {kThreads, 128, 96, 1024, 32, 100}) {  // 100: a partial last warp
      replay_ready(release, threads);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(HostExerciseRingCounts, TheLessonsRingRunsWithYourNumbers) {
  const MessageShape lesson{kThreads, kVecsPerThread, 16};
  ASSERT_EQ(filled_count(lesson), 1) << "filled: see FilledCompletesWhenTheWholeMessageHasLanded";
  for (Release release : {Release::per_block, Release::per_warp}) {
    for (int stages : {1, 2}) {
      for (int ring_size : {2, 4, 8}) {
        Protocol p = protocol_for(release, stages);  // release_arrivals: what this kind of release makes
        p.expect_tx_bytes = static_cast<int>(expect_tx_bytes(lesson));
        p.ready_count = ready_count(release, kThreads);
        const std::string problem = first_problem(p, ring_size, 100, 5);
        EXPECT_EQ(problem, "") << name_of(release) << ", " << stages << " buffer" << (stages == 1 ? "" : "s")
                               << ", ring of " << ring_size << " blocks, arrive.expect_tx(" << p.expect_tx_bytes
                               << "), ready init(" << p.ready_count << "): the simulation found: " << problem;
        if (!problem.empty()) return;
      }
    }
  }
}

}  // namespace
