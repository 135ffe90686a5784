// Grades exercise 07.1: each load is played on a model barrier of count 1. The leader's arrival
// carries box_tx_bytes(); then the box lands in shared memory one box row (boxDim[0] elements)
// at a time, fill values included. The phase must stay open until the last row has landed and
// complete with it.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"

namespace {

const void* const kMatrix = reinterpret_cast<const void*>(std::uintptr_t{1} << 20);  // any aligned address

struct Load {
  const char* what;
  TensorMapRequest map;
  std::vector<std::int32_t> coords;  // innermost first
};

// A packed tensor of `dims` elements of `type` (rows padded to 16 bytes), and its box.
TensorMapRequest tensor(CUtensorMapDataType type, std::vector<std::uint64_t> dims, std::vector<std::uint32_t> box) {
  TensorMapRequest r;
  r.data_type = type;
  r.rank = static_cast<std::uint32_t>(dims.size());
  r.global_address = kMatrix;
  std::uint64_t stride = (dims[0] * element_bytes(type) + 15) / 16 * 16;
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    r.global_dim[i] = dims[i];
    r.box_dim[i] = box[i];
    if (i + 1 < r.rank) {
      r.global_strides[i] = stride;
      stride *= dims[i + 1];
    }
  }
  return r;
}

std::string where(const Load& load) {
  bool inside = true;
  for (std::uint32_t i = 0; i < load.map.rank; ++i) {
    const long long first = load.coords[i], last = first + load.map.box_dim[i] - 1;
    if (first < 0 || last >= static_cast<long long>(load.map.global_dim[i])) inside = false;
  }
  std::ostringstream text;
  text << load.what << ", box at (";
  for (std::uint32_t i = 0; i < load.map.rank; ++i) text << (i ? ", " : "") << load.coords[i];
  text << ")" << (inside ? ", inside the tensor" : ", partly outside the tensor");
  return text.str();
}

void play(const Load& load) {
  ASSERT_FALSE(broken_tensor_map_rule(load.map)) << load.what << ": the test's own map breaks a rule";
  std::uint64_t rows = 1;
  for (std::uint32_t i = 1; i < load.map.rank; ++i) rows *= load.map.box_dim[i];
  const std::uint64_t row_bytes = std::uint64_t{load.map.box_dim[0]} * element_bytes(load.map.data_type);
  const std::uint32_t announced = box_tx_bytes(load.map, load.coords.data());
  const course::LoadVerdict verdict = course::play_load(announced, rows, row_bytes);
  ASSERT_EQ(verdict, course::LoadVerdict::exact)
      << where(load) << ": announcing " << announced << " bytes " << course::load_verdict_text(verdict);
}

TEST(HostExerciseBoxBytes, TheChaptersTileInsideTheMatrix) {
  const TensorMapRequest map = matrix_request(static_cast<const float*>(kMatrix), {999, 1001, 1004});
  play({"the chapter's 32 x 256 float tile on 999 x 1001 floats", map, {0, 0}});
  play({"the chapter's 32 x 256 float tile on 999 x 1001 floats", map, {512, 64}});
}

TEST(HostExerciseBoxBytes, TheChaptersTileOverTheEdges) {
  const TensorMapRequest map = matrix_request(static_cast<const float*>(kMatrix), {999, 1001, 1004});
  for (const std::vector<std::int32_t>& at : {std::vector<std::int32_t>{768, 992}, {-4, -3}, {-252, -31}, {1000, 0}}) {
    play({"the chapter's 32 x 256 float tile on 999 x 1001 floats", map, at});
    if (HasFatalFailure()) return;
  }
}

TEST(HostExerciseBoxBytes, OtherElementTypes) {
  play({"64 x 8 bytes on 100 x 100 uint8", tensor(CU_TENSOR_MAP_DATA_TYPE_UINT8, {100, 100}, {64, 8}), {64, 96}});
  play({"32 x 4 doubles on 50 x 40 float64", tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT64, {40, 50}, {32, 4}), {16, -2}});
  play({"64 x 16 halves on 300 x 200 float16", tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {200, 300}, {64, 16}), {0, 0}});
}

TEST(HostExerciseBoxBytes, OtherRanks) {
  play({"256 floats of 1000 (rank 1)", tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, {1000}, {256}), {896}});
  play({"64 x 16 x 2 halves (rank 3)", tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {200, 40, 3}, {64, 16, 2}),
        {-64, 32, 2}});
  play({"16 x 2 x 2 x 2 x 2 uint16 (rank 5)",
        tensor(CU_TENSOR_MAP_DATA_TYPE_UINT16, {40, 5, 4, 3, 2}, {16, 2, 2, 2, 2}), {32, 4, 0, 2, 1}});
}

}  // namespace
