// Grades exercise 07.4: each load is played on a model barrier of count 1. The leader's arrival
// carries load_bytes(); then the box lands one row (the indices of dimension 0 that land) at a
// time. The phase must stay open until the last row has landed and complete with it. What lands
// is what chapter 07 measured on an H100 (tensor_map_options, "Interleaved layouts").
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"

namespace {

const void* const kTensor = reinterpret_cast<const void*>(std::uintptr_t{1} << 20);  // any aligned address

// A packed tensor of `dims` (innermost first) and its box. With interleave an index of dimension 0
// is a slice of 16 or 32 bytes, and rows of slices are packed.
TensorMapRequest tensor(CUtensorMapDataType type, CUtensorMapInterleave interleave, std::vector<std::uint64_t> dims,
                        std::vector<std::uint32_t> box, std::vector<std::uint32_t> strides = {}) {
  TensorMapRequest r;
  r.data_type = type;
  r.interleave = interleave;
  r.swizzle = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  r.rank = static_cast<std::uint32_t>(dims.size());
  r.global_address = kTensor;
  const std::uint64_t unit = interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? element_bytes(type)
                             : interleave == CU_TENSOR_MAP_INTERLEAVE_16B ? 16 : 32;
  std::uint64_t stride = (dims[0] * unit + 31) / 32 * 32;
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    r.global_dim[i] = dims[i];
    r.box_dim[i] = box[i];
    r.element_strides[i] = i < strides.size() ? strides[i] : 1;
    if (i + 1 < r.rank) {
      r.global_strides[i] = stride;
      stride *= dims[i + 1];
    }
  }
  return r;
}

void play(const std::string& what, const TensorMapRequest& map) {
  ASSERT_FALSE(broken_tensor_map_rule(map)) << what << ": the test's own map breaks a rule: "
                                            << broken_tensor_map_rule(map).value_or("");
  const bool interleaved = map.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  const std::uint64_t unit = !interleaved ? element_bytes(map.data_type)
                             : map.interleave == CU_TENSOR_MAP_INTERLEAVE_16B ? 16 : 32;
  const std::uint32_t stride0 = interleaved ? map.element_strides[0] : 1;
  const std::uint64_t row_bytes = unit * ((map.box_dim[0] + stride0 - 1) / stride0);
  std::uint64_t rows = 1;
  for (std::uint32_t i = 1; i < map.rank; ++i) {
    rows *= interleaved && i + 2 == map.rank ? 1 : (map.box_dim[i] + map.element_strides[i] - 1) / map.element_strides[i];
  }
  const std::uint32_t announced = load_bytes(map);
  const course::LoadVerdict verdict = course::play_load(announced, rows, row_bytes);
  ASSERT_EQ(verdict, course::LoadVerdict::exact)
      << what << ": announcing " << announced << " bytes " << course::load_verdict_text(verdict);
}

constexpr auto kNone = CU_TENSOR_MAP_INTERLEAVE_NONE, k16 = CU_TENSOR_MAP_INTERLEAVE_16B, k32 = CU_TENSOR_MAP_INTERLEAVE_32B;

TEST(HostExerciseSliceBytes, PlainMapsWithElementStrides) {
  play("complex floats as floats, box {64, 32}, element strides {2, 2}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, kNone, {16384, 37}, {64, 32}, {2, 2}));
  play("halves, rank 3, box {64, 16, 2}, element strides {1, 3, 1}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, kNone, {200, 40, 3}, {64, 16, 2}, {1, 3, 1}));
}

TEST(HostExerciseSliceBytes, TheLessonsInterleavedImages) {
  play("NC/4HWC4 floats {64 pixels, 16 rows, 4 slices, 2 images}, box {32, 8, 1, 1}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, k16, {64, 16, 4, 2}, {32, 8, 1, 1}));
  play("NC/32HWC32 bytes {64 pixels, 16 rows, 2 slices, 2 images}, box {32, 8, 1, 1}, 32-byte interleave",
       tensor(CU_TENSOR_MAP_DATA_TYPE_UINT8, k32, {64, 16, 2, 2}, {32, 8, 1, 1}));
}

TEST(HostExerciseSliceBytes, ABoxOverTheSlices) {
  play("NC/4HWC4 floats, box {32, 8, 2, 1}: two slice-planes asked for",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, k16, {64, 16, 4, 2}, {32, 8, 2, 1}));
  play("NC/8HWC8 halves, box {16, 4, 3, 2}", tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, k16, {64, 16, 3, 2}, {16, 4, 3, 2}));
}

TEST(HostExerciseSliceBytes, EveryThirdPixel) {
  play("NC/4HWC4 floats, box {32, 8, 1, 1}, element strides {3, 1, 1, 1}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, k16, {64, 16, 4, 2}, {32, 8, 1, 1}, {3, 1, 1, 1}));
  play("NC/16HWC16 halves, box {64, 4, 1, 1}, element strides {2, 2, 1, 1}, 32-byte interleave",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, k32, {64, 16, 2, 2}, {64, 4, 1, 1}, {2, 2, 1, 1}));
}

TEST(HostExerciseSliceBytes, RanksThreeAndFive) {
  play("rank 3 {64 pixels, 16 rows, 8 slices x images}, box {16, 8, 2}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, k16, {64, 16, 8}, {16, 8, 2}));
  play("rank 5 {64 pixels, 8 rows, 2 halves, 4 slices, 2 images}, box {32, 4, 2, 2, 1}",
       tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, k16, {64, 8, 2, 4, 2}, {32, 4, 2, 2, 1}));
}

}  // namespace
