// Grades exercise 03.3: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on 1, 7 and 600 batches of a position-dependent pattern, and its
// output is compared with the host's, element by element.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>

#include "course/exercise.hpp"

namespace {

using exercise::kNotLanded;

std::string attempt(std::size_t num_batches) {
  return course::attempt_smoothed_batches(
      std::to_string(num_batches) + " batches", num_batches, exercise::kBatchElems, exercise::smooth,
      [&](const std::uint32_t* gmem_in, std::uint32_t* gmem_out) {
        exercise::launch_bound_copy(gmem_in, gmem_out, num_batches);
      },
      [](std::uint32_t word) -> std::string {
        return word == exercise::smooth(kNotLanded, kNotLanded, kNotLanded)
                   ? ": the block computed before the batch had landed in shared memory"
                   : "";
      });
}

class Sm80_ExerciseBoundCopy : public course::GpuTest {
 protected:
  Sm80_ExerciseBoundCopy() : GpuTest({8, 0, false, "mbarrier and cp.async (LDGSTS)"}) {}
};

TEST_F(Sm80_ExerciseBoundCopy, OneBatch) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1); }); }
TEST_F(Sm80_ExerciseBoundCopy, SevenBatches) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(7); }); }
TEST_F(Sm80_ExerciseBoundCopy, ManyBatchesPerBlock) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(600); }); }

}  // namespace
