// Grades exercise 06.3: the ring runs in a child process (a bounded wait that stops it must not
// take the test process with it) on arrays of whole stages, with a ragged last tile, with fewer
// tiles than stages, and with many tiles through two blocks. Every element must come out as
// modify(input), and the guard band after the array must keep its poison.
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

constexpr std::size_t kGuardElems = 64;  // after the array: no store may reach them

std::string attempt(std::size_t num_bytes, unsigned max_blocks) {
  const std::size_t num_elems = num_bytes / sizeof(std::uint32_t);
  std::vector<std::uint32_t> in(num_elems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(num_elems);
  course::DeviceBuffer<std::uint32_t> gmem_out(num_elems + kGuardElems);
  course::DeviceBuffer<unsigned long long> gmem_next_tile(1);
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_ring(gmem_in.data(), gmem_out.data(), num_bytes, gmem_next_tile.data(), max_blocks);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(num_elems + kGuardElems);
  gmem_out.download(out.data());
  const std::uint32_t poison = course::poison_value<std::uint32_t>();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool guard = i >= num_elems;
    const std::uint32_t want = guard ? poison : modify(in[i]);
    if (out[i] != want) {
      std::ostringstream line;
      line << num_bytes << " bytes, at most " << max_blocks << " blocks: ";
      if (guard) {
        line << "the guard element " << i - num_elems << " after the array was overwritten";
      } else {
        line << "element " << i << " (tile " << i / exercise::kStageElems << ") is 0x" << std::hex << out[i]
             << ", expected 0x" << want << (out[i] == poison ? " (never written)" : "");
      }
      return line.str();
    }
  }
  return "";
}

class Sm90_ExerciseRingRepair : public course::GpuTest {
 protected:
  Sm90_ExerciseRingRepair() : GpuTest({9, 0, false, "cp.async.bulk (TMA) and mbarrier transaction counts"}) {}
};

TEST_F(Sm90_ExerciseRingRepair, OneWholeStage) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kStageBytes, 264); });
}
TEST_F(Sm90_ExerciseRingRepair, WholeStagesOnly) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1000 * exercise::kStageBytes, 264); });
}
TEST_F(Sm90_ExerciseRingRepair, RaggedLastTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(777 * exercise::kStageBytes + 48, 264); });
}
TEST_F(Sm90_ExerciseRingRepair, SixteenBytes) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(16, 264); }); }
TEST_F(Sm90_ExerciseRingRepair, ManyTilesThroughTwoBlocks) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(61 * exercise::kStageBytes + 16, 2); });
}

}  // namespace
