// The check both halo exercises' tests make (halo_arrivals_test.cu, own_copies_test.cu): one run
// of the student's kernel on a position-dependent input, every output compared with the host's
// sum. Included by a test after COURSE_EXERCISE: it reads the starter's kHalo, kTileElems and
// kNotLanded, which both halo exercises define alike.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/pattern.hpp"

namespace halo_check {

// An exercise's launcher: the padded input, the output, the number of tiles and the most blocks
// it may use (0: the exercise's own limit).
using HaloLaunch = void (*)(const float* gmem_padded, float* gmem_out, std::size_t num_tiles, unsigned max_blocks);

// For course::attempt_and_exit: "" when every output is the sum of its 17 window elements, else
// one line on the first wrong one; a sum that contains the window's marker says how many slots
// had not landed when the thread read them.
inline std::string attempt_halo_window(HaloLaunch launch, std::size_t num_tiles, unsigned max_blocks) {
  using exercise::kHalo;
  using exercise::kNotLanded;
  using exercise::kTileElems;
  std::vector<float> padded(num_tiles * kTileElems + 2 * kHalo);
  course::fill_pattern(padded, 2);  // multiples of 1/256 below 64: every 17-term sum is exact
  course::DeviceBuffer<float> gmem_padded(padded.size());
  course::DeviceBuffer<float> gmem_out(num_tiles * kTileElems);
  gmem_padded.upload(padded.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  launch(gmem_padded.data(), gmem_out.data(), num_tiles, max_blocks);
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

}  // namespace halo_check
