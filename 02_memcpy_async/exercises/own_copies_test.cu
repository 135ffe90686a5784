// Grades exercise 02.3: the kernel runs in a child process on one tile, on six tiles through one
// block, and on 1000 tiles over the whole grid, with a position-dependent input. Every output is
// compared with the host's sum; a sum that contains the window's marker says how many slots had
// not landed when the thread read them.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>

#include "course/exercise.hpp"
#include "halo_window_check.hpp"

namespace {

std::string attempt(std::size_t num_tiles, unsigned max_blocks) {
  return halo_check::attempt_halo_window(exercise::launch_own_copies, num_tiles, max_blocks);
}

class Sm80_ExerciseOwnCopies : public course::GpuTest {
 protected:
  Sm80_ExerciseOwnCopies() : GpuTest({8, 0, false, "cp.async (LDGSTS) and its commit and wait groups"}) {}
};

TEST_F(Sm80_ExerciseOwnCopies, OneTile) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseOwnCopies, SixTilesThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(6, 1); });
}
TEST_F(Sm80_ExerciseOwnCopies, ManyTilesOverTheGrid) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1000, 0); });
}

}  // namespace
