// Grades exercise 05.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern: one batch, one batch per buffer,
// many rounds through one block, and many batches over the whole GPU. Its output is compared with
// the host's, element by element; a wait that can never return is named by the bounded wait.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  std::vector<std::uint32_t> in(num_batches * kBatchElems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(in.size());
  course::DeviceBuffer<std::uint32_t> gmem_out(in.size());
  gmem_in.upload(in.data());
  COURSE_CHECK(cudaMemset(gmem_out.data(), 0xFF, gmem_out.bytes()));
  exercise::launch_hand_back(gmem_in.data(), gmem_out.data(), num_batches, max_blocks);
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
        line << num_batches << " batches, " << max_blocks << " block(s) at most: element " << base + i << " (batch "
             << base / kBatchElems << ") is 0x" << std::hex << out[base + i] << ", expected 0x" << want
             << (out[base + i] == 0xFFFFFFFFu ? ": never written"
                                              : ": computed from a buffer that did not hold this batch");
        return line.str();
      }
    }
  }
  return "";
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
