// Grades exercise 08.2 against the chapter's bank model (swizzle_model.hpp): the element's stored
// byte from swizzled_byte(), the passes from count_bank_conflicts() on the lanes' stored addresses.
// The model's numbers for the chapter's kernels match what Nsight Compute counts on an H100.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "swizzle_model.hpp"

namespace {

constexpr CUtensorMapSwizzle kModes[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                         CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};

Swizzle model_mode(CUtensorMapSwizzle swizzle) { return static_cast<Swizzle>(static_cast<int>(swizzle)); }

std::uint32_t stored_byte(CUtensorMapSwizzle swizzle, int row, int col) {
  return swizzled_byte(model_mode(swizzle), static_cast<std::uint32_t>(row * kRowBytes + col * kBankBytes));
}

int model_wavefronts(CUtensorMapSwizzle swizzle, const std::vector<LaneRead>& lanes, int access_bytes) {
  std::vector<std::uint32_t> bytes;
  for (const LaneRead& lane : lanes) bytes.push_back(stored_byte(swizzle, lane.row, lane.col));
  return count_bank_conflicts(bytes, access_bytes).wavefronts;
}

// One warp instruction: read_wavefronts() must count what the model counts.
::testing::AssertionResult counts_as_the_hardware(CUtensorMapSwizzle swizzle, const std::vector<LaneRead>& lanes,
                                                  int access_bytes, const std::string& what) {
  const int want = model_wavefronts(swizzle, lanes, access_bytes);
  const int got = read_wavefronts(swizzle, lanes, access_bytes);
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << swizzle_name(model_mode(swizzle)) << ", " << lanes.size()
                                       << (lanes.size() == 1 ? " lane" : " lanes") << " reading " << access_bytes
                                       << " bytes each, " << what << ": you count " << got
                                       << " wavefronts; the hardware needs " << (got < want ? "more" : "fewer");
}

// Lane l reads chunk `chunk` (16 bytes) of row first_row + l * row_step.
std::vector<LaneRead> chunk_column(int chunk, int first_row, int row_step, int lanes) {
  std::vector<LaneRead> reads;
  for (int l = 0; l < lanes; ++l) reads.push_back({first_row + l * row_step, 4 * chunk});
  return reads;
}

TEST(HostExerciseColumnBanks, TheBankOfEveryElement) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    for (int row = 0; row < 32; ++row) {
      for (int col = 0; col < 32; ++col) {
        const int want = static_cast<int>(stored_byte(swizzle, row, col) / kBankBytes % kBankCount);
        const int got = element_bank(swizzle, row, col);
        if (got == want) continue;
        int there = 0;  // the element of the same row that bank `got` does hold
        while (there < 32 && static_cast<int>(stored_byte(swizzle, row, there) / kBankBytes % kBankCount) != got)
          ++there;
        FAIL() << swizzle_name(model_mode(swizzle)) << ": you put element (row " << row << ", col " << col
               << ") in bank " << got << ", but "
               << (there < 32 ? "that bank holds element (row " + std::to_string(row) + ", col " +
                                    std::to_string(there) + ") of the tile"
                              : std::string("there is no such bank"));
      }
    }
  }
}

TEST(HostExerciseColumnBanks, AQuarterWarpReadsAChunkColumnOfEightConsecutiveRows) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    for (int chunk = 0; chunk < kRowChunks; ++chunk) {
      for (int first_row : {0, 3, 8}) {
        ASSERT_TRUE(counts_as_the_hardware(swizzle, chunk_column(chunk, first_row, 1, 8), 16,
                                           "chunk " + std::to_string(chunk) + " of rows " + std::to_string(first_row) +
                                               " to " + std::to_string(first_row + 7)));
      }
    }
  }
}

TEST(HostExerciseColumnBanks, AWarpReadsAChunkColumnOfThirtyTwoRows) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    ASSERT_TRUE(counts_as_the_hardware(swizzle, chunk_column(5, 0, 1, 32), 16, "chunk 5 of rows 0 to 31"));
  }
}

// The lesson's quad transpose with the rows of its quads in order: its lanes read rows four apart.
TEST(HostExerciseColumnBanks, RowsFourApart) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    for (int k = 0; k < kQuadDim; ++k) {
      ASSERT_TRUE(counts_as_the_hardware(
          swizzle, chunk_column(2, k, 4, 8), 16,
          "chunk 2 of rows " + std::to_string(k) + ", " + std::to_string(k + 4) + ", ... " + std::to_string(k + 28)));
    }
  }
}

TEST(HostExerciseColumnBanks, AWarpReadsAColumnOfFloatsOrOfFloatPairs) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    for (int col : {0, 6, 31}) {
      std::vector<LaneRead> lanes;
      for (int row = 0; row < 32; ++row) lanes.push_back({row, col});
      ASSERT_TRUE(counts_as_the_hardware(swizzle, lanes, 4, "float " + std::to_string(col) + " of rows 0 to 31"));
      for (LaneRead& lane : lanes) lane.col &= ~1;
      ASSERT_TRUE(counts_as_the_hardware(
          swizzle, lanes, 8,
          "floats " + std::to_string(col & ~1) + " and " + std::to_string((col & ~1) + 1) + " of rows 0 to 31"));
    }
  }
}

TEST(HostExerciseColumnBanks, LanesAskingForTheSameWordsShareThem) {
  for (CUtensorMapSwizzle swizzle : kModes) {
    ASSERT_TRUE(
        counts_as_the_hardware(swizzle, std::vector<LaneRead>(32, LaneRead{7, 12}), 4, "all of them element (7, 12)"));
    ASSERT_TRUE(
        counts_as_the_hardware(swizzle, std::vector<LaneRead>(32, LaneRead{3, 8}), 16, "all of them chunk 2 of row 3"));
    std::vector<LaneRead> rows;  // a row read whole, by each quarter-warp
    for (int l = 0; l < 32; ++l) rows.push_back({l / 8, 4 * (l % 8)});
    ASSERT_TRUE(counts_as_the_hardware(swizzle, rows, 16, "rows 0 to 3, one whole row per quarter-warp"));
  }
}

TEST(HostExerciseColumnBanks, RandomAccesses) {
  std::mt19937 random(8);
  for (int trial = 0; trial < 2000; ++trial) {
    const CUtensorMapSwizzle swizzle = kModes[random() % 4];
    const int access_bytes = 4 << (random() % 3);
    const int lanes = 1 + static_cast<int>(random() % 32);
    std::vector<LaneRead> reads;
    std::ostringstream what;
    what << "(row, col) per lane:";
    for (int l = 0; l < lanes; ++l) {
      const LaneRead read{static_cast<int>(random() % 32),
                          static_cast<int>(random() % 32) / (access_bytes / 4) * (access_bytes / 4)};
      reads.push_back(read);
      what << " (" << read.row << ", " << read.col << ")";
    }
    ASSERT_TRUE(counts_as_the_hardware(swizzle, reads, access_bytes, what.str()));
  }
}

}  // namespace
