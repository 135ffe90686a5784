// Grades exercise 06.2: split_for_bulk() on ranges of every start modulo 32 and many lengths, from
// empty to larger than a lesson's stage. The parts must add up to the range, the body must obey
// the bulk-copy rules, and no whole aligned unit may be left to the threads.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace {

constexpr std::uintptr_t kBase = 0x7f3a00000000;  // a 16-byte aligned address of a large buffer

// "" when the split is right, else what is wrong with it.
std::string check(std::uintptr_t addr, std::size_t num_bytes) {
  const BulkSplit split = split_for_bulk(addr, num_bytes);
  std::ostringstream what;
  what << "range of " << num_bytes << " bytes at 0x" << std::hex << addr << std::dec << " (" << addr % 16
       << " bytes past a 16-byte boundary), split " << split.head_bytes << " + " << split.body_bytes << " + "
       << split.tail_bytes << ": ";
  if (split.head_bytes + split.body_bytes + split.tail_bytes != num_bytes) {
    what << "the parts do not add up to the range";
    return what.str();
  }
  if (split.body_bytes % kBulkAlignBytes != 0) {
    what << "a bulk copy of " << split.body_bytes << " bytes is not whole 16-byte units";
    return what.str();
  }
  const std::uintptr_t body_addr = addr + split.head_bytes;
  if (split.body_bytes != 0 && body_addr % kBulkAlignBytes != 0) {
    what << "the bulk copy would start at global address 0x" << std::hex << body_addr << std::dec
         << ", which is not 16-byte aligned (nor is its shared-memory destination, at the same offset)";
    return what.str();
  }
  // Whole aligned units inside the range, counted one by one.
  std::size_t units = 0;
  for (std::uintptr_t a = (addr + 15) / 16 * 16; a + 16 <= addr + num_bytes; a += 16) ++units;
  if (split.body_bytes < units * kBulkAlignBytes) {
    what << "the threads are left " << units * kBulkAlignBytes - split.body_bytes
         << " bytes in whole aligned 16-byte units, which the bulk copy could have moved";
    return what.str();
  }
  return "";
}

TEST(HostExerciseBulkSplit, AlignedRangesAreOneBulkCopy) {
  for (std::size_t n : {16, 48, 4096, 32768, 200000}) {
    const std::string problem = check(kBase, n);
    if (!problem.empty()) ADD_FAILURE() << problem;
  }
}

TEST(HostExerciseBulkSplit, EveryStartAndShortLengths) {
  for (std::uintptr_t offset = 0; offset < 32; ++offset) {
    for (std::size_t n = 0; n <= 100; ++n) {
      const std::string problem = check(kBase + offset, n);
      if (!problem.empty()) FAIL() << problem;
    }
  }
}

TEST(HostExerciseBulkSplit, RangesWithNoWholeAlignedUnit) {
  const std::size_t cases[][2] = {{1, 15}, {3, 10}, {8, 16}, {15, 16}, {9, 22}};  // {offset, bytes}
  for (const auto& c : cases) {
    const std::string problem = check(kBase + c[0], c[1]);
    if (!problem.empty()) ADD_FAILURE() << problem;
  }
}

TEST(HostExerciseBulkSplit, LargeRangesAtOddStarts) {
  for (std::uintptr_t offset : {1, 4, 7, 12, 15}) {
    for (std::size_t n : {4096, 4100, 32768 + 3, 200000 + 11}) {
      const std::string problem = check(kBase + offset, n);
      if (!problem.empty()) ADD_FAILURE() << problem;
    }
  }
}

}  // namespace
