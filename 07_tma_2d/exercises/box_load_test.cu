// Grades exercise 07.3: in a child process (a bounded wait that stops the kernel must not take the
// test process with it), boxes are loaded from a 100 x 203 float matrix with rows 204 floats apart,
// and from a tall matrix narrower than a box, at starts inside the matrix, at negative coordinates
// and over the right and bottom edges. Each box is compared bit for bit with the host's: the
// matrix's element where the box lies inside it, a zero everywhere else.
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

using exercise::kBoxCols;
using exercise::kBoxElems;
using exercise::kBoxRows;
using exercise::MatrixShape;

// Loads the boxes at `starts` ({column, row} each) and returns "" or the first wrong element.
std::string attempt(const MatrixShape& m, const std::vector<std::vector<int>>& starts) {
  std::vector<float> host(static_cast<std::size_t>(m.rows) * m.pitch_elems);
  course::fill_pattern(host, 5);
  course::DeviceBuffer<float> gmem_matrix(host.size());
  gmem_matrix.upload(host.data());
  course::DeviceBuffer<float> gmem_box(kBoxElems);
  std::vector<float> box(kBoxElems);
  for (const std::vector<int>& at : starts) {
    const int x = at[0], y = at[1];
    gmem_box.fill_bytes(course::kPoisonByte);
    exercise::launch_box_load(gmem_matrix.data(), m, x, y, gmem_box.data());
    COURSE_CHECK(cudaGetLastError());
    COURSE_CHECK(cudaDeviceSynchronize());
    gmem_box.download(box.data());
    for (int r = 0; r < kBoxRows; ++r) {
      for (int c = 0; c < kBoxCols; ++c) {
        const int row = y + r, col = x + c;
        const bool inside = row >= 0 && row < m.rows && col >= 0 && col < m.cols;
        const float want = inside ? host[static_cast<std::size_t>(row) * m.pitch_elems + col] : 0.0f;
        const float got = box[r * kBoxCols + c];
        if (std::memcmp(&got, &want, sizeof(float)) != 0) {
          std::ostringstream line;
          line << m.rows << " x " << m.cols << " matrix (rows " << m.pitch_elems << " floats apart), box at column "
               << x << ", row " << y << ": box element (row " << r << ", column " << c << ") is " << got
               << ", expected " << want;
          if (got == exercise::kNotLanded) {
            line << ": nothing landed there";
          } else if (!inside) {
            line << ": that place lies outside the matrix, where a load fills in zeros";
          } else {
            line << " (matrix element at row " << row << ", column " << col << ")";
          }
          return line.str();
        }
      }
    }
  }
  return "";
}

class Sm90_ExerciseBoxLoad : public course::GpuTest {
 protected:
  Sm90_ExerciseBoxLoad() : GpuTest({9, 0, false, "cp.async.bulk.tensor (TMA)"}) {}
};

constexpr MatrixShape kWide{100, 203, 204};  // not square, padded rows, partial boxes both ways

TEST_F(Sm90_ExerciseBoxLoad, BoxesInsideTheMatrix) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kWide, {{0, 0}, {64, 16}, {128, 80}, {4, 3}}); });
}
TEST_F(Sm90_ExerciseBoxLoad, BoxesAtNegativeStarts) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kWide, {{-4, -3}, {-60, -15}, {-8, 50}, {100, -1}}); });
}
TEST_F(Sm90_ExerciseBoxLoad, BoxesOverTheRightAndBottomEdges) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kWide, {{160, 90}, {200, 0}, {0, 96}, {188, 99}}); });
}
TEST_F(Sm90_ExerciseBoxLoad, AMatrixNarrowerThanABox) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt({300, 36, 36}, {{0, 0}, {0, 284}, {-28, 150}}); });
}

}  // namespace
