// Grades exercise 08.4 against the chapter's model (swizzle_model.hpp): every lane's byte where
// box_smem_byte() puts it, every instruction counted by count_bank_conflicts(). The sweep is every
// row width from 16 to 256 bytes, reads of 4, 8 and 16 bytes a lane, down the columns, row by row,
// both, and 300 patterns of scattered reads; each rule of the choice is one test.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "swizzle_model.hpp"

namespace {

constexpr int kLanes = 32;
constexpr int kBoxRows = 32;       // the rows the columns and row-by-row patterns read
constexpr int kWidestRow = 256;    // bytes; the sweep's row widths: 16, 32, ..., 256
constexpr int kMostSentences = 3;  // failures a test reports before it stops

struct Case {
  ReadPattern reads;
  std::string what;  // "rows of 64 bytes read down their columns, 16 bytes a lane,"
};

Swizzle model_mode(CUtensorMapSwizzle swizzle) {
  return static_cast<Swizzle>(static_cast<int>(swizzle));
}
bool is_a_mode(CUtensorMapSwizzle swizzle) {
  return swizzle >= CU_TENSOR_MAP_SWIZZLE_NONE && swizzle <= CU_TENSOR_MAP_SWIZZLE_128B;
}
std::string mode_text(CUtensorMapSwizzle swizzle) {
  if (swizzle == CU_TENSOR_MAP_SWIZZLE_NONE) return "no swizzle";
  return is_a_mode(swizzle) ? swizzle_tag(model_mode(swizzle))
                            : "mode " + std::to_string(static_cast<int>(swizzle));
}
constexpr CUtensorMapSwizzle kModes[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                         CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
bool holds(CUtensorMapSwizzle swizzle, int row_bytes) {
  return is_a_mode(swizzle) && box_fits_span(model_mode(swizzle), row_bytes);
}

// What the pattern costs with the box loaded with `swizzle`, in the model.
int model_wavefronts(CUtensorMapSwizzle swizzle, const ReadPattern& reads) {
  int wavefronts = 0;
  for (const std::vector<BoxSpot>& instruction : reads.instructions) {
    std::vector<std::uint32_t> lane_bytes;
    for (const BoxSpot& spot : instruction) {
      lane_bytes.push_back(
          box_smem_byte(model_mode(swizzle), reads.row_bytes, spot.row, spot.byte));
    }
    wavefronts += count_bank_conflicts(lane_bytes, reads.access_bytes).wavefronts;
  }
  return wavefronts;
}

// One instruction per column: lane l reads the column's element in row l.
std::vector<std::vector<BoxSpot>> down_the_columns(int row_bytes, int access_bytes) {
  std::vector<std::vector<BoxSpot>> instructions;
  for (int byte = 0; byte < row_bytes; byte += access_bytes) {
    std::vector<BoxSpot> lanes;
    for (int lane = 0; lane < kLanes; ++lane) lanes.push_back({lane, byte});
    instructions.push_back(lanes);
  }
  return instructions;
}
// The box's elements in the order they lie in global memory, 32 to an instruction.
std::vector<std::vector<BoxSpot>> row_by_row(int row_bytes, int access_bytes) {
  std::vector<std::vector<BoxSpot>> instructions;
  for (int first = 0; first < kBoxRows * row_bytes; first += kLanes * access_bytes) {
    std::vector<BoxSpot> lanes;
    for (int lane = 0; lane < kLanes; ++lane) {
      const int byte = first + lane * access_bytes;
      lanes.push_back({byte / row_bytes, byte % row_bytes});
    }
    instructions.push_back(lanes);
  }
  return instructions;
}

std::string rows_of(int row_bytes) { return "rows of " + std::to_string(row_bytes) + " bytes"; }

// Every row width and lane size, read down the columns, row by row, and both.
std::vector<Case> swept_cases() {
  std::vector<Case> cases;
  for (const std::string way :
       {"down their columns", "row by row", "down their columns and row by row"}) {
    for (int access_bytes : {16, 8, 4}) {
      for (int row_bytes = kChunkBytes; row_bytes <= kWidestRow; row_bytes += kChunkBytes) {
        ReadPattern reads{row_bytes, access_bytes, {}};
        if (way != "row by row") reads.instructions = down_the_columns(row_bytes, access_bytes);
        if (way != "down their columns") {
          for (const auto& instruction : row_by_row(row_bytes, access_bytes)) {
            reads.instructions.push_back(instruction);
          }
        }
        cases.push_back({reads, rows_of(row_bytes) + " read " + way + ", " +
                                    std::to_string(access_bytes) + " bytes a lane,"});
      }
    }
  }
  // Scattered reads: 1 to 4 instructions of 1 to 32 lanes, each at a random element of the box.
  std::mt19937 random(84);
  for (int n = 1; n <= 300; ++n) {
    const int widths = kWidestRow / kChunkBytes;
    const int row_bytes = kChunkBytes * (1 + static_cast<int>(random() % widths));
    const int access_bytes = 4 << (random() % 3);
    ReadPattern reads{row_bytes, access_bytes, {}};
    const int count = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < count; ++i) {
      std::vector<BoxSpot> lanes(1 + random() % kLanes);
      for (BoxSpot& spot : lanes) {
        spot = {static_cast<int>(random() % kBoxRows),
                static_cast<int>(random() % (row_bytes / access_bytes)) * access_bytes};
      }
      reads.instructions.push_back(lanes);
    }
    cases.push_back({reads, rows_of(row_bytes) + " read at scattered places, " +
                                std::to_string(access_bytes) + " bytes a lane (scattered pattern " +
                                std::to_string(n) + ", " + std::to_string(count) +
                                (count == 1 ? " instruction)," : " instructions),")});
  }
  return cases;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = swept_cases();
  return all;
}

// Runs `verdict` on every case and reports the first few of its sentences.
template <class Verdict>
void grade(Verdict verdict) {
  int reported = 0;
  for (const Case& c : cases()) {
    const std::optional<std::string> wrong = verdict(c);
    if (!wrong) continue;
    ADD_FAILURE() << *wrong;
    if (++reported == kMostSentences) return;
  }
}

TEST(HostExerciseSwizzleChoice, CountsTheWavefrontsOfEveryModeThatHoldsTheBox) {
  grade([](const Case& c) -> std::optional<std::string> {
    for (CUtensorMapSwizzle swizzle : kModes) {
      if (!holds(swizzle, c.reads.row_bytes)) continue;
      const int want = model_wavefronts(swizzle, c.reads);
      const int got = pattern_wavefronts(swizzle, c.reads);
      if (got == want) continue;
      std::ostringstream text;
      text << "with " << mode_text(swizzle) << ", " << c.what << " you count " << got
           << " wavefronts; the model counts " << (got < want ? "more" : "fewer");
      return text.str();
    }
    return std::nullopt;
  });
}

TEST(HostExerciseSwizzleChoice, ChoosesAModeThatHoldsTheBox) {
  grade([](const Case& c) -> std::optional<std::string> {
    const CUtensorMapSwizzle chosen = choose_swizzle(c.reads);
    if (holds(chosen, c.reads.row_bytes)) return std::nullopt;
    std::ostringstream text;
    text << "for " << c.what << " you choose " << mode_text(chosen);
    if (!is_a_mode(chosen)) {
      text << ", which is not one of the four modes of compute capability 9.0";
    } else {
      text << ", which this box cannot use: its rows are wider than the "
           << span_bytes(model_mode(chosen)) << "-byte span";
    }
    return text.str();
  });
}

TEST(HostExerciseSwizzleChoice, ChoosesTheFewestWavefronts) {
  grade([](const Case& c) -> std::optional<std::string> {
    const CUtensorMapSwizzle chosen = choose_swizzle(c.reads);
    if (!holds(chosen, c.reads.row_bytes)) return std::nullopt;  // the test above says why
    int fewest = model_wavefronts(CU_TENSOR_MAP_SWIZZLE_NONE, c.reads);
    for (CUtensorMapSwizzle swizzle : kModes) {
      if (holds(swizzle, c.reads.row_bytes)) {
        fewest = std::min(fewest, model_wavefronts(swizzle, c.reads));
      }
    }
    const int got = model_wavefronts(chosen, c.reads);
    if (got == fewest) return std::nullopt;
    std::ostringstream text;
    text << "for " << c.what << " you choose " << mode_text(chosen) << ": its reads take " << got
         << " wavefronts, and another mode this box can use reads them in " << fewest;
    return text.str();
  });
}

TEST(HostExerciseSwizzleChoice, BreaksATieWithTheSmallestSpan) {
  grade([](const Case& c) -> std::optional<std::string> {
    const CUtensorMapSwizzle chosen = choose_swizzle(c.reads);
    if (!holds(chosen, c.reads.row_bytes)) return std::nullopt;
    const int got = model_wavefronts(chosen, c.reads);
    for (CUtensorMapSwizzle smaller : kModes) {
      if (smaller >= chosen) break;  // kModes runs from the smallest span up
      if (!holds(smaller, c.reads.row_bytes) || model_wavefronts(smaller, c.reads) > got) continue;
      if (model_wavefronts(smaller, c.reads) < got) return std::nullopt;  // the test above says why
      std::ostringstream text;
      text << "for " << c.what << " you choose " << mode_text(chosen) << ", which reads them in "
           << got << " wavefronts, but so does a mode of a smaller span, and a tie goes to the "
           << "smallest";
      return text.str();
    }
    return std::nullopt;
  });
}

}  // namespace
