// Grades exercise 08.1. Each box is loaded into a model of shared memory through the chapter's
// model (swizzle_model.hpp, which the GPU tests of the chapter check against TMA itself): every
// 16-byte chunk carries its (row, chunk) name. The test then looks at the byte you name for each
// chunk, checks that nothing the box writes lies past the footprint you give, and plays the load
// on a model mbarrier with the count you announce.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "swizzle_model.hpp"

namespace {

constexpr std::uint32_t kPatternStart = 8 * 1024;  // a shared-memory address where every pattern starts

struct Box {
  CUtensorMapSwizzle swizzle;
  int inner_bytes;
  int rows;
};

Swizzle model_mode(CUtensorMapSwizzle swizzle) { return static_cast<Swizzle>(static_cast<int>(swizzle)); }

std::string describe(const Box& box) {
  std::ostringstream text;
  text << swizzle_name(model_mode(box.swizzle)) << ", a box of " << box.rows << (box.rows == 1 ? " row" : " rows")
       << " x " << box.inner_bytes << " bytes";
  return text.str();
}

// Every legal box: each mode, each inner width in whole chunks up to the span (256 bytes without a
// swizzle), a few heights.
std::vector<Box> legal_boxes() {
  std::vector<Box> boxes;
  for (CUtensorMapSwizzle swizzle :
       {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B}) {
    const int widest = swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 256 : span_bytes(model_mode(swizzle));
    for (int inner = kChunkBytes; inner <= widest; inner += kChunkBytes) {
      for (int rows : {1, 2, 3, 5, 8, 17}) boxes.push_back({swizzle, inner, rows});
    }
  }
  return boxes;
}

// Loads `box` at `smem_addr` into the model: which chunk of the box TMA writes at each 16-byte
// place, counted from the box's first byte.
std::map<std::uint32_t, std::pair<int, int>> land(const Box& box, std::uint32_t smem_addr) {
  const Swizzle mode = model_mode(box.swizzle);
  const int offset = swizzle_offset(mode, smem_addr);
  std::map<std::uint32_t, std::pair<int, int>> smem;
  for (int r = 0; r < box.rows; ++r) {
    for (int c = 0; c < box.inner_bytes / kChunkBytes; ++c) {
      smem[box_smem_byte(mode, box.inner_bytes, r, c * kChunkBytes, offset)] = {r, c};
    }
  }
  return smem;
}

void check_landing(const Box& box, std::uint32_t smem_addr) {
  const auto smem = land(box, smem_addr);
  for (int r = 0; r < box.rows; ++r) {
    for (int c = 0; c < box.inner_bytes / kChunkBytes; ++c) {
      const std::uint32_t said = chunk_landing_byte(box.swizzle, box.inner_bytes, r, c, smem_addr);
      const auto found = smem.find(said);
      if (found != smem.end() && found->second == std::make_pair(r, c)) continue;
      std::ostringstream where;
      where << describe(box) << " written at shared address " << smem_addr << " (" << (smem_addr - kPatternStart)
            << " bytes past a 1024-byte boundary): you place chunk " << c << " of row " << r << " at byte " << said
            << ", ";
      if (said % kChunkBytes != 0) {
        FAIL() << where.str() << "which is not where any chunk starts: a swizzle moves whole 16-byte chunks";
      } else if (found == smem.end()) {
        FAIL() << where.str() << "where TMA writes no chunk of this box";
      } else {
        FAIL() << where.str() << "where TMA puts chunk " << found->second.second << " of row " << found->second.first;
      }
    }
  }
}

TEST(HostExerciseBoxLanding, TheChaptersBoxes) {
  // The lesson's load box (64 rows of 32 floats) and the guide's 8 x 8 int4 tile, 1024-byte aligned.
  check_landing({CU_TENSOR_MAP_SWIZZLE_128B, 128, 64}, kPatternStart);
  check_landing({CU_TENSOR_MAP_SWIZZLE_128B, 128, 8}, kPatternStart);
  check_landing({CU_TENSOR_MAP_SWIZZLE_NONE, 128, 8}, kPatternStart);
}

TEST(HostExerciseBoxLanding, ABufferThatStartsInsideThePattern) {
  // The guide's tile placed 384 bytes past a 1024-byte boundary: its first row is pattern row 3.
  check_landing({CU_TENSOR_MAP_SWIZZLE_128B, 128, 8}, kPatternStart + 384);
  check_landing({CU_TENSOR_MAP_SWIZZLE_64B, 64, 8}, kPatternStart + 384);
}

TEST(HostExerciseBoxLanding, BoxesNarrowerThanTheSpan) {
  check_landing({CU_TENSOR_MAP_SWIZZLE_128B, 64, 8}, kPatternStart);
  check_landing({CU_TENSOR_MAP_SWIZZLE_64B, 32, 8}, kPatternStart);
  check_landing({CU_TENSOR_MAP_SWIZZLE_32B, 16, 8}, kPatternStart);
}

TEST(HostExerciseBoxLanding, EveryLegalBoxAtEveryPlaceOfThePattern) {
  for (const Box& box : legal_boxes()) {
    for (std::uint32_t shift = 0; shift < 1024; shift += kRowBytes) {
      check_landing(box, kPatternStart + shift);
      if (HasFatalFailure()) return;
    }
  }
}

// What the box writes at each 128-byte place of the pattern, its last byte the furthest.
TEST(HostExerciseBoxLanding, TheFootprintHoldsTheBoxWhereverItIsPlaced) {
  for (const Box& box : legal_boxes()) {
    const std::uint32_t footprint = box_footprint_bytes(box.swizzle, box.inner_bytes, box.rows);
    std::uint32_t furthest = 0;
    for (std::uint32_t shift = 0; shift < 1024; shift += kRowBytes) {
      const auto smem = land(box, kPatternStart + shift);
      const std::uint32_t end = smem.rbegin()->first + kChunkBytes;
      ASSERT_LE(end, footprint) << describe(box) << ", " << shift << " bytes past a 1024-byte boundary: TMA writes "
                                << "up to byte " << end - 1 << " of the box, past the " << footprint
                                << " bytes you allocate for it. Whatever follows the box in shared memory would be "
                                   "overwritten";
      furthest = std::max(furthest, end);
    }
    ASSERT_TRUE(footprint == furthest) << describe(box) << ": you allocate " << footprint
                                       << " bytes, more than the box writes wherever it is placed";
  }
}

// The leader's arrive.expect_tx first, then the rows land one by one (with or without a swizzle,
// TMA counts what it delivers as it delivers it).
TEST(HostExerciseBoxLanding, TheAnnouncedBytesCompleteThePhaseWithTheLastRow) {
  for (const Box& box : legal_boxes()) {
    const std::uint32_t announced = box_expect_tx_bytes(box.swizzle, box.inner_bytes, box.rows);
    const course::LoadVerdict verdict = course::play_load(announced, box.rows, box.inner_bytes);
    ASSERT_EQ(verdict, course::LoadVerdict::exact)
        << describe(box) << ": announcing " << announced << " bytes " << course::load_verdict_text(verdict);
  }
}

}  // namespace
