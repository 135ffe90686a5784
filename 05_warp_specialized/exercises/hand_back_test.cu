// Grades exercise 05.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern: one batch, one batch per buffer,
// many rounds through one block, and many batches over the whole GPU. Its output is compared with
// the host's, element by element; a wait that can never return is named by the bounded wait.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>

#include "course/exercise.hpp"

namespace {

std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  return course::attempt_smoothed_batches(
      std::to_string(num_batches) + " batches, " + std::to_string(max_blocks) + " block(s) at most", num_batches,
      kBatchElems, exercise::smooth,
      [&](const std::uint32_t* gmem_in, std::uint32_t* gmem_out) {
        exercise::launch_hand_back(gmem_in, gmem_out, num_batches, max_blocks);
      },
      [](std::uint32_t) -> std::string { return ": computed from a buffer that did not hold this batch"; });
}

class Sm80_ExerciseHandBack : public course::GpuTest {
 protected:
  Sm80_ExerciseHandBack() : GpuTest({8, 0, false, "mbarrier and cp.async (LDGSTS)"}) {}
};

TEST_F(Sm80_ExerciseHandBack, OneBatch) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseHandBack, OneBatchPerBuffer) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStages, 1); });
}
TEST_F(Sm80_ExerciseHandBack, ManyRoundsThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(101, 1); });
}
TEST_F(Sm80_ExerciseHandBack, ManyBatchesOverTheWholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(10007, 1056); });
}

}  // namespace
