// Grades exercise 02.2: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on one tile, on six tiles through one block, and on 1000 tiles
// over the whole grid, with a position-dependent input. Every output is compared with the host's
// sum; a sum that contains the window's marker says how many slots had not landed when the thread
// read them. A kernel still running long after any bounded wait would have fired is stuck in a
// wait without a bound; the child then says so and ends.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"
#include "course/wait_limit.hpp"

namespace {

using exercise::kHalo;
using exercise::kNotLanded;
using exercise::kTileElems;

void start_watchdog() {
  const long long seconds = static_cast<long long>(course::wait_limit_ns(COURSE_WAIT_LIMIT_NS) / 1'000'000'000ull) + 20;
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::fprintf(stderr,
                 "the kernel was still running after %lld s and no bounded wait fired: its threads are stuck in a "
                 "wait that has no bound (wait through course::bounded_wait, which names what it waited for)\n",
                 seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

std::string attempt(std::size_t num_tiles, unsigned max_blocks) {
  start_watchdog();
  std::vector<float> padded(num_tiles * kTileElems + 2 * kHalo);
  course::fill_pattern(padded, 2);  // multiples of 1/256 below 64: every 17-term sum is exact
  course::DeviceBuffer<float> gmem_padded(padded.size());
  course::DeviceBuffer<float> gmem_out(num_tiles * kTileElems);
  gmem_padded.upload(padded.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_halo_arrivals(gmem_padded.data(), gmem_out.data(), num_tiles, max_blocks);
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

class Sm80_ExerciseHaloArrivals : public course::GpuTest {
 protected:
  Sm80_ExerciseHaloArrivals() : GpuTest({8, 0, false, "cp.async (LDGSTS) completing on an mbarrier"}) {}
};

TEST_F(Sm80_ExerciseHaloArrivals, OneTile) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm80_ExerciseHaloArrivals, SixTilesThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(6, 1); });
}
TEST_F(Sm80_ExerciseHaloArrivals, ManyTilesOverTheGrid) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1000, 0); });
}

}  // namespace
