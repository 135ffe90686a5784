// Grades exercise 02.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on one tile, on six tiles through one block, and on 1000 tiles
// over the whole grid, with a position-dependent input. Every output is compared with the host's
// sum; a sum that contains the window's marker says how many slots had not landed when the thread
// read them. A kernel still running long after any bounded wait would have fired is stuck in a
// wait without a bound; the child then says so and ends.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>

#include "course/exercise.hpp"
#include "course/wait.cuh"
#include "halo_window_check.hpp"

namespace {

std::string attempt(std::size_t num_tiles, unsigned max_blocks) {
  course::start_unbounded_wait_watchdog(
      COURSE_WAIT_LIMIT_NS, " (wait through course::bounded_wait, which names what it waited for)");
  return halo_check::attempt_halo_window(exercise::launch_halo_arrivals, num_tiles, max_blocks);
}

class Sm80_ExerciseHaloArrivals : public course::GpuTest {
 protected:
  Sm80_ExerciseHaloArrivals() : GpuTest({8, 0, false, "cp.async (LDGSTS) completing on an mbarrier"}) {}
};

TEST_F(Sm80_ExerciseHaloArrivals, OneTile) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseHaloArrivals, SixTilesThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(6, 1); });
}
TEST_F(Sm80_ExerciseHaloArrivals, ManyTilesOverTheGrid) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1000, 0); });
}

}  // namespace
