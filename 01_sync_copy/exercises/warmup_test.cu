// Grades exercise 01.0, the warm-up: each kernel runs in a child process on sizes from one element
// to a few million (not multiples of a block, a tile or the grid), on a position-dependent input,
// with the output poisoned first and a guard band after it that must stay untouched. The first
// wrong element or tile is named, with what it holds and what it should.
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

constexpr std::size_t kGuardElems = 1024;  // after every output: must still hold the poison
constexpr std::uint32_t kScale = 2654435761u;

std::string hex(std::uint32_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

std::string attempt_axpy(std::size_t n) {
  std::vector<std::uint32_t> x(n), y(n);
  course::fill_pattern(x);
  for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<std::uint32_t>(i * 7u + 3u);
  course::DeviceBuffer<std::uint32_t> gmem_x(n), gmem_y(n + kGuardElems);
  gmem_x.upload(x.data());
  gmem_y.fill_bytes(course::kPoisonByte);
  COURSE_CHECK(cudaMemcpy(gmem_y.data(), y.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  exercise::launch_axpy(kScale, gmem_x.data(), gmem_y.data(), n);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(n + kGuardElems);
  gmem_y.download(out.data());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = kScale * x[i] + y[i];
    if (out[i] == want) continue;
    std::ostringstream line;
    line << "axpy on " << n << " elements: y[" << i << "] is " << hex(out[i]) << ", expected a * x[i] + y[i] = "
         << hex(want);
    if (out[i] == y[i]) line << ": the kernel never updated it (does the loop reach every element?)";
    return line.str();
  }
  for (std::size_t i = n; i < n + kGuardElems; ++i) {
    if (out[i] != course::poison_value<std::uint32_t>()) {
      return "axpy on " + std::to_string(n) + " elements: it wrote y[" + std::to_string(i) +
             "], past the last element (check i < n)";
    }
  }
  return "";
}

std::string attempt_tile_sum(std::size_t n) {
  std::vector<std::uint32_t> x(n);
  course::fill_pattern(x);
  const std::size_t tiles = exercise::num_tiles(n);
  course::DeviceBuffer<std::uint32_t> gmem_x(n), gmem_sums(tiles + kGuardElems);
  gmem_x.upload(x.data());
  gmem_sums.fill_bytes(course::kPoisonByte);
  exercise::launch_tile_sum(gmem_x.data(), gmem_sums.data(), n);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> sums(tiles + kGuardElems);
  gmem_sums.download(sums.data());
  for (std::size_t t = 0; t < tiles; ++t) {
    std::uint32_t want = 0;
    const std::size_t end = std::min(n, (t + 1) * exercise::kTileElems);
    for (std::size_t i = t * exercise::kTileElems; i < end; ++i) want += x[i];
    if (sums[t] == want) continue;
    std::ostringstream line;
    line << "tile_sum on " << n << " elements: the sum of tile " << t << " (elements " << t * exercise::kTileElems
         << " to " << end - 1 << ") is " << hex(sums[t]) << ", expected " << hex(want);
    if (sums[t] == course::poison_value<std::uint32_t>()) line << ": the block never wrote its sum";
    else if (end - t * exercise::kTileElems < exercise::kTileElems) line << " (the last tile is partial: are the elements past n zero?)";
    return line.str();
  }
  for (std::size_t t = tiles; t < tiles + kGuardElems; ++t) {
    if (sums[t] != course::poison_value<std::uint32_t>()) {
      return "tile_sum on " + std::to_string(n) + " elements: it wrote sums[" + std::to_string(t) +
             "], past the last tile";
    }
  }
  return "";
}

class Sm75_ExerciseWarmup : public course::GpuTest {
 protected:
  Sm75_ExerciseWarmup() : GpuTest({7, 5, false, "the course's build (sm_75 is the oldest target)"}) {}
};

TEST_F(Sm75_ExerciseWarmup, AxpyOneElement) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_axpy(1); }); }
TEST_F(Sm75_ExerciseWarmup, AxpyOddSize) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_axpy(1000003); }); }
TEST_F(Sm75_ExerciseWarmup, AxpyMoreElementsThanThreads) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_axpy((std::size_t{1} << 23) + 5); });
}
TEST_F(Sm75_ExerciseWarmup, TileSumOneElement) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_tile_sum(1); }); }
TEST_F(Sm75_ExerciseWarmup, TileSumWholeTiles) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_tile_sum(exercise::kTileElems * 300); });
}
TEST_F(Sm75_ExerciseWarmup, TileSumPartialLastTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt_tile_sum(exercise::kTileElems * 4001 + 77); });
}

}  // namespace
