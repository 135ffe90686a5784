// Grades exercise 07.2: the request from window_request() must pass the model's rules; then, for
// boxes all over the window (inside it, over each of its edges, at negative starts), every element
// of the box is followed to the address TMA would read it from (the host model of a rank-2 tiled
// load) and compared with the window element that belongs there, or with a zero outside the window.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

const unsigned char* const kMatrix = reinterpret_cast<const unsigned char*>(std::uintptr_t{1} << 24);

struct Case {
  const char* type_name;
  CUtensorMapDataType type;
  int matrix_rows, pitch_elems;
  Window w;
  std::uint32_t box_cols, box_rows;
};

std::string describe(const Case& c) {
  std::ostringstream text;
  text << "window of " << c.w.rows << " x " << c.w.cols << " " << c.type_name << " at row " << c.w.row0 << ", column "
       << c.w.col0 << " of a matrix of " << c.matrix_rows << " rows, " << c.pitch_elems << " elements apart";
  return text.str();
}

// Where a rank-2 tiled load through `map` takes box element (r, c) of the box at (x, y): an
// address, or nothing when that place lies outside the tensor (zero fill).
std::optional<std::uintptr_t> tma_source(const TensorMapRequest& map, long long x, long long y, int r, int c) {
  const long long col = x + c, row = y + r;
  if (col < 0 || row < 0 || col >= static_cast<long long>(map.global_dim[0]) ||
      row >= static_cast<long long>(map.global_dim[1])) {
    return std::nullopt;
  }
  return reinterpret_cast<std::uintptr_t>(map.global_address) + row * map.global_strides[0] +
         col * element_bytes(map.data_type);
}

// The same for the window itself: the matrix element that belongs at (r, c), or nothing (a zero).
std::optional<std::uintptr_t> window_source(const Case& c, long long x, long long y, int r, int col_in_box) {
  const long long col = x + col_in_box, row = y + r;
  if (col < 0 || row < 0 || col >= c.w.cols || row >= c.w.rows) return std::nullopt;
  return reinterpret_cast<std::uintptr_t>(kMatrix) +
         ((c.w.row0 + row) * c.pitch_elems + c.w.col0 + col) * static_cast<long long>(element_bytes(c.type));
}

std::string name(const Case& c, std::optional<std::uintptr_t> source) {
  if (!source) return "a zero";
  const long long elem = element_bytes(c.type);
  const long long offset = static_cast<long long>(*source - reinterpret_cast<std::uintptr_t>(kMatrix));
  const long long matrix_bytes = static_cast<long long>(c.matrix_rows) * c.pitch_elems * elem;
  std::ostringstream text;
  if (*source < reinterpret_cast<std::uintptr_t>(kMatrix) || offset >= matrix_bytes) {
    text << "bytes outside the matrix's memory";
  } else {
    text << (offset % elem != 0 ? "bytes in the middle of " : "") << "matrix element (row " << offset / elem / c.pitch_elems
         << ", column " << offset / elem % c.pitch_elems << ")";
  }
  return text.str();
}

void check(const Case& c) {
  const TensorMapRequest map = window_request(kMatrix, c.type, c.pitch_elems, c.w, c.box_cols, c.box_rows);
  if (const std::optional<std::string> broken = broken_tensor_map_rule(map)) {
    FAIL() << describe(c) << ": the rules reject the map: " << *broken;
  }
  if (map.rank != 2 || map.data_type != c.type) {
    FAIL() << describe(c) << ": the map must describe a 2-dimensional tensor of " << c.type_name << " (rank "
           << map.rank << ", data type " << static_cast<int>(map.data_type) << ")";
  }
  if (map.box_dim[0] != c.box_cols || map.box_dim[1] != c.box_rows) {
    FAIL() << describe(c) << ": one copy through the map moves boxDim = {" << map.box_dim[0] << ", " << map.box_dim[1]
           << "}, not a box of " << c.box_rows << " rows of " << c.box_cols << " elements";
  }
  // Box starts: inside, over every edge of the window and at negative coordinates; column starts
  // stay multiples of 16 bytes, as TMA requires.
  const long long step = 16 / element_bytes(c.type);
  const long long last_x = (c.w.cols - 1) / c.box_cols * c.box_cols, last_y = (c.w.rows - 1) / c.box_rows * c.box_rows;
  const long long starts[][2] = {{0, 0},           {c.box_cols, c.box_rows}, {last_x, 0},  {0, last_y},
                                 {last_x, last_y}, {-step, -1},              {-step, 5},   {last_x, -3},
                                 {-2 * step, last_y}, {(c.w.cols - 1) / step * step, c.w.rows - 1}};
  for (const auto& at : starts) {
    for (int r = 0; r < static_cast<int>(c.box_rows); ++r) {
      for (int col = 0; col < static_cast<int>(c.box_cols); ++col) {
        const std::optional<std::uintptr_t> got = tma_source(map, at[0], at[1], r, col);
        const std::optional<std::uintptr_t> want = window_source(c, at[0], at[1], r, col);
        if (got != want) {
          FAIL() << describe(c) << ": the load of the box at (x " << at[0] << ", y " << at[1] << ") of the window puts "
                 << name(c, got) << " at box element (row " << r << ", column " << col << "), where "
                 << name(c, want) << " belongs" << (want ? "" : " (that place lies outside the window)");
        }
      }
    }
  }
}

TEST(HostExerciseWindowMap, TheWholeMatrixIsAWindowToo) {
  check({"floats", CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 100, 204, {0, 0, 100, 203}, 64, 16});
}

TEST(HostExerciseWindowMap, AWindowInsideAFloatMatrix) {
  check({"floats", CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 999, 1004, {5, 8, 300, 500}, 256, 32});
}

TEST(HostExerciseWindowMap, AWindowAtTheMatrixsCorner) {
  check({"floats", CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 999, 1004, {980, 800, 19, 201}, 64, 8});
}

TEST(HostExerciseWindowMap, OtherElementTypes) {
  check({"bytes (uint8)", CU_TENSOR_MAP_DATA_TYPE_UINT8, 64, 4096, {3, 32, 40, 1000}, 128, 8});
  if (HasFatalFailure()) return;
  check({"halves (float16)", CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 200, 520, {17, 24, 150, 250}, 64, 16});
  if (HasFatalFailure()) return;
  check({"doubles (float64)", CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 50, 34, {0, 2, 50, 30}, 16, 8});
}

}  // namespace
