// Grades exercise 12.3: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on one cluster and on grids of many clusters, with one k-tile (no
// stage is used twice) and with many (every stage many times, both parities). Every block's sums
// are compared with the host's, element by element, and the output is poisoned first.
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

using exercise::kPanelElems;

std::string attempt(int num_column_bands, int num_row_bands, int num_k_tiles) {
  std::vector<std::uint32_t> a(std::size_t(num_row_bands) * num_k_tiles * kPanelElems);
  std::vector<std::uint32_t> b(std::size_t(num_column_bands) * num_k_tiles * kPanelElems);
  course::fill_pattern(a, 1);
  course::fill_pattern(b, 2);
  const std::size_t num_out = std::size_t(num_row_bands) * num_column_bands * kPanelElems;
  course::DeviceBuffer<std::uint32_t> gmem_a(a.size()), gmem_b(b.size()), gmem_out(num_out);
  gmem_a.upload(a.data());
  gmem_b.upload(b.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_panels(gmem_a.data(), gmem_b.data(), gmem_out.data(), num_column_bands, num_row_bands, num_k_tiles);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(num_out);
  gmem_out.download(out.data());
  for (int by = 0; by < num_row_bands; ++by) {
    for (int bx = 0; bx < num_column_bands; ++bx) {
      const std::uint32_t* got = out.data() + (std::size_t(by) * num_column_bands + bx) * kPanelElems;
      for (int i = 0; i < kPanelElems; ++i) {
        std::uint32_t want = 0;
        for (int kt = 0; kt < num_k_tiles; ++kt) {
          want += a[(std::size_t(by) * num_k_tiles + kt) * kPanelElems + i] *
                  b[(std::size_t(bx) * num_k_tiles + kt) * kPanelElems + exercise::partner(i)];
        }
        if (got[i] != want) {
          std::ostringstream line;
          line << num_column_bands << " x " << num_row_bands << " blocks, " << num_k_tiles << " k-tiles: block (" << bx
               << "," << by << "), element " << i << " is 0x" << std::hex << got[i] << ", expected 0x" << want
               << (got[i] == course::poison_value<std::uint32_t>() ? " (never written)" : "");
          return line.str();
        }
      }
    }
  }
  return "";
}

class Sm90a_ExerciseReleaseWriters : public course::GpuTest {
 protected:
  Sm90a_ExerciseReleaseWriters() : GpuTest({9, 0, true, "TMA multicast (sm_90a)"}) {}
};

TEST_F(Sm90a_ExerciseReleaseWriters, OneClusterOneKTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(2, 2, 1); });  // no stage is used twice
}
TEST_F(Sm90a_ExerciseReleaseWriters, OneClusterEveryStageTwice) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(2, 2, 2 * exercise::kStages); });
}
TEST_F(Sm90a_ExerciseReleaseWriters, OneClusterManyKTiles) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(2, 2, 65); });
}
TEST_F(Sm90a_ExerciseReleaseWriters, ManyClusters) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(12, 8, 24); }); }
TEST_F(Sm90a_ExerciseReleaseWriters, MoreClustersThanFitAtOnce) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(64, 48, 7); });
}

}  // namespace
