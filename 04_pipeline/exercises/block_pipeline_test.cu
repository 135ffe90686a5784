// Grades exercise 04.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern: batch counts below, at and
// above the stage count through one block, many rounds through one block, and many batches over
// the whole GPU. Its output is compared with the host's, element by element. A kernel that is
// still running long after any bounded wait would have fired is stuck in a wait that is not
// bounded; the child then says so and ends.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>

#include "course/exercise.hpp"
#include "course/wait.cuh"

namespace {

std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  course::start_unbounded_wait_watchdog(COURSE_WAIT_LIMIT_NS,
                                        ", producer_acquire(), which waits until every thread of the block has "
                                        "released the stage it wants to refill");
  return course::attempt_smoothed_batches(
      std::to_string(num_batches) + " batches", num_batches, exercise::kBatchElems, exercise::smooth,
      [&](const std::uint32_t* gmem_in, std::uint32_t* gmem_out) {
        exercise::launch_block_pipeline(gmem_in, gmem_out, num_batches, max_blocks);
      },
      [](std::uint32_t) -> std::string { return ": computed from data that had not landed"; });
}

class Sm80_ExerciseBlockPipeline : public course::GpuTest {
 protected:
  Sm80_ExerciseBlockPipeline() : GpuTest({8, 0, false, "cuda::pipeline at block scope (mbarrier, LDGSTS)"}) {}
};

TEST_F(Sm80_ExerciseBlockPipeline, OneBatch) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseBlockPipeline, AsManyBatchesAsStages) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStages, 1); });
}
TEST_F(Sm80_ExerciseBlockPipeline, OneRefill) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStages + 1, 1); });
}
TEST_F(Sm80_ExerciseBlockPipeline, ManyRoundsThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(101, 1); });
}
TEST_F(Sm80_ExerciseBlockPipeline, ManyBatchesOverTheWholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(10007, 0); });
}

}  // namespace
