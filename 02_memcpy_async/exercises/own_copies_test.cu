// Grades exercise 02.3: the kernel runs in a child process on one tile, on six tiles through one
// block, and on 1000 tiles over the whole grid, with a position-dependent input. Every output is
// compared with the host's sum; a sum that contains the window's marker says how many slots had
// not landed when the thread read them.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

using exercise::kHalo;
using exercise::kNotLanded;
using exercise::kTileElems;

std::string attempt(std::size_t num_tiles, unsigned max_blocks) {
  std::vector<float> padded(num_tiles * kTileElems + 2 * kHalo);
  course::fill_pattern(padded, 2);  // multiples of 1/256 below 64: every 17-term sum is exact
  course::DeviceBuffer<float> gmem_padded(padded.size());
  course::DeviceBuffer<float> gmem_out(num_tiles * kTileElems);
  gmem_padded.upload(padded.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_own_copies(gmem_padded.data(), gmem_out.data(), num_tiles, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(num_tiles * kTileElems);
  gmem_out.download(out.data());
  for (std::size_t i = 0; i < out.size(); ++i) {
    float want = 0;
    for (int k = 0; k <= 2 * kHalo; ++k) want += padded[i + k];
    if (out[i] == want) continue;
    std::ostringstream line;
    line << num_tiles << " tiles: output " << i % kTileElems << " of tile " << i / kTileElems << " (thread "
         << i % kTileElems << ") is " << out[i] << ", expected " << want;
    const long markers = std::lround(out[i] / kNotLanded);
    if (out[i] == course::poison_value<float>()) {
      line << ": never written";
    } else if (markers > 0) {
      line << ": the thread summed " << markers << " window slot" << (markers > 1 ? "s" : "")
           << " that still held the marker, kNotLanded; it computed before they had landed";
    }
    return line.str();
  }
  return "";
}

class Sm80_ExerciseOwnCopies : public course::GpuTest {
 protected:
  Sm80_ExerciseOwnCopies() : GpuTest({8, 0, false, "cp.async (LDGSTS) and its commit and wait groups"}) {}
};

TEST_F(Sm80_ExerciseOwnCopies, OneTile) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseOwnCopies, SixTilesThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(6, 1); });
}
TEST_F(Sm80_ExerciseOwnCopies, ManyTilesOverTheGrid) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1000, 0); });
}

}  // namespace
