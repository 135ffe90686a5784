// Tests for 08_swizzle (the lesson, the lab and the model): the swizzle function against the
// guide's tables and, on the GPU, against the hardware for every legal box of 1- to 8-byte
// elements at every 128-byte place (a TMA load is the oracle); the committed figures and the
// figure program; the bank model; the quad transpose and the slab orders simulated on the CPU; the
// size rule and the variant tables; what each kernel compiles to; every lesson variant and every
// lab row bit-exact on awkward shapes; a miscounted barrier diagnosed, not hung. The guide's int4
// transpose (transpose_guide.cu) has transpose_guide_test.cu.
#include "swizzle_lab.cu"  // the lab, which brings the lesson and the model
#include "swizzle_figures.cpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

namespace {

constexpr Swizzle kSwizzledModes[] = {Swizzle::b32, Swizzle::b64, Swizzle::b128};

// ---- The swizzle function ------------------------------------------------------------------

TEST(HostSwizzle, SpansAndRepeatsAreTheGuidesTable25) {
  EXPECT_EQ(span_bytes(Swizzle::b128), 128);
  EXPECT_EQ(repeat_bytes(Swizzle::b128), 1024);
  EXPECT_EQ(span_bytes(Swizzle::b64), 64);
  EXPECT_EQ(repeat_bytes(Swizzle::b64), 512);
  EXPECT_EQ(span_bytes(Swizzle::b32), 32);
  EXPECT_EQ(repeat_bytes(Swizzle::b32), 256);
  EXPECT_EQ(pattern_rows(Swizzle::none), 1);
  EXPECT_EQ(tensor_map_swizzle(Swizzle::b64), CU_TENSOR_MAP_SWIZZLE_64B);
  EXPECT_EQ(tensor_map_swizzle(Swizzle::none), CU_TENSOR_MAP_SWIZZLE_NONE);
}

TEST(HostSwizzle, EveryRowIsAPermutationThatKeepsChunksInTheirSpan) {
  for (Swizzle mode : kAllSwizzles) {
    const int span_chunks = span_bytes(mode) / kChunkBytes;
    for (int offset = 0; offset < 8; ++offset) {
      for (int row = 0; row < 16; ++row) {
        int seen = 0;
        for (int chunk = 0; chunk < kRowChunks; ++chunk) {
          const int to = swizzled_chunk(mode, row, chunk, offset);
          ASSERT_GE(to, 0);
          ASSERT_LT(to, kRowChunks);
          EXPECT_EQ(to / span_chunks, chunk / span_chunks) << swizzle_name(mode) << " moved a chunk out of its span";
          seen |= 1 << to;
        }
        EXPECT_EQ(seen, 0xFF) << swizzle_name(mode) << " row " << row << " is not a permutation";
      }
    }
  }
}

TEST(HostSwizzle, IsItsOwnInverseAndRepeats) {
  for (Swizzle mode : kAllSwizzles) {
    for (int row = 0; row < 16; ++row) {
      for (int chunk = 0; chunk < kRowChunks; ++chunk) {
        EXPECT_EQ(swizzled_chunk(mode, row, swizzled_chunk(mode, row, chunk)), chunk);
        EXPECT_EQ(swizzled_chunk(mode, row + pattern_rows(mode), chunk), swizzled_chunk(mode, row, chunk));
      }
    }
  }
}

TEST(HostSwizzle, NoneLeavesEveryChunkAlone) {
  for (std::uint32_t byte = 0; byte < 4096; byte += 4) EXPECT_EQ(swizzled_byte(Swizzle::none, byte, 3), byte);
}

TEST(HostSwizzle, The128BModeIsTheGuidesTransposeIndexing) {
  // The guide's kernel reads smem_buffer[i][(i % 8) ^ j] for logical element (i, j).
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(swizzled_chunk(Swizzle::b128, i, j), (i % 8) ^ j);
  }
}

TEST(HostSwizzle, OffsetFormulaIsThePatternOfTheAbsoluteAddress) {
  // A buffer that starts `shift` bytes past a 1024-byte boundary: positions inside the buffer,
  // swizzled with the offset, are the absolute positions swizzled without one.
  for (Swizzle mode : kAllSwizzles) {
    for (std::uint32_t shift = 0; shift < 1024; shift += kRowBytes) {
      const int offset = swizzle_offset(mode, 7 * 1024 + shift);
      for (std::uint32_t byte = 0; byte < 2048; byte += 4) {
        EXPECT_EQ(swizzled_byte(mode, byte, offset), swizzled_byte(mode, byte + shift) - shift)
            << swizzle_name(mode) << " shift " << shift << " byte " << byte;
      }
    }
  }
}

// ---- Where a box lands ----------------------------------------------------------------------

// Every box the chapter claims a layout for, and some it does not: inner widths of 16 to 128
// bytes in steps of 16, heights 1, 3, 8 and 17, every mode. `legal`: the model's span rule.
struct BoxCase {
  Swizzle mode;
  int inner_bytes, rows;
  bool legal;
};
std::vector<BoxCase> box_sweep() {
  std::vector<BoxCase> cases;
  for (Swizzle mode : kAllSwizzles) {
    for (int inner_bytes = kChunkBytes; inner_bytes <= kRowBytes; inner_bytes += kChunkBytes) {
      for (int rows : {1, 3, 8, 17}) cases.push_back({mode, inner_bytes, rows, box_fits_span(mode, inner_bytes)});
    }
  }
  return cases;
}
std::string describe(const BoxCase& c) {
  return std::string(swizzle_name(c.mode)) + ", box of " + std::to_string(c.rows) + " rows x " +
         std::to_string(c.inner_bytes) + " bytes";
}

// The element types the tests load: the same bytes seen as 1-, 2-, 4- and 8-byte elements.
struct ElementType {
  CUtensorMapDataType type;
  int bytes;
  const char* name;
};
constexpr ElementType kElementTypes[] = {{CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, "uint8"},
                                         {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, "uint16"},
                                         {CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, "uint32"},
                                         {CU_TENSOR_MAP_DATA_TYPE_UINT64, 8, "uint64"}};

TEST(HostBoxLayout, FullWidthBoxesAreRowsOfOneSpanEach) {
  for (Swizzle mode : kSwizzledModes) {
    const int span = span_bytes(mode);
    for (int row = 0; row < 20; ++row) {
      for (int byte = 0; byte < span; byte += 4) {
        EXPECT_EQ(box_smem_byte(mode, span, row, byte, 0), swizzled_byte(mode, row * span + byte))
            << swizzle_name(mode);
      }
    }
    EXPECT_EQ(box_smem_bytes(mode, span, 8), 8u * span);
  }
  EXPECT_EQ(box_smem_byte(Swizzle::none, 48, 2, 4), 2u * 48 + 4);  // without a swizzle: rows of the box's width
  EXPECT_EQ(box_smem_bytes(Swizzle::none, 48, 3), 144u);
}

TEST(HostBoxLayout, ANarrowBoxStillTakesAWholeSpanPerRow) {
  // 128B mode, 64-byte box rows: row 1 starts at byte 128, and its chunk 0 is moved to chunk 1.
  EXPECT_EQ(box_smem_byte(Swizzle::b128, 64, 1, 0), 128u + 16);
  EXPECT_EQ(box_smem_byte(Swizzle::b128, 64, 4, 0), 4u * 128 + 64);  // into the half no data row fills
  EXPECT_EQ(box_smem_bytes(Swizzle::b128, 64, 3), 384u);
  // 32B mode, 16-byte box rows: four rows per 128-byte row of shared memory, each in its own span.
  EXPECT_EQ(box_smem_byte(Swizzle::b32, 16, 3, 0), 96u);
  EXPECT_EQ(box_smem_byte(Swizzle::b32, 16, 4, 0), 128u + 16);
}

TEST(HostBoxLayout, EveryByteOfEveryLegalBoxHasItsOwnPlaceInItsRowsSpan) {
  for (const BoxCase& c : box_sweep()) {
    if (!c.legal) continue;
    const int pitch = box_row_pitch(c.mode, c.inner_bytes);
    for (int offset = 0; offset < 8; ++offset) {
      std::vector<int> owner(box_smem_bytes(c.mode, c.inner_bytes, c.rows), -1);
      for (int row = 0; row < c.rows; ++row) {
        for (int byte = 0; byte < c.inner_bytes; ++byte) {
          const std::uint32_t at = box_smem_byte(c.mode, c.inner_bytes, row, byte, offset);
          ASSERT_LT(at, owner.size()) << describe(c) << ": outside the footprint";
          ASSERT_EQ(static_cast<int>(at) / pitch, row) << describe(c) << ": left its row's span";
          ASSERT_EQ(owner[at], -1) << describe(c) << ": two bytes in one place";
          owner[at] = row;
        }
      }
    }
  }
}

// An element's bytes land together, where the bytes of its row's place say: for every legal box,
// element size and offset.
TEST(HostBoxLayout, AnElementsBytesLandTogetherWhereItsRowsBytesDo) {
  for (const BoxCase& c : box_sweep()) {
    if (!c.legal) continue;
    for (const ElementType& e : kElementTypes) {
      const int cols = c.inner_bytes / e.bytes;
      int wrong = 0;
      for (int offset = 0; offset < 8; ++offset) {
        for (int row = 0; row < c.rows; ++row) {
          for (int col = 0; col < cols; ++col) {
            const std::uint32_t first = box_elem_smem_byte(c.mode, e.bytes, cols, row, col, 0, offset);
            wrong += first != box_smem_byte(c.mode, c.inner_bytes, row, col * e.bytes, offset);
            for (int byte = 1; byte < e.bytes; ++byte) {
              wrong += box_elem_smem_byte(c.mode, e.bytes, cols, row, col, byte, offset) != first + byte;
            }
          }
        }
      }
      EXPECT_EQ(wrong, 0) << describe(c) << " of " << e.name;
    }
  }
}

// box_footprint() puts every byte of the box in exactly one place inside its row's span and
// leaves footprint - expect-tx bytes unwritten: none without a swizzle or for a full-width box.
TEST(HostBoxLayout, TheFootprintHoldsEveryBoxByteOnceAndLeavesTheRestOfEachSpan) {
  for (const BoxCase& c : box_sweep()) {
    if (!c.legal) continue;
    const int pitch = box_row_pitch(c.mode, c.inner_bytes);
    const std::uint32_t tx = box_tx_bytes(c.inner_bytes, c.rows);
    for (const ElementType& e : kElementTypes) {
      for (int offset = 0; offset < 8; ++offset) {
        const std::vector<int> footprint = box_footprint(c.mode, e.bytes, c.inner_bytes / e.bytes, c.rows, offset);
        ASSERT_EQ(footprint.size(), box_smem_bytes(c.mode, c.inner_bytes, c.rows)) << describe(c);
        std::vector<int> copies(tx, 0);
        int untouched = 0, outside_span = 0;
        for (std::size_t at = 0; at < footprint.size(); ++at) {
          if (footprint[at] == kUntouched) {
            ++untouched;
            continue;
          }
          ++copies[footprint[at]];
          outside_span += static_cast<int>(at) / pitch != footprint[at] / c.inner_bytes;
        }
        EXPECT_EQ(std::count(copies.begin(), copies.end(), 1), static_cast<long>(tx)) << describe(c) << " " << e.name;
        EXPECT_EQ(untouched, static_cast<int>(footprint.size() - tx)) << describe(c) << " " << e.name;
        EXPECT_EQ(outside_span, 0) << describe(c) << " " << e.name;
      }
    }
  }
}

// The layout depends on the row's bytes, not on the element size, so the element size must be the
// map's: the same columns read with another element size land elsewhere.
TEST(HostBoxLayout, AWrongElementSizeIsAnotherLayout) {
  // 128B mode, 32 uint16 per row (64 bytes): element 3 of row 1 starts at byte 6 of the row's
  // chunk 0, which row 1 stores as chunk 1.
  EXPECT_EQ(box_elem_smem_byte(Swizzle::b128, 2, 32, 1, 3, 0), 128u + 16 + 6);
  // The same 32 columns taken as uint32: a 128-byte row, element 3 at byte 12 of chunk 0.
  EXPECT_EQ(box_elem_smem_byte(Swizzle::b128, 4, 32, 1, 3, 0), 128u + 16 + 12);
  EXPECT_NE(box_footprint(Swizzle::b128, 2, 32, 3, 5), box_footprint(Swizzle::b128, 4, 32, 3, 5));
  EXPECT_NE(box_footprint(Swizzle::none, 8, 4, 3), box_footprint(Swizzle::none, 2, 4, 3));
  // 32 uint16 lie where 16 uint32 or 64 uint8 do: the same 64 bytes a row.
  EXPECT_EQ(box_footprint(Swizzle::b128, 2, 32, 3, 5), box_footprint(Swizzle::b128, 4, 16, 3, 5));
  EXPECT_EQ(box_footprint(Swizzle::b128, 2, 32, 3, 5), box_footprint(Swizzle::b128, 1, 64, 3, 5));
}

// What to allocate is the footprint; what the barrier expects is rows x inner bytes. They differ
// for a swizzled box narrower than its span.
TEST(HostBoxLayout, TheBarrierExpectsTheBoxsBytesNotItsFootprint) {
  EXPECT_EQ(box_smem_bytes(Swizzle::b128, 16 * 4, 32), 4096u);  // quiz: 32 rows x 16 floats, 128B
  EXPECT_EQ(box_tx_bytes(16 * 4, 32), 2048u);
  EXPECT_EQ(box_smem_bytes(Swizzle::b64, 16, 3), 192u);  // 3 rows of 16 uint8, 64B: 48 bytes in 192
  EXPECT_EQ(box_tx_bytes(16, 3), 48u);
  EXPECT_EQ(box_smem_bytes(Swizzle::none, 48, 3), box_tx_bytes(48, 3));
  for (const BoxCase& c : box_sweep()) {
    if (!c.legal) continue;
    const std::uint32_t footprint = box_smem_bytes(c.mode, c.inner_bytes, c.rows);
    const std::uint32_t tx = box_tx_bytes(c.inner_bytes, c.rows);
    EXPECT_LE(tx, footprint) << describe(c);
    EXPECT_EQ(tx == footprint, c.mode == Swizzle::none || c.inner_bytes == span_bytes(c.mode)) << describe(c);
  }
}

// The guide's table writes smem[y][((y + offset) % n) ^ x]. That holds when y counts 128-byte rows
// of shared memory; with y the row of a 64-byte or 32-byte box (two or four of them per 128-byte
// row) it puts chunks in the wrong place. The GPU test Sm90_SwizzleBoxes shows which is right.
TEST(HostBoxLayout, TheGuidesRelationCountsRowsOf128Bytes) {
  for (Swizzle mode : {Swizzle::b32, Swizzle::b64}) {
    const int span = span_bytes(mode), chunks = span / kChunkBytes;
    int box_row_disagreements = 0;
    for (int row = 0; row < 16; ++row) {
      for (int x = 0; x < chunks; ++x) {
        const std::uint32_t model = box_smem_byte(mode, span, row, x * kChunkBytes);
        const int line = row * span / kRowBytes, x_in_line = (row * span % kRowBytes) / kChunkBytes + x;
        EXPECT_EQ(model, line * kRowBytes + guide_relation_chunk(mode, line, x_in_line) * kChunkBytes)
            << swizzle_name(mode) << ": y as the 128-byte row agrees";
        box_row_disagreements += model != row * span + guide_relation_chunk(mode, row, x) * kChunkBytes;
      }
    }
    EXPECT_GT(box_row_disagreements, 0) << swizzle_name(mode) << ": y as the box row must not agree";
  }
  EXPECT_EQ(guide_relation_chunk(Swizzle::b128, 5, 2), swizzled_chunk(Swizzle::b128, 5, 2));  // 128B: rows coincide
}


// The library's rule check (course::broken_tensor_map_rule) accepts every box the model gives a
// layout for and refuses the others: both hold the same span rule.
alignas(1024) std::uint32_t host_matrix[32 * 64];

TEST(HostBoxLayout, TheRuleCheckAcceptsExactlyTheBoxesTheModelCallsLegal) {
  int legal = 0;
  for (const ElementType& e : kElementTypes) {  // the matrix as 32 rows of 256 bytes
    for (const BoxCase& c : box_sweep()) {
      const course::TensorMapRequest request =
          matrix_request(e.type, host_matrix, 32, 256 / e.bytes, c.rows, c.inner_bytes / e.bytes, c.mode);
      const std::optional<std::string> broken = course::broken_tensor_map_rule(request);
      EXPECT_EQ(broken.has_value(), !c.legal) << describe(c) << ", " << e.name << ": " << broken.value_or("accepted");
      legal += c.legal;
    }
  }
  // 4 element sizes x 4 heights x (16..32, 16..64, 16..128 bytes and, without a swizzle, all eight widths)
  EXPECT_EQ(legal, 4 * 4 * (2 + 4 + 8 + 8));
}

// ---- The figures and the program that draws them ---------------------------------------------

TEST(HostFigures, CommittedSvgsAreWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, DrawTheSwizzledPositions) {
  // Row 1 of the 128B figure, bank group 0 holds logical chunk 1 (1 ^ 1 = 0).
  const std::string svg = swizzle_svg(Swizzle::b128);
  EXPECT_NE(svg.find(swizzle_name(Swizzle::b128)), std::string::npos);
  EXPECT_NE(svg.find("<rect x=\"118\" y=\"126\" width=\"52\" height=\"52\" fill=\"#ffffb3\""), std::string::npos);
}

TEST(HostFigures, TheProgramWritesEveryModeAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- The bank model -------------------------------------------------------------------------

// Byte addresses of 8 lanes reading 16-byte chunk `chunk` of rows 0-7 of a 128-byte-row buffer.
std::vector<std::uint32_t> chunk_column(Swizzle mode, int chunk) {
  std::vector<std::uint32_t> lanes;
  for (int row = 0; row < 8; ++row) lanes.push_back(swizzled_byte(mode, row * kRowBytes + chunk * kChunkBytes));
  return lanes;
}

TEST(HostBankModel, AColumnOfChunksIsEightWayUnlessSwizzled) {
  EXPECT_EQ(count_bank_conflicts(chunk_column(Swizzle::none, 3), 16).ways, 8);
  EXPECT_EQ(count_bank_conflicts(chunk_column(Swizzle::b32, 3), 16).ways, 4);
  EXPECT_EQ(count_bank_conflicts(chunk_column(Swizzle::b64, 3), 16).ways, 2);
  EXPECT_EQ(count_bank_conflicts(chunk_column(Swizzle::b128, 3), 16).ways, 1);
}

TEST(HostBankModel, SixteenByteAccessesAreServedByQuarterWarps) {
  std::vector<std::uint32_t> contiguous(32);
  for (int lane = 0; lane < 32; ++lane) contiguous[lane] = lane * 16;
  const BankCount count = count_bank_conflicts(contiguous, 16);
  EXPECT_EQ(count.wavefronts, 4);
  EXPECT_EQ(count.ideal, 4);
  EXPECT_EQ(count.ways, 1);
}

TEST(HostBankModel, LanesReadingTheSameWordShareIt) {
  EXPECT_EQ(count_bank_conflicts(std::vector<std::uint32_t>(32, 256), 4).ways, 1);
}

TEST(HostBankModel, AFloatColumnNeedsThePad) {
  std::vector<std::uint32_t> plain(32), padded(32);
  for (int lane = 0; lane < 32; ++lane) {
    plain[lane] = lane * 32 * 4;
    padded[lane] = lane * 33 * 4;
  }
  EXPECT_EQ(count_bank_conflicts(plain, 4).ways, 32);
  EXPECT_EQ(count_bank_conflicts(padded, 4).ways, 1);
}

TEST(HostBankModel, WhatEachVariantCosts) {
  struct Expected {
    std::string what;
    int loads, stores;
  };
  const std::vector<Expected> expected = {
      {"guide_int4_unswizzled", 1, 8},      {"guide_int4_swizzled", 1, 1}, {"classic_padded", 1, 1},
      {"(classic without the pad)", 32, 1}, {"tma_unswizzled", 8, 1},      {"tma_swizzled", 1, 1},
      {"(tma_swizzled, rows in order)", 4, 1},
  };
  const std::vector<ModelRow> model = bank_model();
  ASSERT_EQ(model.size(), expected.size());
  for (std::size_t i = 0; i < model.size(); ++i) {
    EXPECT_EQ(model[i].what, expected[i].what);
    EXPECT_EQ(model[i].load_ways, expected[i].loads) << model[i].what;
    EXPECT_EQ(model[i].store_ways, expected[i].stores) << model[i].what;
  }
}

TEST(HostBankModel, TheProgramsPrintTheTables) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    std::ostringstream text;
    info.host_model(text);
    EXPECT_NE(text.str().find("row 7 (bytes  896-1023):  7 6 5 4 3 2 1 0"), std::string::npos) << info.program;
    EXPECT_NE(text.str().find("tma_unswizzled                     8x     1x"), std::string::npos) << text.str();
  }
}

// ---- The quad transpose and the slabs, simulated on the CPU with the kernels' own functions ----

// What a TMA load with `mode` writes: the logical tile, each 16-byte chunk at its swizzled place.
std::vector<unsigned char> to_shared(Swizzle mode, const void* logical, std::size_t bytes, int offset) {
  std::vector<unsigned char> image(bytes);
  const auto* source = static_cast<const unsigned char*>(logical);
  for (std::uint32_t b = 0; b < bytes; ++b) image[swizzled_byte(mode, b, offset)] = source[b];
  return image;
}
// What a TMA store with `mode` reads back out of shared memory.
template <class T>
std::vector<T> from_shared(Swizzle mode, const std::vector<unsigned char>& image, int offset) {
  std::vector<T> logical(image.size() / sizeof(T));
  auto* bytes = reinterpret_cast<unsigned char*>(logical.data());
  for (std::uint32_t b = 0; b < image.size(); ++b) bytes[b] = image[swizzled_byte(mode, b, offset)];
  return logical;
}

TEST(HostTransposePlan, EveryChunkIsReadOnceAndWrittenOnce) {
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    std::vector<int> reads(kTileBytes / kChunkBytes), writes(kTileBytes / kChunkBytes);
    for (int t = 0; t < kTileThreads; ++t) {
      for (int k = 0; k < kQuadDim; ++k) {
        ++reads[quad_load_byte(mode, t, k, 0) / kChunkBytes];
        ++writes[quad_store_byte(mode, t, k, 0) / kChunkBytes];
      }
    }
    for (std::size_t c = 0; c < reads.size(); ++c) {
      EXPECT_EQ(reads[c], 1) << swizzle_name(mode) << " chunk " << c;
      EXPECT_EQ(writes[c], 1) << swizzle_name(mode) << " chunk " << c;
    }
  }
}

TEST(HostTransposePlan, SixtyFourThreadsTransposeATile) {
  std::vector<float> tile(kTileDim * kTileDim);
  course::fill_pattern(tile, 3);
  const std::vector<float> expected = reference_transpose(tile, kTileDim, kTileDim);
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    for (int offset : {0, 3, 6}) {
      const std::vector<unsigned char> in = to_shared(mode, tile.data(), kTileBytes, offset);
      std::vector<unsigned char> out(kTileBytes);
      for (int t = 0; t < kTileThreads; ++t) transpose_quad(mode, in.data(), out.data(), t, offset);
      EXPECT_EQ(from_shared<float>(mode, out, offset), expected) << swizzle_name(mode) << " offset " << offset;
    }
  }
}

TEST(HostTransposePlan, AnOffsetIgnoredScramblesTheTile) {
  std::vector<float> tile(kTileDim * kTileDim);
  course::fill_pattern(tile, 5);
  const std::vector<unsigned char> in = to_shared(Swizzle::b128, tile.data(), kTileBytes, 3);
  std::vector<unsigned char> out(kTileBytes);
  for (int t = 0; t < kTileThreads; ++t) transpose_quad(Swizzle::b128, in.data(), out.data(), t, 0);
  EXPECT_NE(from_shared<float>(Swizzle::b128, out, 3), reference_transpose(tile, kTileDim, kTileDim));
}

TEST(HostTransposePlan, EveryTileOfASlabSeesThePatternFromItsFirstRow) {
  // A slab lands as four boxes of 64 rows, one after the other: tile t starts 4 KiB x t into
  // it, at a row that is a multiple of 8, so inside each tile the 128B pattern looks exactly as
  // in a lone tile.
  for (int t = 0; t < kTilesPerSlab; ++t) {
    for (std::uint32_t byte = 0; byte < kTileBytes; byte += 4) {
      EXPECT_EQ(swizzled_byte(Swizzle::b128, t * kTileBytes + byte),
                t * kTileBytes + swizzled_byte(Swizzle::b128, byte));
    }
  }
  EXPECT_EQ(kTmaSmemBytes, 129u * 1024);
}

// Every slab is visited once.
TEST(HostSlabGrid, TheNumberingVisitsEverySlabOnce) {
  for (const auto& [rows, cols] : {std::pair{1024, 1024}, std::pair{96, 160}, std::pair{kSlabRows, kSlabCols}}) {
    const SlabGrid grid = slab_grid(rows, cols);
    EXPECT_GE(grid.rows * kSlabRows, rows);
    EXPECT_LT((grid.rows - 1) * kSlabRows, rows);
    EXPECT_GE(grid.cols * kSlabCols, cols);
    EXPECT_LT((grid.cols - 1) * kSlabCols, cols);
    std::vector<int> seen(grid.count(), 0);
    for (int slab = 0; slab < grid.count(); ++slab) {
      const SlabOrigin at = grid.origin(slab);
      ASSERT_EQ(at.row % kSlabRows, 0);
      ASSERT_EQ(at.col % kSlabCols, 0);
      ASSERT_LT(at.row, rows);
      ASSERT_LT(at.col, cols);
      ++seen[at.row / kSlabRows * grid.cols + at.col / kSlabCols];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), grid.count()) << rows << " x " << cols;
  }
}

TEST(HostSlabGrid, TheLessonGoesDownTheInput) {
  const SlabGrid grid = slab_grid(1024, 1024);  // 16 slab rows, 8 slab columns
  // Column order: consecutive slabs lie one below the other, so they write consecutive
  // stretches of the same output rows.
  EXPECT_EQ(grid.origin(1).row, kSlabRows);
  EXPECT_EQ(grid.origin(1).col, 0);
  EXPECT_EQ(grid.origin(grid.rows).col, kSlabCols);
}

TEST(HostReference, TransposesARectangle) {
  const std::vector<int> in = {1, 2, 3, 4, 5, 6};  // 2 x 3
  EXPECT_EQ(reference_transpose(in, 2, 3), (std::vector<int>{1, 4, 2, 5, 3, 6}));
}

// ---- The command line and the variant tables -------------------------------------------------

TEST(HostChapter, SizesAreSquareMatricesOfWholeSlabs) {
  EXPECT_EQ(square_side(4u << 20), 1024);
  EXPECT_EQ(square_side(64u << 20), 4096);
  EXPECT_EQ(square_side(1u << 30), 16384);
  EXPECT_EQ(square_side(4 * 128 * 128), 128);
  EXPECT_EQ(square_side(4 * 1152 * 1152), 1152);
  EXPECT_FALSE(square_side(8u << 20));          // N = 1448.2
  EXPECT_FALSE(square_side(4 * 1056 * 1056));   // N = 1056 is a multiple of 32, not of the 128-float slab
  EXPECT_FALSE(square_side((4u << 20) + 4));
  EXPECT_FALSE(square_side(0));
  EXPECT_FALSE(square_side(4ull * 32896 * 32896));  // a multiple of 128 above 32768
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(info.verify_bytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.bench_bytes)) << info.program;
    EXPECT_TRUE(info.size_rule(3u << 20)) << info.program;
  }
}

// ---- What the compiler emits (PTX generated by the build, SASS of this executable) ------------

// A tensor load names the map and the box's coordinates and completes on an mbarrier by bytes; a
// tensor store completes through a bulk async-group:
//   cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [smem], [map, {x, y}], [bar];
//   cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {x, y}], [smem];
// fence.proxy.async.shared::cta orders the threads' st.shared before the store reads them;
// cp.async.bulk.wait_group.read 0 lets the output buffer be reused; elect.sync picks the issuer.
class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ptx_ = course::chapter_ptx("swizzle", "90");
    lab_ptx_ = course::chapter_ptx("swizzle_lab", "90");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static std::string lesson(const char* name) { return kernel(lesson_ptx_, name); }
  static std::string lab(const char* name) { return kernel(lab_ptx_, name); }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  // Bytes of the kernel's local-memory frame (`.local .align 8 .b8 __local_depotN[16];`), 0 without one.
  static int local_depot_bytes(const std::string& body) {
    const std::size_t at = body.find("__local_depot");
    if (at == std::string::npos) return 0;
    const std::size_t open = body.find('[', at);
    return open == std::string::npos ? 0 : std::stoi(body.substr(open + 1));
  }
  static inline std::string lesson_ptx_, lab_ptx_;
};

const char* const kLessonTmaKernels[] = {"tma_transpose_kernelIL7Swizzle0E", "tma_transpose_kernelIL7Swizzle3E"};
// lab::reread_transpose_kernel<kMode, kPasses>: no swizzle and 128B, eight passes.
const char* const kLabKernels[] = {"reread_transpose_kernelIL7Swizzle0ELi8EE",
                                   "reread_transpose_kernelIL7Swizzle3ELi8EE"};

void expect_tensor_copies(const std::string& k, const char* name) {
  auto has = [&](const char* text) { return k.find(text) != std::string::npos; };
  EXPECT_TRUE(has("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes")) << name;
  EXPECT_TRUE(has("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")) << name;
  EXPECT_TRUE(has("mbarrier.arrive.expect_tx")) << name;
  EXPECT_TRUE(has("mbarrier.try_wait.parity")) << name;
  EXPECT_TRUE(has("%globaltimer")) << name << ": a wait without a time limit";
  EXPECT_TRUE(has("cp.async.bulk.commit_group")) << name;
  EXPECT_TRUE(has("cp.async.bulk.wait_group.read 0")) << name;
  EXPECT_TRUE(has("fence.proxy.async.shared::cta")) << name << ": st.shared must be fenced before the store";
  EXPECT_TRUE(has("fence.mbarrier_init.release.cluster")) << name << ": the initialised barrier is visible to TMA";
  EXPECT_TRUE(has("elect.sync")) << name << ": the issuing lane is elected";
  EXPECT_EQ(course::count_matches(k, R"(ld\.global\.(nc\.)?f32|st\.global\.f32)"), 0)
      << name << ": no element passes through registers from or to global memory";
  EXPECT_EQ(course::count_matches(k, R"(cp\.async\.c[ag]\.)"), 0) << name << ": no LDGSTS-style copy";
}

TEST_F(HostCodegen, EveryTmaKernelMovesTilesWithTensorCopies) {
  for (const char* name : kLessonTmaKernels) expect_tensor_copies(lesson(name), name);
  for (const char* name : kLabKernels) expect_tensor_copies(lab(name), name);
}

// The transposes read and write shared memory 16 bytes at a time (what the bank model counts), and
// the quad's rotation must not push it into local memory: v[k ^ rotation] would put the quad's
// 64 bytes there. (The bounded wait hands its site to the diagnosis by value, so it needs no
// frame either; the bound of 16 bytes leaves room for a small one, not for the quad.)
TEST_F(HostCodegen, TheQuadTransposeMovesSixteenBytesPerAccess) {
  std::vector<std::pair<const char*, std::string>> kernels;
  for (const char* name : kLessonTmaKernels) kernels.emplace_back(name, lesson(name));
  for (const char* name : kLabKernels) kernels.emplace_back(name, lab(name));
  for (const auto& [name, k] : kernels) {
    EXPECT_EQ(course::count_matches(k, R"(ld\.shared\.v4\.f32)"), 2 * kQuadDim) << name << ": 4 loads x 2 tiles";
    EXPECT_EQ(course::count_matches(k, R"(st\.shared\.v4\.f32)"), 2 * kQuadDim) << name << ": 4 stores x 2 tiles";
    EXPECT_FALSE(has(k, "ld.shared.f32")) << name;
    EXPECT_LE(local_depot_bytes(k), 16) << name << ": the quad went to local memory";
  }
}

// The lesson draws slab numbers from the counter, one atomic add per slab; the lab's kernel takes
// the slab of its block.
TEST_F(HostCodegen, OnlyTheLessonUsesTheCounter) {
  for (const char* name : kLessonTmaKernels) EXPECT_TRUE(has(lesson(name), "atom.global.add.u64")) << name;
  for (const char* name : kLabKernels) EXPECT_FALSE(has(lab(name), "atom.global.add")) << name;
}

TEST_F(HostCodegen, TheClassicKernelMovesFloatsThroughRegisters) {
  const std::string k = lesson("classic_padded_kernel");
  EXPECT_GE(course::count_matches(k, R"(ld\.global\.nc\.f32)"), 1);
  EXPECT_GE(course::count_matches(k, R"(st\.shared\.f32)"), 1);
  EXPECT_GE(course::count_matches(k, R"(ld\.shared\.f32)"), 1);
  EXPECT_GE(course::count_matches(k, R"(st\.global\.f32)"), 1);
  EXPECT_FALSE(has(k, "cp.async"));
}

// In the machine code a tensor load is UTMALDG and a tensor store UTMASTG; the classic kernel has neither.
TEST_F(HostCodegen, MachineCodeUsesTheTmaUnit) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  std::vector<const char*> names(std::begin(kLessonTmaKernels), std::end(kLessonTmaKernels));
  names.insert(names.end(), std::begin(kLabKernels), std::end(kLabKernels));
  for (const char* name : names) {
    const std::string k = course::sass_kernel_body(sass, name);
    ASSERT_FALSE(k.empty()) << "no kernel " << name << " in the sm_90 machine code";
    EXPECT_TRUE(has(k, "UTMALDG")) << name;
    EXPECT_TRUE(has(k, "UTMASTG")) << name;
    EXPECT_FALSE(has(k, "LDGSTS")) << name;
  }
  const std::string classic = course::sass_kernel_body(sass, "classic_padded_kernel");
  ASSERT_FALSE(classic.empty());
  EXPECT_FALSE(has(classic, "UTMALDG"));
  EXPECT_FALSE(has(classic, "UTMASTG"));
}

// ---- On the GPU: the hardware as the oracle of the model --------------------------------------

// TUTORIAL: where the model comes from, and what the first run on an H100 settles.
// The PTX ISA ("Swizzling Modes") gives the patterns as tables of 16-byte chunks and says that
// the pattern starts at a 1024-, 512- or 256-byte boundary of the *shared-memory address*, with a
// "base offset" (dstMem / 128) % 8, % 4, % 2 for a destination elsewhere: swizzle_offset() here.
// The programming guide asks for 128-byte alignment of the destination with every mode, and,
// for a box narrower than the span, an allocation that "accommodates the full swizzle width":
// box_row_pitch() gives every box row a whole span. Neither document says what TMA does with
// the rest of that span; the model says it writes nothing there, so the barrier expects
// box_tx_bytes() and the padding keeps its poison. The test below compares every byte of a
// window around each box with the model and, where they differ, says which of the plausible
// other layouts the hardware matched (rows packed at the box's width, the pattern started at
// the box instead of at the address, the padding zeroed). On an H100 every case matched the
// model, and each of the other layouts was ruled out by some of them.

// Every box starts at one of the 8 places of the 1024-byte repeat of the 128B pattern (TMA asks
// for 128-byte alignment only), kLeadBytes into a window of shared memory that starts on a
// 1024-byte boundary. The window holds bytes before the box, its footprint, and bytes after it.
constexpr int kPlaces = 1024 / kRowBytes;
constexpr int kLeadBytes = 1024;
constexpr int kWindowBytes = 5 * 1024;
constexpr int kMaxBoxRows = 17;
constexpr unsigned char kPoisonByte = 0xEE;
static_assert(kLeadBytes + (kPlaces - 1) * kRowBytes + (kMaxBoxRows + 1) * kRowBytes <= kWindowBytes,
              "the window must hold the largest footprint at the last place, and guard bytes after it");

/// [box_window]
// Block b poisons a window of shared memory that starts on a 1024-byte boundary, TMA-loads one box
// kLeadBytes + 128 b bytes into it (place b of the 1024-byte repeat), and copies the whole window
// out raw, swizzle, padding and all, with the box's shared-memory and generic addresses.
__global__ void box_window_kernel(const __grid_constant__ CUtensorMap map, std::int32_t x, std::int32_t y,
                                  std::uint32_t tx_bytes, unsigned char* gmem_windows,
                                  unsigned long long* gmem_addresses) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  __shared__ alignas(8) std::uint64_t full_bar;
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_window = smem_raw + (1024 - raw_addr % 1024) % 1024;
  unsigned char* smem_box = smem_window + kLeadBytes + blockIdx.x * kRowBytes;
  auto* smem_words = reinterpret_cast<std::uint32_t*>(smem_window);
  for (int i = threadIdx.x; i < kWindowBytes / 4; i += blockDim.x) smem_words[i] = 0x01010101u * kPoisonByte;
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1);                                // the leader's arrival completes the phase
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA unit
  }
  ptx::fence_proxy_async(ptx::space_shared);  // the poison is written before the TMA unit writes the box
  __syncthreads();                            // every thread's poison and the barrier are in place
  if (is_leader) {
    const std::int32_t coords[2] = {x, y};
    // The phase's one arrival, plus the bytes the box brings (not its footprint).
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar, tx_bytes);
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, &map, coords, &full_bar);
    gmem_addresses[2 * blockIdx.x] = __cvta_generic_to_shared(smem_box);                // shared-window address
    gmem_addresses[2 * blockIdx.x + 1] = reinterpret_cast<std::uintptr_t>(smem_box);  // generic (the guide's)
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // the box landed
  auto* gmem_words = reinterpret_cast<std::uint32_t*>(gmem_windows + blockIdx.x * kWindowBytes);
  for (int i = threadIdx.x; i < kWindowBytes / 4; i += blockDim.x) gmem_words[i] = smem_words[i];
}
/// [box_window]

// One box the GPU test loads: element type, mode, row bytes, rows.
struct GpuBox {
  ElementType elem;
  Swizzle mode;
  int inner_bytes, rows;
  int cols() const { return inner_bytes / elem.bytes; }
};
std::string describe(const GpuBox& c) {
  return std::string(swizzle_name(c.mode)) + ", " + c.elem.name + ", box of " + std::to_string(c.rows) + " rows x " +
         std::to_string(c.cols()) + " elements (" + std::to_string(c.inner_bytes) + " bytes)";
}

// Every legal box: each element size, every row width from 16 bytes up to the span (up to 128
// bytes without a swizzle) in steps of 16, heights 1, 3, 8 and 17.
constexpr int kBoxHeights[] = {1, 3, 8, kMaxBoxRows};
std::vector<GpuBox> every_legal_box() {
  std::vector<GpuBox> boxes;
  for (const ElementType& elem : kElementTypes) {
    for (Swizzle mode : kAllSwizzles) {
      const int widest = mode == Swizzle::none ? kRowBytes : span_bytes(mode);
      for (int inner_bytes = kChunkBytes; inner_bytes <= widest; inner_bytes += kChunkBytes) {
        for (int rows : kBoxHeights) boxes.push_back({elem, mode, inner_bytes, rows});
      }
    }
  }
  return boxes;
}
// 4 element sizes x (8 + 2 + 4 + 8) widths x 4 heights x 8 places.
constexpr int kExpectedBoxCases = 4 * (8 + 2 + 4 + 8) * 4 * kPlaces;  // 2816

// A 32 x 256-byte matrix of pseudo-random bytes (never 0, never the poison), seen as 256 uint8,
// 128 uint16, 64 uint32 or 32 uint64 per row. Every box starts kXBytes into row kY of it, so a
// box's row b, byte j is matrix byte (kY + b, kXBytes + j). Every 16-byte chunk of the matrix is
// different from every other (chunks_are_unique()), so a chunk found in the wrong place is named.
class BoxWindowProbe {
 public:
  static constexpr int kMatrixRows = 32, kMatrixRowBytes = 256, kY = 5, kXBytes = 32;
  static unsigned char matrix_byte(int row, int byte) {
    std::uint32_t h = static_cast<std::uint32_t>(row * kMatrixRowBytes + byte) * 0x9E3779B1u + 0x7F4A7C15u;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    const unsigned value = 1 + h % 253;  // 1..253
    return static_cast<unsigned char>(value >= kPoisonByte ? value + 1 : value);
  }

  BoxWindowProbe()
      : gmem_matrix_(kMatrixRows * kMatrixRowBytes),
        gmem_windows_(kPlaces * kWindowBytes),
        gmem_addresses_(2 * kPlaces) {
    std::vector<unsigned char> matrix(kMatrixRows * kMatrixRowBytes);
    for (int r = 0; r < kMatrixRows; ++r) {
      for (int b = 0; b < kMatrixRowBytes; ++b) matrix[r * kMatrixRowBytes + b] = matrix_byte(r, b);
    }
    gmem_matrix_.upload(matrix.data());
    for (int r = 0; r < kMatrixRows; ++r) {
      for (int b = 0; b < kMatrixRowBytes; b += kChunkBytes) {
        chunk_at_.emplace(std::string(&matrix[r * kMatrixRowBytes + b], &matrix[r * kMatrixRowBytes + b] + kChunkBytes),
                          std::pair{r, b});
      }
    }
  }
  bool chunks_are_unique() const {
    return chunk_at_.size() == std::size_t{kMatrixRows * kMatrixRowBytes / kChunkBytes};
  }

  course::TensorMapRequest request(const GpuBox& c) const {
    return matrix_request(c.elem.type, gmem_matrix_.data(), kMatrixRows, kMatrixRowBytes / c.elem.bytes, c.rows,
                          c.cols(), c.mode);
  }
  void launch(const CUtensorMap& map, int elem_bytes, std::uint32_t tx_bytes, int blocks) const {
    box_window_kernel<<<blocks, 128, kWindowBytes + 1024>>>(map, kXBytes / elem_bytes, kY, tx_bytes,
                                                            gmem_windows_.data(), gmem_addresses_.data());
    COURSE_CHECK_LAUNCH();
  }

  // The box loaded at every place: the raw windows and the box's two addresses per place.
  struct Landing {
    std::vector<unsigned char> windows;        // [kPlaces][kWindowBytes]
    std::vector<unsigned long long> addresses;  // [kPlaces][shared, generic]
    const unsigned char* window(int place) const { return windows.data() + place * kWindowBytes; }
  };
  Landing load(const GpuBox& c) {
    launch(course::encode_tiled(request(c)), c.elem.bytes, box_tx_bytes(c.inner_bytes, c.rows), kPlaces);
    COURSE_CHECK(cudaDeviceSynchronize());
    Landing landing{std::vector<unsigned char>(kPlaces * kWindowBytes), std::vector<unsigned long long>(2 * kPlaces)};
    gmem_windows_.download(landing.windows.data());
    gmem_addresses_.download(landing.addresses.data());
    return landing;
  }

  // The layouts a window is compared with: the model, and three it could be confused with.
  enum class Layout { model, rows_packed, offset_ignored, padding_zeroed };
  static const char* layout_name(Layout layout) {
    switch (layout) {
      case Layout::rows_packed: return "box rows packed at the box's width, then swizzled by address";
      case Layout::offset_ignored: return "the pattern started at the box, not at the 1024-byte boundary";
      case Layout::padding_zeroed: return "the model with the unwritten rest of each span zeroed";
      default: return "the model";
    }
  }
  // What the window holds after the load of `c` at `place`, by `layout`: poison everywhere the
  // load does not write.
  static std::vector<unsigned char> predicted_window(const GpuBox& c, int place, int offset, Layout layout) {
    std::vector<unsigned char> window(kWindowBytes, kPoisonByte);
    const int box_at = kLeadBytes + place * kRowBytes;
    auto box_byte = [&](int n) { return matrix_byte(kY + n / c.inner_bytes, kXBytes + n % c.inner_bytes); };
    if (layout == Layout::rows_packed) {
      for (int n = 0; n < static_cast<int>(box_tx_bytes(c.inner_bytes, c.rows)); ++n) {
        window[box_at + swizzled_byte(c.mode, n, offset)] = box_byte(n);
      }
      return window;
    }
    const std::vector<int> footprint =
        box_footprint(c.mode, c.elem.bytes, c.cols(), c.rows, layout == Layout::offset_ignored ? 0 : offset);
    for (std::size_t at = 0; at < footprint.size(); ++at) {
      if (footprint[at] != kUntouched) {
        window[box_at + at] = box_byte(footprint[at]);
      } else if (layout == Layout::padding_zeroed) {
        window[box_at + at] = 0;
      }
    }
    return window;
  }

  // Whether the window at `place` differs from what `layout` predicts (the layout is ruled out).
  static bool rules_out(const GpuBox& c, int place, const unsigned char* window, unsigned long long smem_address,
                        Layout layout) {
    const int offset = swizzle_offset(c.mode, static_cast<std::uint32_t>(smem_address));
    const std::vector<unsigned char> predicted = predicted_window(c, place, offset, layout);
    return !std::equal(predicted.begin(), predicted.end(), window);
  }

  // "" when every byte of the window at `place` is what the model says, else a report: how many
  // bytes differ, the first differing 16-byte chunks (where, what the model says, what was found)
  // and which other layout, if any, the window matches exactly.
  std::string compare_window(const GpuBox& c, int place, const unsigned char* window,
                             unsigned long long smem_address) const {
    if (smem_address % 1024 != static_cast<unsigned long long>(place) * kRowBytes) {
      return "the box is at shared address " + std::to_string(smem_address) + ", not at place " +
             std::to_string(place) + " of the 1024-byte repeat (the kernel and the test disagree)";
    }
    const int offset = swizzle_offset(c.mode, static_cast<std::uint32_t>(smem_address));
    const std::vector<unsigned char> expected = predicted_window(c, place, offset, Layout::model);
    const auto wrong = std::mismatch(expected.begin(), expected.end(), window);
    if (wrong.first == expected.end()) return "";
    const int box_at = kLeadBytes + place * kRowBytes;
    const int footprint = static_cast<int>(box_smem_bytes(c.mode, c.inner_bytes, c.rows));
    std::ostringstream report;
    int wrong_bytes = 0, wrong_chunks = 0;
    for (int at = 0; at < kWindowBytes; at += kChunkBytes) {
      const int differ = kChunkBytes - static_cast<int>(std::inner_product(
                                           window + at, window + at + kChunkBytes, expected.begin() + at, 0,
                                           std::plus<>(), std::equal_to<>()));
      if (differ == 0) continue;
      wrong_bytes += differ;
      if (++wrong_chunks > kReportedChunks) continue;
      const int from_box = at - box_at;
      report << "\n  window bytes " << at << "-" << at + kChunkBytes - 1 << " ("
             << (from_box < 0           ? std::to_string(-from_box) + " bytes before the box"
                 : from_box < footprint ? "footprint byte " + std::to_string(from_box)
                                        : std::to_string(from_box - footprint) + " bytes past the footprint")
             << "): the model says " << name_chunk(c, expected.data() + at) << ", found "
             << name_chunk(c, window + at);
    }
    if (wrong_chunks > kReportedChunks) report << "\n  ... and " << wrong_chunks - kReportedChunks << " more chunks";
    std::string verdict = "\n  the window matches none of the other layouts either";
    for (Layout other : {Layout::rows_packed, Layout::offset_ignored, Layout::padding_zeroed}) {
      const std::vector<unsigned char> alternative = predicted_window(c, place, offset, other);
      if (alternative != expected && std::equal(alternative.begin(), alternative.end(), window)) {
        verdict = std::string("\n  the window is exactly what ") + layout_name(other) + " gives";
      }
    }
    return "shared address " + std::to_string(smem_address) + " (offset " + std::to_string(offset) + "), footprint " +
           std::to_string(footprint) + " bytes: " + std::to_string(wrong_bytes) + " of " +
           std::to_string(kWindowBytes) + " window bytes differ" + report.str() + verdict;
  }

 private:
  static constexpr int kReportedChunks = 6;
  // A 16-byte chunk in words: poison, zeros, a chunk of the box (or of the matrix around it), or its bytes.
  std::string name_chunk(const GpuBox& c, const unsigned char* chunk) const {
    const auto all = [&](unsigned char v) {
      return std::all_of(chunk, chunk + kChunkBytes, [v](unsigned char b) { return b == v; });
    };
    if (all(kPoisonByte)) return "poison";
    if (all(0)) return "zeros";
    const auto found = chunk_at_.find(std::string(chunk, chunk + kChunkBytes));
    if (found != chunk_at_.end()) {
      const auto [row, byte] = found->second;
      const int box_row = row - kY, box_byte = byte - kXBytes;
      const bool inside = box_row >= 0 && box_row < c.rows && box_byte >= 0 && box_byte < c.inner_bytes;
      return inside ? "box row " + std::to_string(box_row) + ", bytes " + std::to_string(box_byte) + "-" +
                          std::to_string(box_byte + kChunkBytes - 1)
                    : "matrix row " + std::to_string(row) + ", bytes " + std::to_string(byte) + "-" +
                          std::to_string(byte + kChunkBytes - 1) + " (outside the box)";
    }
    std::string bytes = "bytes";
    char hex[4];
    for (int i = 0; i < kChunkBytes; ++i) {
      std::snprintf(hex, sizeof hex, " %02x", chunk[i]);
      bytes += hex;
    }
    return bytes;
  }

  course::DeviceBuffer<unsigned char> gmem_matrix_;
  course::DeviceBuffer<unsigned char> gmem_windows_;
  course::DeviceBuffer<unsigned long long> gmem_addresses_;
  std::map<std::string, std::pair<int, int>> chunk_at_;  // chunk bytes -> (matrix row, first byte)
};

class Sm90_SwizzleBoxes : public course::GpuTest {
 protected:
  Sm90_SwizzleBoxes() : GpuTest(chapter_info().requirement) {}
};

// Every legal box of every element size at every 128-byte place of the 1024-byte repeat: every
// byte of the window (before the box, the footprint with its unwritten padding, after it) must be
// what the model says, the barrier's expect-tx is box_tx_bytes() (a wrong count would end in the
// bounded wait's diagnosis), and the guide's formula on the generic address gives the same offset
// as on the shared-memory address. The first reports are detailed; then a table of wrong shapes.
TEST_F(Sm90_SwizzleBoxes, EveryLegalBoxOfEveryElementSizeAtEveryPlaceLandsWhereTheModelSays) {
  constexpr int kDetailedReports = 8;
  BoxWindowProbe probe;
  ASSERT_TRUE(probe.chunks_are_unique()) << "two 16-byte chunks of the matrix are equal: a misplaced one could hide";
  int cases = 0, wrong = 0, generic_disagreements = 0;
  std::map<std::pair<int, int>, int> wrong_by_width;  // (mode, inner bytes) -> wrong cases
  using Layout = BoxWindowProbe::Layout;
  std::map<Layout, int> ruled_out;  // cases the model passes and the other layout does not
  for (const GpuBox& c : every_legal_box()) {
    const std::optional<std::string> broken = course::broken_tensor_map_rule(probe.request(c));
    ASSERT_FALSE(broken) << describe(c) << ": " << *broken;
    const BoxWindowProbe::Landing landing = probe.load(c);
    for (int place = 0; place < kPlaces; ++place) {
      ++cases;
      const unsigned long long shared = landing.addresses[2 * place], generic = landing.addresses[2 * place + 1];
      if ((shared / kRowBytes) % 8 != (generic / kRowBytes) % 8) {
        ++generic_disagreements;
        ADD_FAILURE() << describe(c) << ", place " << place << ": the guide's formula on the generic address "
                      << generic << " gives another offset than on the shared address " << shared;
      }
      const std::string diff = probe.compare_window(c, place, landing.window(place), shared);
      if (diff.empty()) {
        for (Layout other : {Layout::rows_packed, Layout::offset_ignored, Layout::padding_zeroed}) {
          ruled_out[other] += BoxWindowProbe::rules_out(c, place, landing.window(place), shared, other);
        }
        continue;
      }
      ++wrong_by_width[{static_cast<int>(c.mode), c.inner_bytes}];
      if (++wrong <= kDetailedReports) ADD_FAILURE() << describe(c) << ", place " << place << ": " << diff;
    }
  }
  std::cout << "[ boxes    ] " << cases << " cases (every legal box of 1-, 2-, 4- and 8-byte elements, heights 1, "
            << "3, 8, 17, at 8 places), " << wrong << " wrong\n";
  for (const auto& [shape, count] : wrong_by_width) {
    std::cout << "[ boxes    ]   " << swizzle_name(static_cast<Swizzle>(shape.first)) << ", rows of " << shape.second
              << " bytes: " << count << " of " << 4 * 4 * kPlaces << " cases wrong\n";
  }
  // The sweep must tell the model from each layout it could be confused with.
  for (Layout other : {Layout::rows_packed, Layout::offset_ignored, Layout::padding_zeroed}) {
    std::cout << "[ boxes    ]   ruled out in " << ruled_out[other] << " cases: "
              << BoxWindowProbe::layout_name(other) << '\n';
    EXPECT_GT(ruled_out[other], 0) << "no case tells the model from " << BoxWindowProbe::layout_name(other);
  }
  RecordProperty("cases", cases);
  EXPECT_EQ(wrong, 0) << "the first " << kDetailedReports << " are reported above, the wrong shapes on stdout";
  EXPECT_EQ(generic_disagreements, 0);
  EXPECT_EQ(cases, kExpectedBoxCases) << "the sweep must load every legal box at every place";
}

class Sm90_BoundedWait : public course::GpuTest {
 protected:
  Sm90_BoundedWait() : GpuTest(chapter_info().requirement) {}
};

// A broken expect_tx: the barrier waits for 16 bytes more than the box brings, so the phase never
// completes. The bounded wait must name the barrier instead of hanging.
TEST_F(Sm90_BoundedWait, WrongTransactionCountIsDiagnosed) {
  BoxWindowProbe probe;
  const GpuBox box{kElementTypes[2], Swizzle::b128, kRowBytes, 16};
  const CUtensorMap map = course::encode_tiled(probe.request(box));
  COURSE_EXPECT_DIAGNOSED_HANG(probe.launch(map, box.elem.bytes, box_tx_bytes(kRowBytes, 16) + 16, 1),
                               "bounded wait: gave up .*barrier 'full'", 30.0);
}

// ---- On the GPU: every lesson variant and every lab row --------------------------------------

class Sm90_Swizzle : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_Swizzle() : GpuTest(chapter_info().requirement) {}
  void expect_correct(int rows, int cols) {
    Problem problem(rows, cols);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << rows << " x " << cols << ": " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_Swizzle, OneSlab) { expect_correct(kSlabRows, kSlabCols); }
// The last slab row and column hang over the edge: their loads find zeros outside the matrix and
// their stores are clipped there; nothing outside the output may change (guard bands included).
TEST_P(Sm90_Swizzle, SlabsHangingOverTheEdge) { expect_correct(kSlabRows + kTileDim, kSlabCols + kTileDim); }
TEST_P(Sm90_Swizzle, ManyMoreSlabsThanResidentBlocks) { expect_correct(2048, 2048); }  // 512 slabs
TEST_P(Sm90_Swizzle, Rectangle) { expect_correct(256, 96); }

TEST_P(Sm90_Swizzle, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(256, 256);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90_Swizzle, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm90_SwizzleLab : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_SwizzleLab() : GpuTest(lab::chapter_info().requirement) {}
  void expect_correct(int rows, int cols) {
    Problem problem(rows, cols);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << rows << " x " << cols << ": " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_SwizzleLab, OneSlab) { expect_correct(kSlabRows, kSlabCols); }
TEST_P(Sm90_SwizzleLab, SlabsHangingOverTheEdge) { expect_correct(kSlabRows + kTileDim, kSlabCols + kTileDim); }
TEST_P(Sm90_SwizzleLab, ManyMoreSlabsThanResidentBlocks) { expect_correct(2048, 2048); }
TEST_P(Sm90_SwizzleLab, Rectangle) { expect_correct(256, 96); }

TEST_P(Sm90_SwizzleLab, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(256, 256);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Sm90_SwizzleLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
