// Grades exercise 10.3: the ring runs in a child process (a bounded wait that stops it must not take
// the test process with it) for one message, three messages (the first reuse of a buffer) and many
// messages in many clusters, and every block's output (per thread the digest of all it received,
// then the last message) is compared with the chapter's reference, guard band included.
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

constexpr std::size_t kGuardElems = 64;  // after the last block's output: nothing may write there

std::string attempt(unsigned num_clusters, std::uint32_t num_iterations) {
  const RingShape shape{num_clusters, exercise::kRingBlocks, num_iterations};
  const std::vector<std::uint32_t> expected = reference(shape);
  course::DeviceBuffer<std::uint32_t> gmem_out(expected.size() + kGuardElems);
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_ring(gmem_out.data(), num_clusters, num_iterations);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(expected.size() + kGuardElems);
  gmem_out.download(out.data());
  const std::uint32_t poison = course::poison_value<std::uint32_t>();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool guard = i >= expected.size();
    const std::uint32_t want = guard ? poison : expected[i];
    if (out[i] == want) continue;
    std::ostringstream line;
    line << num_clusters << " clusters of " << exercise::kRingBlocks << ", " << num_iterations << " messages: ";
    if (guard) {
      line << "the guard element " << i - expected.size() << " after the output was overwritten";
      return line.str();
    }
    const std::size_t block = i / kOutElemsPerBlock, at = i % kOutElemsPerBlock;
    line << "block " << block << " (rank " << block % exercise::kRingBlocks << " of cluster "
         << block / exercise::kRingBlocks << "): ";
    if (at < static_cast<std::size_t>(kThreads)) {
      line << "the digest of thread " << at << " is 0x" << std::hex << out[i] << ", expected 0x" << want;
    } else {
      line << "word " << at - kThreads << " of the last message it received is 0x" << std::hex << out[i]
           << ", expected 0x" << want;
    }
    if (out[i] == poison) line << " (never written)";
    return line.str();
  }
  return "";
}

class Sm90_ExerciseStasRingRepair : public course::GpuTest {
 protected:
  Sm90_ExerciseStasRingRepair() : GpuTest({9, 0, false, "thread block clusters and st.async"}) {}
};

TEST_F(Sm90_ExerciseStasRingRepair, OneMessage) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 1); }); }
TEST_F(Sm90_ExerciseStasRingRepair, ThreeMessagesReuseABuffer) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 3); });
}
TEST_F(Sm90_ExerciseStasRingRepair, ManyMessagesInManyClusters) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(33, 1001); });
}

}  // namespace
