// Grades exercise 09.1: the replaces from retarget() are played on a copy of `from`, decoding each
// value the way tensormap.replace reads it (PTX's codes, the rank minus one), and the result must
// describe the map `to`. A replace that writes a value the field already holds, or writes a field
// twice, is one write of the whole 128-byte map too many.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>

namespace {

const char* field_name(MapField f) {
  switch (f) {
    case MapField::global_address: return "global_address";
    case MapField::rank: return "rank";
    case MapField::global_dim: return "global_dim";
    case MapField::global_stride: return "global_stride";
    case MapField::box_dim: return "box_dim";
    case MapField::element_stride: return "element_stride";
    case MapField::elemtype: return "elemtype";
    case MapField::interleave_layout: return "interleave_layout";
    case MapField::swizzle_mode: return "swizzle_mode";
    case MapField::fill_mode: return "fill_mode";
  }
  return "?";
}

// The driver's element type whose PTX code is `code`, or nothing.
std::optional<CUtensorMapDataType> type_of_code(std::uint64_t code) {
  for (int t = CU_TENSOR_MAP_DATA_TYPE_UINT8; t <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ; ++t) {
    const auto type = static_cast<CUtensorMapDataType>(t);
    if (ptx_elemtype(type) >= 0 && static_cast<std::uint64_t>(ptx_elemtype(type)) == code) return type;
  }
  return std::nullopt;
}

// Plays one replace on `map` (the map as a request), after checking that it changes something.
// `from_rank` is the rank of the map before any replace. Returns "" or what is wrong with it.
std::string play(course::TensorMapRequest& map, const Replace& r, std::uint32_t from_rank) {
  std::ostringstream problem;
  problem << "replace " << field_name(r.field) << "[" << r.ord << "] = " << r.value << ": ";
  const auto dim_ok = [&](int limit) { return r.ord >= 0 && r.ord < limit; };
  // A field of a dimension the first map did not use holds nothing: writing it always counts.
  const bool held_dim = r.ord < static_cast<int>(from_rank);
  const bool held_stride = r.ord + 1 < static_cast<int>(from_rank);
  bool unchanged = false;
  switch (r.field) {
    case MapField::global_address: {
      const void* p = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(r.value));
      unchanged = map.global_address == p;
      map.global_address = p;
      break;
    }
    case MapField::rank:
      if (r.value > 4) return problem.str() + "the field holds rank - 1, 0 to 4";
      unchanged = map.rank == r.value + 1;
      map.rank = static_cast<std::uint32_t>(r.value + 1);
      break;
    case MapField::global_dim:
      if (!dim_ok(5)) return problem.str() + "no such dimension";
      unchanged = held_dim && map.global_dim[r.ord] == r.value;
      map.global_dim[r.ord] = r.value;
      break;
    case MapField::global_stride:
      if (!dim_ok(4)) return problem.str() + "no such stride";
      unchanged = held_stride && map.global_strides[r.ord] == r.value;
      map.global_strides[r.ord] = r.value;
      break;
    case MapField::box_dim:
      if (!dim_ok(5)) return problem.str() + "no such dimension";
      unchanged = held_dim && map.box_dim[r.ord] == r.value;
      map.box_dim[r.ord] = static_cast<std::uint32_t>(r.value);
      break;
    case MapField::element_stride:
      if (!dim_ok(5)) return problem.str() + "no such dimension";
      unchanged = held_dim && map.element_strides[r.ord] == r.value;
      map.element_strides[r.ord] = static_cast<std::uint32_t>(r.value);
      break;
    case MapField::elemtype: {
      const std::optional<CUtensorMapDataType> type = type_of_code(r.value);
      if (!type) return problem.str() + "PTX's table has no element type with this code";
      unchanged = map.data_type == *type;
      map.data_type = *type;
      break;
    }
    case MapField::interleave_layout:
      if (r.value > 2) return problem.str() + "PTX's interleave codes are 0 to 2";
      unchanged = map.interleave == static_cast<CUtensorMapInterleave>(r.value);
      map.interleave = static_cast<CUtensorMapInterleave>(r.value);
      break;
    case MapField::swizzle_mode:
      if (r.value > 3) return problem.str() + "PTX's swizzle codes on sm_90a are 0 to 3";
      unchanged = map.swizzle == static_cast<CUtensorMapSwizzle>(r.value);
      map.swizzle = static_cast<CUtensorMapSwizzle>(r.value);
      break;
    case MapField::fill_mode:
      if (r.value > 1) return problem.str() + "PTX's fill codes are 0 and 1";
      unchanged = map.oob_fill == static_cast<CUtensorMapFloatOOBfill>(r.value);
      map.oob_fill = static_cast<CUtensorMapFloatOOBfill>(r.value);
      break;
  }
  if (unchanged) return problem.str() + "the field already holds this value: a write of the whole map for nothing";
  return "";
}

// What differs between the map after the replaces and `to`, over what `to` uses; "" when nothing.
std::string difference(const course::TensorMapRequest& got, const course::TensorMapRequest& to) {
  std::ostringstream d;
  if (got.global_address != to.global_address) d << " global address " << got.global_address << " (needs " << to.global_address << ");";
  if (got.rank != to.rank) d << " rank " << got.rank << " (needs " << to.rank << ");";
  for (std::uint32_t i = 0; i < to.rank; ++i) {
    if (got.global_dim[i] != to.global_dim[i]) d << " global_dim[" << i << "] " << got.global_dim[i] << " (needs " << to.global_dim[i] << ");";
    if (got.box_dim[i] != to.box_dim[i]) d << " box_dim[" << i << "] " << got.box_dim[i] << " (needs " << to.box_dim[i] << ");";
    if (got.element_strides[i] != to.element_strides[i]) {
      d << " element_stride[" << i << "] " << got.element_strides[i] << " (needs " << to.element_strides[i] << ");";
    }
    if (i + 1 < to.rank && got.global_strides[i] != to.global_strides[i]) {
      d << " global_stride[" << i << "] " << got.global_strides[i] << " (needs " << to.global_strides[i] << ");";
    }
  }
  if (got.data_type != to.data_type) d << " element type: the driver's " << got.data_type << " (needs " << to.data_type << ");";
  if (got.interleave != to.interleave) d << " interleave " << got.interleave << " (needs " << to.interleave << ");";
  if (got.swizzle != to.swizzle) d << " swizzle " << got.swizzle << " (needs " << to.swizzle << ");";
  if (got.oob_fill != to.oob_fill) d << " fill " << got.oob_fill << " (needs " << to.oob_fill << ");";
  return d.str();
}

// Retargets `from` to `to` and checks the result and that no write was wasted.
void expect_retargets(const char* what, const course::TensorMapRequest& from, const course::TensorMapRequest& to) {
  SCOPED_TRACE(what);
  const std::optional<std::vector<Replace>> replaces = retarget(from, to);
  ASSERT_TRUE(replaces.has_value()) << "tensormap.replace can make this map: every field that differs has a replace";
  course::TensorMapRequest map = from;
  std::set<std::pair<MapField, int>> written;
  for (const Replace& r : *replaces) {
    ASSERT_TRUE(written.insert({r.field, r.ord}).second)
        << field_name(r.field) << "[" << r.ord << "] is replaced twice: every replace writes the whole map";
    const std::string problem = play(map, r, from.rank);
    ASSERT_EQ(problem, "");
  }
  const std::string left = difference(map, to);
  EXPECT_EQ(left, "") << "after your " << replaces->size() << " replaces the map is not the one asked for:" << left;
}

const float* at(std::uintptr_t address) { return reinterpret_cast<const float*>(address); }

// A map of 128 zero bytes, as the lesson's device_zero starts from, read as a request: element
// type code 0 (UINT8), rank field 0 (rank 1), every dimension, stride and box 0, all modes 0.
course::TensorMapRequest zero_map() {
  course::TensorMapRequest r;
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  r.rank = 1;
  r.global_address = nullptr;
  for (std::uint32_t& s : r.element_strides) s = 0;
  return r;
}

TEST(HostExerciseRetargetFields, TheLessonsTemplateBecomesEachTensorsMap) {
  const BatchPlan plan = plan_batch(default_shapes(64u << 20));
  const float* gmem_in = at(std::uintptr_t{1} << 30);
  const course::TensorMapRequest tmpl = template_request(gmem_in);
  for (std::size_t t = 0; t < plan.tensors.size(); ++t) {
    const TensorLayout& layout = plan.tensors[t];
    const course::TensorMapRequest to = tensor_request(gmem_in + layout.offset_elems, layout);
    expect_retargets(("template to tensor " + std::to_string(t)).c_str(), tmpl, to);
    if (HasFatalFailure()) return;
    const std::optional<std::vector<Replace>> replaces = retarget(tmpl, to);
    ASSERT_TRUE(replaces.has_value());
    EXPECT_LE(replaces->size(), 5u) << "tensor " << t << ": the template already holds everything but the address, "
                                       "the two dimensions, the row stride and the box width";
  }
}

TEST(HostExerciseRetargetFields, OneTensorsMapBecomesTheNextOnes) {
  const BatchPlan plan = plan_batch({{999, 1001, 1004}, {512, 1001, 1004}, {512, 1001, 1008}, {61, 61, 64}});
  const float* base = at(std::uintptr_t{1} << 30);
  for (std::size_t t = 1; t < plan.tensors.size(); ++t) {
    const TensorLayout& a = plan.tensors[t - 1];
    const TensorLayout& b = plan.tensors[t];
    expect_retargets(("tensor " + std::to_string(t - 1) + " to tensor " + std::to_string(t)).c_str(),
                     tensor_request(base + a.offset_elems, a), tensor_request(base + b.offset_elems, b));
    if (HasFatalFailure()) return;
  }
  // Same width and pitch, fewer rows: only the address and the row count differ.
  const std::optional<std::vector<Replace>> two =
      retarget(tensor_request(base + plan.tensors[0].offset_elems, plan.tensors[0]),
               tensor_request(base + plan.tensors[1].offset_elems, plan.tensors[1]));
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->size(), 2u) << "tensors 0 and 1 differ in their address and their number of rows, nothing else";
}

TEST(HostExerciseRetargetFields, TheSameMapNeedsNoReplace) {
  const course::TensorMapRequest tmpl = template_request(at(std::uintptr_t{1} << 30));
  const std::optional<std::vector<Replace>> none = retarget(tmpl, tmpl);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty()) << "nothing differs, yet " << none->size() << " replaces";
}

TEST(HostExerciseRetargetFields, FromZeroBytesOnlyWhatZeroDoesNotAlreadySay) {
  const TensorLayout layout = plan_batch({{77, 250, 260}}).tensors[0];
  const course::TensorMapRequest to = tensor_request(at(std::uintptr_t{1} << 30), layout);
  expect_retargets("zero map to a float matrix", zero_map(), to);
  if (HasFatalFailure()) return;
  // Zeros already say: no interleave, no swizzle, zero fill.
  const std::optional<std::vector<Replace>> replaces = retarget(zero_map(), to);
  ASSERT_TRUE(replaces.has_value());
  for (const Replace& r : *replaces) {
    EXPECT_TRUE(r.field != MapField::interleave_layout && r.field != MapField::swizzle_mode && r.field != MapField::fill_mode)
        << field_name(r.field) << ": 128 zero bytes already hold PTX's code 0 there";
  }
}

TEST(HostExerciseRetargetFields, RanksGrowAndShrink) {
  course::TensorMapRequest cube;  // 64 x 32 x 8 floats, boxes of 32 x 8 x 2
  cube.rank = 3;
  cube.global_address = at(std::uintptr_t{1} << 30);
  cube.global_dim[0] = 64, cube.global_dim[1] = 32, cube.global_dim[2] = 8;
  cube.global_strides[0] = 64 * 4, cube.global_strides[1] = 64 * 32 * 4;
  cube.box_dim[0] = 32, cube.box_dim[1] = 8, cube.box_dim[2] = 2;
  course::TensorMapRequest matrix = cube;  // its first plane as a matrix
  matrix.rank = 2;
  matrix.global_dim[2] = 0, matrix.global_strides[1] = 0, matrix.box_dim[2] = 0;
  expect_retargets("3D to 2D", cube, matrix);
  if (HasFatalFailure()) return;
  expect_retargets("2D to 3D", matrix, cube);
  if (HasFatalFailure()) return;
  const std::optional<std::vector<Replace>> down = retarget(cube, matrix);
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->size(), 1u) << "3D to 2D: the first two dimensions are unchanged, the third is no longer used";
}

TEST(HostExerciseRetargetFields, ImmediatesArePtxCodesNotTheDriversEnums) {
  course::TensorMapRequest from = template_request(at(std::uintptr_t{1} << 30));
  for (CUtensorMapDataType type : {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
                                   CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, CU_TENSOR_MAP_DATA_TYPE_UINT16}) {
    course::TensorMapRequest to = from;
    to.data_type = type;
    expect_retargets(("float32 to the driver's type " + std::to_string(type)).c_str(), from, to);
    if (HasFatalFailure()) return;
  }
  course::TensorMapRequest swizzled = from;
  swizzled.box_dim[0] = 32;  // 128-byte rows: the 128-byte swizzle's span
  swizzled.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  swizzled.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  expect_retargets("plain to swizzled with NaN fill", from, swizzled);
  if (HasFatalFailure()) return;
  expect_retargets("swizzled with NaN fill back to plain", swizzled, from);
}

TEST(HostExerciseRetargetFields, WhatNoReplaceCanWriteNeedsAnotherTemplate) {
  const course::TensorMapRequest from = template_request(at(std::uintptr_t{1} << 30));
  course::TensorMapRequest to = from;
  to.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  EXPECT_FALSE(retarget(from, to).has_value())
      << "the two maps differ in one field that no tensormap.replace writes: no kernel can retarget this map";
  to = from;
  to.global_dim[1] = 7;
  EXPECT_TRUE(retarget(from, to).has_value()) << "equal L2 promotions: the map can be retargeted";
}

}  // namespace
