// Grades assignment 2 (chapter 05): each run is a child process (a bounded wait that stops the
// kernel must not take the test process with it) on a position-dependent pattern, with the
// output poisoned and a poisoned guard band after it. Sizes: one batch (fewer than the stages),
// one batch per stage, one refill, a ragged last round through one block and through two, and
// many batches over the whole GPU. Every output word is compared with the host's smoothing and
// the guard band must keep its poison. A kernel still running long after any bounded wait would
// have fired is stuck in a wait that is not bounded; the child then says so and ends.
// Then the speed: checked once, then timed against cudaMemcpy device-to-device over 512 MiB.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"

namespace {

using exercise::kBatchElems;

// The floor on the GPU that runs the check: the kernel's median time against cudaMemcpy's.
constexpr double kSpeedFloor = 0.90;
constexpr std::size_t kSpeedBytes = std::size_t{512} << 20;  // at least twice any Hopper's L2
constexpr std::size_t kGuardElems = 64;  // after the output: no store may reach them

// One run of the kernel on num_batches batches through at most max_blocks blocks (0: the
// launcher's grid). "" when every output word is right and the guard band kept its poison.
std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  course::start_unbounded_wait_watchdog(
      COURSE_WAIT_LIMIT_NS,
      ", a wait on full_bar or empty_bar without course::bounded_wait_parity (the spec asks "
      "for both to be bounded, naming the barrier, the stage and the parity)");
  const std::string batches = num_batches == 1 ? " batch, " : " batches, ";
  std::string blocks = "the launcher's grid";
  if (max_blocks == 1) blocks = "one block";
  if (max_blocks > 1) blocks = "at most " + std::to_string(max_blocks) + " blocks";
  const std::string run = std::to_string(num_batches) + batches + blocks;
  return course::attempt_smoothed_batches(
      run, num_batches, kBatchElems, exercise::smooth,
      [&](const std::uint32_t* gmem_in, std::uint32_t* gmem_out) {
        exercise::launch_producer_consumer(gmem_in, gmem_out, num_batches, max_blocks);
      },
      [](std::uint32_t) -> std::string {
        return ": computed from words that are not this batch's input as it holds them (a stage "
               "read before its batch landed or after its refill, or the wrong neighbours)";
      },
      kGuardElems);
}

class Sm80_AssignmentProducerConsumer : public course::GpuTest {
 protected:
  Sm80_AssignmentProducerConsumer() : GpuTest({8, 0, false, "cp.async (LDGSTS) and mbarrier"}) {}
};

TEST_F(Sm80_AssignmentProducerConsumer, OneBatch) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 0); });
}
TEST_F(Sm80_AssignmentProducerConsumer, OneBatchPerStage) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStages, 1); });
}
TEST_F(Sm80_AssignmentProducerConsumer, OneRefill) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStages + 1, 1); });
}
TEST_F(Sm80_AssignmentProducerConsumer, ManyRoundsThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(101, 1); });
}
TEST_F(Sm80_AssignmentProducerConsumer, ManyRoundsThroughTwoBlocks) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(203, 2); });
}
TEST_F(Sm80_AssignmentProducerConsumer, ManyBatchesOverTheWholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(10007, 0); });
}

TEST_F(Sm80_AssignmentProducerConsumer, FastEnough) {
  COURSE_EXPECT_FAST_ENOUGH([] {
    const std::size_t num_batches = kSpeedBytes / (kBatchElems * sizeof(std::uint32_t));
    course::DeviceBuffer<std::uint32_t> gmem_in(num_batches * kBatchElems);
    course::DeviceBuffer<std::uint32_t> gmem_out(num_batches * kBatchElems);
    gmem_in.fill_bytes(0x5A);
    return course::attempt_speed(
        kSpeedBytes, kSpeedFloor,
        "what usually makes the difference is 16-byte copies and stores and enough bytes in "
        "flight per SM (chapter 01's Little's law): keep the launcher's grid and the stages "
        "full, and let no warp wait longer than the ring requires",
        [&] { return attempt(num_batches, 0); },
        [&] {
          exercise::launch_producer_consumer(gmem_in.data(), gmem_out.data(), num_batches, 0);
          COURSE_CHECK(cudaGetLastError());
        });
  });
}

}  // namespace
