// Grades exercise 03.3: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on 1, 7 and 600 batches of a position-dependent pattern, and its
// output is compared with the host's, element by element.
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

using exercise::kBatchElems;

std::string attempt(std::size_t num_batches) {
  std::vector<std::uint32_t> in(num_batches * kBatchElems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(in.size());
  course::DeviceBuffer<std::uint32_t> gmem_out(in.size());
  gmem_in.upload(in.data());
  COURSE_CHECK(cudaMemset(gmem_out.data(), 0xFF, gmem_out.bytes()));
  exercise::launch_bound_copy(gmem_in.data(), gmem_out.data(), num_batches);
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
             << (out[base + i] == exercise::smooth(exercise::kNotLanded, exercise::kNotLanded, exercise::kNotLanded)
                     ? ": the block computed before the batch had landed in shared memory"
                     : "");
        return line.str();
      }
    }
  }
  return "";
}

class Sm80_ExerciseBoundCopy : public course::GpuTest {
 protected:
  Sm80_ExerciseBoundCopy() : GpuTest({8, 0, false, "mbarrier and cp.async (LDGSTS)"}) {}
};

TEST_F(Sm80_ExerciseBoundCopy, OneBatch) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1); }); }
TEST_F(Sm80_ExerciseBoundCopy, SevenBatches) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(7); }); }
TEST_F(Sm80_ExerciseBoundCopy, ManyBatchesPerBlock) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(600); }); }

}  // namespace
