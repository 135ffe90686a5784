// Grades exercise 09.2: broken_rule() must accept exactly the values the course's rule check
// (course/tensor_map.hpp, kept in agreement with the driver) accepts for the same float matrix map,
// on the lesson's batches, on values just inside and just outside every limit, and on a sweep of
// random values.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device_tensormap_model.hpp"  // the batches and the rule check the device relies on

namespace {

constexpr std::uintptr_t kBase = std::uintptr_t{1} << 30;  // 16-byte (and 256-byte) aligned

course::TensorMapRequest request_of(const RetargetValues& v) {
  course::TensorMapRequest r;  // float32, rank 2, element strides 1, no interleave/swizzle, zero fill
  r.rank = 2;
  r.global_address = reinterpret_cast<const void*>(v.global_address);
  r.global_dim[0] = v.cols;
  r.global_dim[1] = v.rows;
  r.global_strides[0] = v.row_stride_bytes;
  r.box_dim[0] = v.box_cols;
  r.box_dim[1] = kTileRows;
  return r;
}

std::string describe(const RetargetValues& v) {
  std::ostringstream text;
  text << v.rows << " x " << v.cols << " floats, row stride " << v.row_stride_bytes << " bytes, box 32 x " << v.box_cols
       << ", address " << (v.global_address == 0 ? std::string("null") : "= 16k + " + std::to_string(v.global_address % 16));
  return text.str();
}

// One case: your verdict against the rule check's. Returns false on disagreement.
bool agrees(const RetargetValues& v) {
  const std::optional<std::string> yours = broken_rule(v);
  const std::optional<std::string> rules = course::broken_tensor_map_rule(request_of(v));
  if (yours.has_value() == rules.has_value()) return true;
  if (!yours) {
    ADD_FAILURE() << describe(v) << ": you accept these values, but the driver's rules refuse the map";
  } else {
    ADD_FAILURE() << describe(v) << ": you refuse these values (\"" << *yours << "\"), but the driver accepts the map";
  }
  return false;
}

RetargetValues of_layout(const float* gmem_matrix, const TensorLayout& t) {
  return {reinterpret_cast<std::uintptr_t>(gmem_matrix), static_cast<std::uint64_t>(t.cols),
          static_cast<std::uint64_t>(t.rows), static_cast<std::uint64_t>(t.pitch_elems) * sizeof(float),
          static_cast<std::uint32_t>(t.box_cols)};
}

TEST(HostExerciseReplaceRules, TheLessonsBatchesPass) {
  const float* base = reinterpret_cast<const float*>(kBase);
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{64} << 20, std::size_t{1} << 30}) {
    for (const TensorLayout& t : plan_batch(default_shapes(bytes)).tensors) {
      if (!agrees(of_layout(base + t.offset_elems, t))) return;
    }
  }
}

TEST(HostExerciseReplaceRules, TheBatchTheHostRefusesIsRefused) {
  // The lesson's refused batch: a packed pitch of 1001 floats, an empty matrix.
  const float* base = reinterpret_cast<const float*>(kBase);
  for (const TensorLayout& t : plan_batch({{999, 1001, 1001}, {0, 64, 64}}).tensors) {
    if (!agrees(of_layout(base + t.offset_elems, t))) return;
  }
}

TEST(HostExerciseReplaceRules, JustInsideAndJustOutsideEveryLimit) {
  const RetargetValues ok{kBase, 1001, 999, 1004 * 4, 256};
  ASSERT_TRUE(agrees(ok)) << "a plain 999 x 1001 matrix, pitch 1004";
  std::vector<RetargetValues> cases;
  for (std::uintptr_t offset : {0u, 4u, 8u, 12u, 16u, 32u, 48u, 64u, 100u}) {
    RetargetValues v = ok;
    v.global_address = kBase + offset;
    cases.push_back(v);
  }
  { RetargetValues v = ok; v.global_address = 0; cases.push_back(v); }
  for (std::uint64_t rows : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 1}) {
    RetargetValues v = ok;
    v.rows = rows;
    cases.push_back(v);
  }
  for (std::uint64_t cols : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 1}) {
    RetargetValues v = ok;
    v.cols = cols;
    v.row_stride_bytes = (cols * 4 + 15) / 16 * 16 + (cols == 0 ? 16 : 0);
    cases.push_back(v);
  }
  for (std::uint64_t stride : {4004ull, 4008ull, 4012ull, 4016ull, 3984ull, 4000ull, 8192ull, 1ull << 39,
                               (1ull << 40) - 16, 1ull << 40, (1ull << 40) + 16}) {
    RetargetValues v = ok;
    v.row_stride_bytes = stride;
    cases.push_back(v);
  }
  for (std::uint32_t box : {0u, 1u, 2u, 3u, 4u, 8u, 12u, 64u, 252u, 256u, 257u, 260u, 512u}) {
    RetargetValues v = ok;
    v.box_cols = box;
    cases.push_back(v);
  }
  for (const RetargetValues& v : cases) agrees(v);
}

TEST(HostExerciseReplaceRules, ASweepOfRandomValues) {
  std::mt19937_64 random(2024);
  int disagreements = 0;
  for (int i = 0; i < 20000 && disagreements < 5; ++i) {
    RetargetValues v{};
    v.global_address = random() % 8 == 0 ? 0 : kBase + 4 * (random() % 16);
    v.cols = random() % 4 == 0 ? random() % 40 : 1 + random() % 20000;
    v.rows = random() % 8 == 0 ? random() % 3 : 1 + random() % 5000;
    const std::uint64_t row_bytes = v.cols * 4;
    switch (random() % 4) {
      case 0: v.row_stride_bytes = row_bytes; break;                     // packed
      case 1: v.row_stride_bytes = (row_bytes + 15) / 16 * 16; break;    // the next 16 bytes
      case 2: v.row_stride_bytes = row_bytes + 4 * (random() % 32); break;
      default: v.row_stride_bytes = 16 * (random() % 2048); break;
    }
    v.box_cols = static_cast<std::uint32_t>(random() % 300);
    disagreements += !agrees(v);
  }
}

}  // namespace
