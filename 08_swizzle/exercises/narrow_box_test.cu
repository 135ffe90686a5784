// Grades exercise 08.4: in a child process (a bounded wait that stops the kernel must not take the
// test process with it), float matrices of one panel, of many panels, and of panels over the right
// and bottom edges are copied; the output, poisoned first, is compared with the input bit for bit.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

using exercise::kPanelCols;
using exercise::kPanelRows;

std::string attempt(int rows, int cols) {
  std::vector<float> in(static_cast<std::size_t>(rows) * cols);
  course::fill_pattern(in, 8);
  course::DeviceBuffer<float> gmem_in(in.size());
  course::DeviceBuffer<float> gmem_out(in.size());
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_narrow_box(gmem_in.data(), gmem_out.data(), rows, cols);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(in.size());
  gmem_out.download(out.data());
  for (std::size_t e = 0; e < in.size(); ++e) {
    if (std::memcmp(&out[e], &in[e], sizeof(float)) == 0) continue;
    const int r = static_cast<int>(e / cols), c = static_cast<int>(e % cols);
    std::ostringstream line;
    line << rows << " x " << cols << " floats: element (" << r << ", " << c << "), (" << r % kPanelRows << ", "
         << c % kPanelCols << ") of its panel, is " << out[e] << ", expected " << in[e];
    if (out[e] == exercise::kNotLanded) line << ": the block read it before the panel had landed";
    return line.str();
  }
  return "";
}

class Sm90_ExerciseNarrowBox : public course::GpuTest {
 protected:
  Sm90_ExerciseNarrowBox() : GpuTest({9, 0, false, "cp.async.bulk.tensor (TMA)"}) {}
};

TEST_F(Sm90_ExerciseNarrowBox, OnePanel) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kPanelRows, kPanelCols); });
}
TEST_F(Sm90_ExerciseNarrowBox, ManyPanels) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(256, 192); });
}
TEST_F(Sm90_ExerciseNarrowBox, PanelsOverTheEdges) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(3 * kPanelRows + 5, 2 * kPanelCols + 4); });
}

}  // namespace
