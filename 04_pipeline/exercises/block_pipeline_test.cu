// Grades exercise 04.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern: batch counts below, at and
// above the stage count through one block, many rounds through one block, and many batches over
// the whole GPU. Its output is compared with the host's, element by element. A kernel that is
// still running long after any bounded wait would have fired is stuck in a wait that is not
// bounded; the child then says so and ends.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"
#include "course/wait_limit.hpp"

namespace {

using exercise::kBatchElems;

// Ends the child when the kernel outlives every bounded wait by far: threads are stuck where no
// bound applies.
void start_watchdog() {
  const long long seconds = static_cast<long long>(course::wait_limit_ns(COURSE_WAIT_LIMIT_NS) / 1'000'000'000ull) + 20;
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::fprintf(stderr,
                 "the kernel was still running after %lld s and no bounded wait fired: its threads are stuck in a "
                 "wait that has no bound, producer_acquire(), which waits until every thread of the block has "
                 "released the stage it wants to refill\n",
                 seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  start_watchdog();
  std::vector<std::uint32_t> in(num_batches * kBatchElems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(in.size());
  course::DeviceBuffer<std::uint32_t> gmem_out(in.size());
  gmem_in.upload(in.data());
  COURSE_CHECK(cudaMemset(gmem_out.data(), 0xFF, gmem_out.bytes()));
  exercise::launch_block_pipeline(gmem_in.data(), gmem_out.data(), num_batches, max_blocks);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(in.size());
  gmem_out.download(out.data());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      const std::uint32_t want = exercise::smooth(in[base + ((i - 1) & (kBatchElems - 1))], in[base + i],
                                                  in[base + ((i + 1) & (kBatchElems - 1))]);
      if (out[base + i] != want) {
        std::ostringstream line;
        line << num_batches << " batches: element " << base + i << " (batch " << base / kBatchElems << ") is 0x"
             << std::hex << out[base + i] << ", expected 0x" << want
             << (out[base + i] == 0xFFFFFFFFu ? ": never written" : ": computed from data that had not landed");
        return line.str();
      }
    }
  }
  return "";
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
