// Grades exercise 11.2: the launcher runs in a child process (a fresh process, so no earlier
// test's function attribute helps) with spans of several sizes, from 16 KiB to the largest that
// the device gives one block next to the kernel's static table. Every word of every span must come
// back reversed and mixed with the table; a refused launch or attribute is reported with the size.
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

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kNumSpans = 300;  // more blocks than an H100 holds at once with large spans

// The largest span one block can have: sharedMemPerBlockOptin less the kernel's static table.
std::size_t largest_span_bytes() {
  int device = 0, optin = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, exercise::reverse_span_kernel));
  return (static_cast<std::size_t>(optin) - attributes.sharedSizeBytes) / 16 * 16;
}

std::string describe(std::size_t span_bytes) {
  std::ostringstream text;
  text << "a block with " << span_bytes / double(kKiB) << " KiB of dynamic shared memory (and the kernel's "
       << exercise::kTableWords * sizeof(std::uint32_t) / kKiB << " KiB static table)";
  return text.str();
}

// Launches with one span size and checks every word; "" or what went wrong.
std::string run_span(std::size_t span_bytes) {
  const std::size_t span_words = span_bytes / sizeof(std::uint32_t);
  std::vector<std::uint32_t> in(kNumSpans * span_words), table(exercise::kTableWords);
  course::fill_pattern(in, 3);
  course::fill_pattern(table, 4);
  course::DeviceBuffer<std::uint32_t> gmem_in(in.size()), gmem_out(in.size()), gmem_table(table.size());
  gmem_in.upload(in.data());
  gmem_table.upload(table.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  try {
    exercise::launch_reverse(gmem_in.data(), gmem_out.data(), gmem_table.data(), kNumSpans, span_bytes);
    COURSE_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& error) {
    return describe(span_bytes) + " was refused: " + error.what();
  }
  std::vector<std::uint32_t> out(in.size());
  gmem_out.download(out.data());
  for (std::size_t s = 0; s < kNumSpans; ++s) {
    for (std::size_t i = 0; i < span_words; ++i) {
      const std::uint32_t want = in[s * span_words + span_words - 1 - i] ^ table[i % exercise::kTableWords];
      if (out[s * span_words + i] != want) {
        std::ostringstream line;
        line << describe(span_bytes) << ": span " << s << ", word " << i << " is 0x" << std::hex
             << out[s * span_words + i] << ", expected 0x" << want;
        return line.str();
      }
    }
  }
  return "";
}

// Runs the sizes in turn in one process; stops at the first problem.
std::string run_spans(const std::vector<std::size_t>& sizes) {
  for (std::size_t bytes : sizes) {
    const std::string problem = run_span(bytes);
    if (!problem.empty()) return problem;
  }
  return "";
}

class Sm80_ExerciseBigBlock : public course::GpuTest {
 protected:
  Sm80_ExerciseBigBlock() : GpuTest({8, 0, false, "dynamic shared memory beyond 48 KiB per block"}) {}
};

TEST_F(Sm80_ExerciseBigBlock, SixteenThenSixtyFourKiB) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return run_spans({16 * kKiB, 64 * kKiB}); });
}

TEST_F(Sm80_ExerciseBigBlock, TheLargestSpanTheDeviceAllows) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return run_spans({largest_span_bytes()}); });
}

TEST_F(Sm80_ExerciseBigBlock, SizesUpAndDownInOneProcess) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return run_spans({64 * kKiB, 16 * kKiB, largest_span_bytes(), 80 * kKiB}); });
}

}  // namespace
