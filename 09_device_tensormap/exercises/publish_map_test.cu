// Grades exercise 09.4: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on batches of one to eight tensors, whose position-dependent
// values must arrive in the output exactly, every other word keeping its poison. The machine code
// of the kernel must hold the acquire (where cuobjdump can read it).
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/codegen.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

constexpr float kPlaceholderValue = -1000.0f;  // every element of the template's matrix; no input is below -64

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

std::string attempt(const std::vector<TensorShape>& shapes) {
  const BatchPlan plan = plan_batch(shapes);
  std::vector<float> in(static_cast<std::size_t>(plan.total_elems));
  course::fill_pattern(in);
  course::DeviceBuffer<float> gmem_in(in.size());
  course::DeviceBuffer<float> gmem_out(in.size());
  course::DeviceBuffer<float> gmem_placeholder(std::size_t{kTileRows} * exercise::kPlaceholderCols);
  course::DeviceBuffer<CUtensorMap> gmem_map(1);
  const std::vector<std::string> problems = batch_problems(plan, gmem_in.data(), gmem_out.data());
  if (!problems.empty()) return "the test's batch breaks a tensor-map rule:" + joined(problems);
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  const std::vector<float> placeholder(gmem_placeholder.size(), kPlaceholderValue);
  gmem_placeholder.upload(placeholder.data());
  const CUtensorMap template_map = course::encode_tiled(exercise::placeholder_request(gmem_placeholder.data()));
  gmem_map.upload(&template_map);  // the slot holds a valid map before the launch

  exercise::launch_retarget(template_map, batch_param(plan), gmem_in.data(), gmem_out.data(), gmem_map.data());
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(in.size());
  gmem_out.download(out.data());

  // Inside each matrix: the input. The padding and the gaps between tensors: the poison.
  std::vector<float> expected(in.size(), course::poison_value<float>());
  for (const TensorLayout& t : plan.tensors) {
    for (int r = 0; r < t.rows; ++r) {
      for (int c = 0; c < t.cols; ++c) {
        const std::int64_t i = t.offset_elems + std::int64_t{r} * t.pitch_elems + c;
        expected[i] = in[i];
      }
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (bits(out[i]) == bits(expected[i])) continue;
    std::ostringstream line;
    line << shapes.size() << " tensors: ";
    for (std::size_t t = 0; t < plan.tensors.size(); ++t) {
      const TensorLayout& l = plan.tensors[t];
      const std::int64_t local = static_cast<std::int64_t>(i) - l.offset_elems;
      if (local < 0 || local >= std::int64_t{l.rows} * l.pitch_elems) continue;
      line << "tensor " << t << " (" << l.rows << " x " << l.cols << " floats), row " << local / l.pitch_elems
           << ", column " << local % l.pitch_elems << ": ";
    }
    line << "0x" << std::hex << bits(out[i]) << ", expected 0x" << bits(expected[i]);
    if (out[i] == kPlaceholderValue) {
      line << ": a value of the template's placeholder matrix, so the copy used a map that still points there";
    } else if (bits(out[i]) == bits(course::poison_value<float>())) {
      line << ": never written";
    } else {
      for (std::size_t j = 0; j < in.size(); ++j) {
        if (bits(in[j]) == bits(out[i])) {
          line << ": the input's value at element " << std::dec << j << ", so the copy used a map of another place";
          break;
        }
      }
    }
    return line.str();
  }
  return "";
}

class Sm90a_ExercisePublishMap : public course::GpuTest {
 protected:
  Sm90a_ExercisePublishMap() : GpuTest({9, 0, true, "tensormap.replace (sm_90a)"}) {}
};

TEST_F(Sm90a_ExercisePublishMap, OneTensorOneTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt({{kTileRows, kTileCols, kTileCols}}); });
}

// Boxes of 8, 64 and 256 floats: each tensor's map differs from the last one's in every field
// the kernel replaces.
TEST_F(Sm90a_ExercisePublishMap, ThreeTensorsThroughOneSlot) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt({{40, 8, 8}, {70, 61, 64}, {33, 1001, 1004}}); });
}

// The chapter's awkward widths and pitches (and a tensor narrower than the template's box).
TEST_F(Sm90a_ExercisePublishMap, EightAwkwardTensors) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    return attempt({{130, 250, 260}, {999, 1001, 1004}, {61, 61, 64}, {1, 4093, 4096}, {77, 1, 4}, {33, 257, 268},
                    {32, 256, 256}, {5, 12, 12}});
  });
}

// The acquire has no visible effect on a run that happens to find no stale copy of the map, so its
// presence is read from the machine code: on sm_90a, fence.proxy.tensormap::generic.acquire becomes
// UTMACCTL, an operation on the TMA unit's cache of maps (chapter 09's codegen tests show it).
TEST(HostExercisePublishMapMachineCode, TheLeaderAcquiresTheRewrittenMap) {
  const char* arch = course::own_sass("sm_90a") ? "sm_90a" : "sm_90";  // older cuobjdump files sm_90a under sm_90
  COURSE_SASS_OR_SKIP(sass, arch);
  const std::string kernel = course::sass_kernel_body(sass, "retarget_kernel");
  ASSERT_FALSE(kernel.empty()) << "no retarget_kernel in the " << arch << " machine code";
  EXPECT_GT(course::count_matches(kernel, "UTMALDG"), 0) << "the kernel loads its boxes with TMA";
  EXPECT_GT(course::count_matches(kernel, "UTMACCTL"), 0)
      << "no instruction of retarget_kernel touches the TMA unit's cached copies of maps: the copies through the "
         "rewritten slot are not ordered after the map's new contents";
}

}  // namespace
