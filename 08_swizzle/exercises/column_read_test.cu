// Grades exercise 08.3: in a child process, an int4 matrix whose every element names its own
// (row, column) is transposed tile by tile, with the tile placed at 0 bytes and at other multiples
// of 128 bytes past a 1024-byte boundary. The output (poisoned first) is compared element by
// element; a wrong one is reported with the element of the tile that was read instead.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

using exercise::kTileDim;

constexpr int kCheckWord = 0x5EED;

int4 element_at(int row, int col) { return make_int4(row, col, row * 65536 + col, kCheckWord); }

bool same(const int4& a, const int4& b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }

// Which element of the tile at (tile_row, tile_col) the thread responsible for element (i, j)
// read, found from what it wrote: {i', j'}, or {-1, -1} when it read no element of this tile.
std::pair<int, int> element_read(const std::vector<int4>& out, int rows, int tile_row, int tile_col, int i, int j) {
  const int4 got = out[static_cast<std::size_t>(tile_col + j) * rows + tile_row + i];
  const int i_read = got.x - tile_row, j_read = got.y - tile_col;
  const bool in_tile = i_read >= 0 && i_read < kTileDim && j_read >= 0 && j_read < kTileDim;
  if (got.w != kCheckWord || got.z != got.x * 65536 + got.y || !in_tile) return {-1, -1};
  return {i_read, j_read};
}

// What went wrong with the tile at (tile_row, tile_col), whose element (i, j) is the first wrong one.
std::string what_was_read(const std::vector<int4>& out, int rows, int tile_row, int tile_col, int i, int j,
                          int shift_bytes) {
  const int4 got = out[static_cast<std::size_t>(tile_col + j) * rows + tile_row + i];
  if (got.x == exercise::kNotLanded && got.y == exercise::kNotLanded) {
    return "the thread read shared memory that the tile does not occupy";
  }
  const std::pair<int, int> read = element_read(out, rows, tile_row, tile_col, i, j);
  if (read.first < 0) return "the output holds no element of this tile";
  // Two readings of the tile, checked on all of its elements: as stored without a swizzle, and as
  // stored with the 128B swizzle by a tile that starts on a 1024-byte boundary.
  bool unswizzled = true, at_pattern_start = true;
  for (int a = 0; a < kTileDim; ++a) {
    const int place = (shift_bytes / 128 + a) % 8;  // row a's place in the pattern
    for (int b = 0; b < kTileDim; ++b) {
      const std::pair<int, int> r = element_read(out, rows, tile_row, tile_col, a, b);
      unswizzled = unswizzled && r == std::make_pair(a, b ^ place);
      at_pattern_start = at_pattern_start && r == std::make_pair(a, b ^ (a % 8) ^ place);
    }
  }
  std::ostringstream text;
  text << "the thread read element (" << read.first << ", " << read.second << ") of the tile instead of (" << i << ", "
       << j << ")";
  if (unswizzled) {
    text << ". The threads of this tile read every element (i, j) from chunk j of row i, where it would be "
            "without a swizzle";
  } else if (at_pattern_start) {
    text << ". The threads of this tile read every element where the swizzle puts it in a tile that starts on a "
            "1024-byte boundary, and this tile starts "
         << shift_bytes << " bytes past one";
  }
  return text.str();
}

// Transposes a rows x cols int4 matrix with the tile `shift_bytes` past a 1024-byte boundary.
std::string attempt(int rows, int cols, int shift_bytes) {
  std::vector<int4> in(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) in[static_cast<std::size_t>(r) * cols + c] = element_at(r, c);
  }
  course::DeviceBuffer<int4> gmem_in(in.size());
  course::DeviceBuffer<int4> gmem_out(in.size());
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_column_read(gmem_in.data(), gmem_out.data(), rows, cols, shift_bytes);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<int4> out(in.size());
  gmem_out.download(out.data());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int4 got = out[static_cast<std::size_t>(c) * rows + r];
      if (same(got, element_at(r, c))) continue;
      const int tile_row = r / kTileDim * kTileDim, tile_col = c / kTileDim * kTileDim;
      std::ostringstream line;
      line << rows << " x " << cols << " int4, tile " << shift_bytes << " bytes past a 1024-byte boundary: output ("
           << c << ", " << r << ") should be input element (" << r << ", " << c << "), element (" << r - tile_row
           << ", " << c - tile_col << ") of its tile; "
           << what_was_read(out, rows, tile_row, tile_col, r - tile_row, c - tile_col, shift_bytes);
      return line.str();
    }
  }
  return "";
}

class Sm90_ExerciseColumnRead : public course::GpuTest {
 protected:
  Sm90_ExerciseColumnRead() : GpuTest({9, 0, false, "cp.async.bulk.tensor (TMA)"}) {}
};

TEST_F(Sm90_ExerciseColumnRead, ATileWhereThePatternStarts) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kTileDim, kTileDim, 0); });
}
TEST_F(Sm90_ExerciseColumnRead, ATileThreeRowsIntoThePattern) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kTileDim, kTileDim, 384); });
}
TEST_F(Sm90_ExerciseColumnRead, ManyTilesAtEveryPlaceOfThePattern) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    for (int shift = 0; shift <= exercise::kMaxShiftBytes; shift += 128) {
      const std::string problem = attempt(64, 40, shift);  // 8 x 5 tiles, not square
      if (!problem.empty()) return problem;
    }
    return std::string();
  });
}

}  // namespace
