// Tests for 08_swizzle: the swizzle function against the guide's tables and against the hardware
// (a TMA load is the oracle), the committed figures against the function, the bank model, both
// transposes simulated on the CPU, the tensor-map rules, the PTX, and every variant on the GPU.
#include "swizzle.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <string>
#include <vector>

#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The swizzle function ------------------------------------------------------------------

TEST(HostSwizzle, SpansAndRepeatsAreTheGuidesTable25) {
  EXPECT_EQ(span_bytes(Swizzle::b128), 128);
  EXPECT_EQ(repeat_bytes(Swizzle::b128), 1024);
  EXPECT_EQ(span_bytes(Swizzle::b64), 64);
  EXPECT_EQ(repeat_bytes(Swizzle::b64), 512);
  EXPECT_EQ(span_bytes(Swizzle::b32), 32);
  EXPECT_EQ(repeat_bytes(Swizzle::b32), 256);
  EXPECT_EQ(pattern_rows(Swizzle::none), 1);
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

// ---- The figures ----------------------------------------------------------------------------

class HostFigures : public ::testing::TestWithParam<Swizzle> {};

TEST_P(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  const std::string path = std::string(SWIZZLE_FIGURES_DIR) + "/swizzle_" + swizzle_tag(GetParam()) + ".svg";
  const std::string committed = course::read_text_file(path);
  ASSERT_FALSE(committed.empty()) << "cannot read " << path;
  EXPECT_TRUE(committed == swizzle_svg(GetParam()))
      << path << " differs from swizzle_svg(); regenerate: build/08_swizzle/swizzle_figures 08_swizzle/figures";
}

TEST(HostFigures, DrawTheSwizzledPositions) {
  // Row 1 of the 128B figure, bank group 0 holds logical chunk 1 (1 ^ 1 = 0).
  const std::string svg = swizzle_svg(Swizzle::b128);
  EXPECT_NE(svg.find(swizzle_name(Swizzle::b128)), std::string::npos);
  EXPECT_NE(svg.find("<rect x=\"118\" y=\"126\" width=\"52\" height=\"52\" fill=\"#ffffb3\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Modes, HostFigures, ::testing::ValuesIn(kAllSwizzles),
                         [](const auto& info) { return swizzle_tag(info.param); });

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
      {"guide_int4_unswizzled", 1, 8}, {"guide_int4_swizzled", 1, 1},         {"classic_padded", 1, 1},
      {"(classic without the pad)", 32, 1}, {"tma_unswizzled", 8, 1},         {"tma_swizzled", 1, 1},
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

// ---- Both transposes, simulated on the CPU with the kernels' own index functions -------------

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
      for (int t = 0; t < kTileThreads; ++t) transpose_quad(mode, in.data(), out.data(), t, offset, offset);
      EXPECT_EQ(from_shared<float>(mode, out, offset), expected) << swizzle_name(mode) << " offset " << offset;
    }
  }
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
}

// Every slab is visited once in each order, and each order walks the way its name says.
TEST(HostSlabOrder, EveryOrderVisitsEverySlabOnce) {
  for (const auto& [rows, cols] : {std::pair{1024, 1024}, std::pair{96, 160}, std::pair{kSlabRows, kSlabCols}}) {
    const SlabGrid grid = slab_grid(rows, cols);
    EXPECT_GE(grid.rows * kSlabRows, rows);
    EXPECT_LT((grid.rows - 1) * kSlabRows, rows);
    EXPECT_GE(grid.cols * kSlabCols, cols);
    EXPECT_LT((grid.cols - 1) * kSlabCols, cols);
    for (SlabOrder order : {SlabOrder::dealt_rows, SlabOrder::taken_rows, SlabOrder::taken_columns}) {
      std::vector<int> seen(grid.count(), 0);
      for (int slab = 0; slab < grid.count(); ++slab) {
        const SlabOrigin at = grid.origin(order, slab);
        ASSERT_EQ(at.row % kSlabRows, 0);
        ASSERT_EQ(at.col % kSlabCols, 0);
        ASSERT_LT(at.row, rows);
        ASSERT_LT(at.col, cols);
        ++seen[at.row / kSlabRows * grid.cols + at.col / kSlabCols];
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), grid.count()) << rows << " x " << cols;
    }
  }
}

TEST(HostSlabOrder, ColumnsGoDownTheInputRowsAcrossIt) {
  const SlabGrid grid = slab_grid(1024, 1024);  // 16 slab rows, 8 slab columns
  // Column order: consecutive slabs lie one below the other, so they write consecutive
  // stretches of the same output rows.
  EXPECT_EQ(grid.origin(SlabOrder::taken_columns, 1).row, kSlabRows);
  EXPECT_EQ(grid.origin(SlabOrder::taken_columns, 1).col, 0);
  EXPECT_EQ(grid.origin(SlabOrder::taken_columns, grid.rows).col, kSlabCols);
  // Row order: side by side, so they read consecutive stretches of the same input rows.
  EXPECT_EQ(grid.origin(SlabOrder::taken_rows, 1).row, 0);
  EXPECT_EQ(grid.origin(SlabOrder::taken_rows, 1).col, kSlabCols);
  EXPECT_EQ(grid.origin(SlabOrder::taken_rows, grid.cols).row, kSlabRows);
  EXPECT_EQ(grid.origin(SlabOrder::dealt_rows, 5).col, grid.origin(SlabOrder::taken_rows, 5).col);
}

TEST(HostGuidePlan, EightThreadsTransposeTheInt4Tile) {
  std::vector<int4> tile(kGuideDim * kGuideDim);
  for (int i = 0; i < kGuideDim * kGuideDim; ++i) tile[i] = make_int4(i, -i, 3 * i, 100 + i);
  const std::vector<int4> expected = reference_transpose(tile, kGuideDim, kGuideDim);
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    for (int offset : {0, 5}) {
      const std::vector<unsigned char> in = to_shared(mode, tile.data(), sizeof(int4) * tile.size(), offset);
      std::vector<unsigned char> out(in.size());
      for (int j = 0; j < kGuideThreads; ++j) {
        guide_transpose_column(mode, reinterpret_cast<const int4*>(in.data()), reinterpret_cast<int4*>(out.data()), j,
                               offset, offset);
      }
      const std::vector<int4> got = from_shared<int4>(mode, out, offset);
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), sizeof(int4) * got.size()), 0)
          << swizzle_name(mode) << " offset " << offset;
    }
  }
}

TEST(HostGuidePlan, TheGuidesIndexingNeedsTheOffsetOfAnUnalignedBuffer) {
  // The guide's (i % 8) ^ j assumes offset 0. A buffer 384 bytes past a 1024-byte boundary has
  // offset 3: indexing it as if it had none moves the wrong elements.
  std::vector<int4> tile(kGuideDim * kGuideDim);
  for (int i = 0; i < kGuideDim * kGuideDim; ++i) tile[i] = make_int4(i, i, i, i);
  const std::vector<int4> expected = reference_transpose(tile, kGuideDim, kGuideDim);
  const int offset = swizzle_offset(Swizzle::b128, 384);
  const std::vector<unsigned char> in = to_shared(Swizzle::b128, tile.data(), sizeof(int4) * tile.size(), offset);
  std::vector<unsigned char> out(in.size());
  for (int j = 0; j < kGuideThreads; ++j) {
    guide_transpose_column(Swizzle::b128, reinterpret_cast<const int4*>(in.data()), reinterpret_cast<int4*>(out.data()),
                           j, 0, offset);
  }
  const std::vector<int4> got = from_shared<int4>(Swizzle::b128, out, offset);
  EXPECT_NE(std::memcmp(got.data(), expected.data(), sizeof(int4) * got.size()), 0);
}

TEST(HostReference, TransposesARectangle) {
  const std::vector<int> in = {1, 2, 3, 4, 5, 6};  // 2 x 3
  EXPECT_EQ(reference_transpose(in, 2, 3), (std::vector<int>{1, 4, 2, 5, 3, 6}));
}

TEST(HostReference, TilesInPlaceTransposesEachTileWhereItIs) {
  const int rows = 2 * kTileDim, cols = 3 * kTileDim;
  std::vector<float> in(static_cast<std::size_t>(rows) * cols);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const std::vector<float> out = reference_tiles_in_place(in, rows, cols);
  // Row 1, column 2 of tile (1, 2) holds what was at row 2, column 1 of the same tile.
  EXPECT_EQ(out[(kTileDim + 1) * cols + 2 * kTileDim + 2], in[(kTileDim + 2) * cols + 2 * kTileDim + 1]);
  EXPECT_EQ(out[0], in[0]);  // the diagonal stays
  EXPECT_EQ(reference_tiles_in_place(out, rows, cols), in);  // twice is the identity
  // On a single tile it is the transpose.
  const std::vector<float> tile(in.begin(), in.begin() + kTileDim * kTileDim);
  EXPECT_EQ(reference_tiles_in_place(tile, kTileDim, kTileDim), reference_transpose(tile, kTileDim, kTileDim));
}

TEST(HostReference, TheInt4ViewMovesSixteenByteElements) {
  std::vector<float> in(2 * 8);  // 2 rows of 8 floats = 2 x 2 int4
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const std::vector<float> out = reference_int4_transpose(in, 2, 8);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}));
}

// ---- Tensor-map rules, checked before the driver sees the map ------------------------------

alignas(1024) float host_matrix[64 * 64];

TiledMap good_map(Swizzle swizzle = Swizzle::b128) {
  return matrix_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, host_matrix, 64, 64, 32, 32, swizzle);
}
std::string problem_of(const TiledMap& m) { return tensor_map_problem(m).value_or(""); }

TEST(HostTensorMapRules, TheChaptersMapsPass) {
  EXPECT_EQ(problem_of(good_map()), "");
  EXPECT_EQ(problem_of(good_map(Swizzle::none)), "");
  EXPECT_EQ(problem_of(matrix_map(CU_TENSOR_MAP_DATA_TYPE_INT32, 4, host_matrix, 64, 64, 8, 32, Swizzle::b128)), "");
}

TEST(HostTensorMapRules, RankIsOneToFive) {
  TiledMap m = good_map();
  m.rank = 0;
  EXPECT_EQ(problem_of(m), "tensor rank must be 1 to 5 (got 0)");
  m.rank = 6;
  EXPECT_EQ(problem_of(m), "tensor rank must be 1 to 5 (got 6)");
}

TEST(HostTensorMapRules, GlobalAddressAlignment) {
  TiledMap m = good_map(Swizzle::none);
  m.gmem = host_matrix + 1;  // 4 bytes in
  EXPECT_EQ(problem_of(m), "global address must be 16-byte aligned");
  m.gmem = host_matrix + 4;  // 16 bytes in: enough without a swizzle
  EXPECT_EQ(problem_of(m), "");
  m.swizzle = Swizzle::b128;
  EXPECT_EQ(problem_of(m), "global address must be 128-byte aligned with a swizzle (guide Table 25)");
}

TEST(HostTensorMapRules, DimensionsAreOneToTwoToThe32) {
  TiledMap m = good_map();
  m.dims[1] = 0;
  EXPECT_EQ(problem_of(m), "dimension 1 must have 1 to 2^32 elements");
  m.dims[1] = (1ull << 32) + 1;
  EXPECT_EQ(problem_of(m), "dimension 1 must have 1 to 2^32 elements");
}

TEST(HostTensorMapRules, StridesAreMultiplesOf16BytesBelow2To40) {
  TiledMap m = good_map();
  m.strides[0] = 264;
  EXPECT_EQ(problem_of(m), "stride of dimension 1 must be a multiple of 16 bytes below 2^40 (got 264)");
  m.strides[0] = 1ull << 40;
  EXPECT_EQ(problem_of(m), "stride of dimension 1 must be a multiple of 16 bytes below 2^40 (got 1099511627776)");
}

TEST(HostTensorMapRules, RowsMustNotOverlap) {
  TiledMap m = good_map();
  m.strides[0] = 128;  // a row is 256 bytes
  EXPECT_EQ(problem_of(m), "rows must not overlap: stride 1 < a row's bytes");
}

TEST(HostTensorMapRules, BoxDimensionsAreOneTo256) {
  TiledMap m = good_map(Swizzle::none);
  m.box[1] = 0;
  EXPECT_EQ(problem_of(m), "box dimension 1 must be 1 to 256 elements");
  m.box[1] = 257;
  EXPECT_EQ(problem_of(m), "box dimension 1 must be 1 to 256 elements");
}

TEST(HostTensorMapRules, InnerBoxIsAMultipleOf16Bytes) {
  TiledMap m = good_map();
  m.box[0] = 6;  // 24 bytes
  EXPECT_EQ(problem_of(m), "inner box dimension must be a multiple of 16 bytes (got 24)");
}

TEST(HostTensorMapRules, InnerBoxFitsTheSwizzleSpan) {
  TiledMap m = good_map(Swizzle::b64);  // 32 floats = 128 bytes
  EXPECT_EQ(problem_of(m), "inner box dimension (128 bytes) must not exceed the swizzle span (64 bytes)");
  m.box[0] = 16;
  EXPECT_EQ(problem_of(m), "");
  m.swizzle = Swizzle::b32;
  EXPECT_EQ(problem_of(m), "inner box dimension (64 bytes) must not exceed the swizzle span (32 bytes)");
}

TEST(HostTensorMapRules, ElementStridesAreOneToEight) {
  TiledMap m = good_map();
  m.elem_strides[1] = 9;
  EXPECT_EQ(problem_of(m), "element stride 1 must be 1 to 8");
  m.elem_strides[1] = 0;
  EXPECT_EQ(problem_of(m), "element stride 1 must be 1 to 8");
}

TEST(HostTensorMapRules, EncodeRefusesBeforeCallingTheDriver) {
  TiledMap m = good_map();
  m.box[0] = 64;  // 256 bytes > the 128-byte span
  EXPECT_THROW(encode_tiled(m), course::UsageError);
}

TEST(HostSizeRule, SquareMatricesOfWholeTiles) {
  EXPECT_EQ(square_side(4u << 20), 1024);
  EXPECT_EQ(square_side(64u << 20), 4096);
  EXPECT_EQ(square_side(1u << 30), 16384);
  EXPECT_EQ(square_side(4 * 128 * 128), 128);
  EXPECT_EQ(square_side(4 * 1152 * 1152), 1152);
  EXPECT_FALSE(square_side(8u << 20));           // N = 1448.2
  EXPECT_FALSE(square_side(4 * 1056 * 1056));    // N = 1056 is a multiple of 32, not of the 128-row slab
  EXPECT_FALSE(square_side((4u << 20) + 4));
  EXPECT_FALSE(square_side(0));
  EXPECT_FALSE(square_side(4ull * 32800 * 32800));
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  EXPECT_TRUE(info.size_rule(3u << 20));
}

// ---- What the compiler emits (PTX generated by the build) ------------------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::read_text_file(COURSE_PTX_DIR "/swizzle.compute_90.ptx"); }
  // The whole kernel, its braces matched: inline-asm blocks in the PTX (mbarrier waits) also
  // close with a '}' at the start of a line, where course::ptx_kernel_body() stops.
  static std::string kernel(const char* name) {
    const std::string head = course::ptx_kernel_body(ptx_, name);
    EXPECT_FALSE(head.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    const std::size_t start = ptx_.find(head.substr(0, head.find('\n')));
    if (head.empty() || start == std::string::npos) return "";
    int depth = 0;
    for (std::size_t i = ptx_.find('{', start); i < ptx_.size(); ++i) {
      depth += ptx_[i] == '{' ? 1 : ptx_[i] == '}' ? -1 : 0;
      if (depth == 0) return ptx_.substr(start, i + 1 - start);
    }
    return ptx_.substr(start);
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  // Bytes of the kernel's local-memory frame (`.local .align 8 .b8 __local_depotN[16];`), 0 without one.
  static int local_depot_bytes(const std::string& body) {
    const std::size_t at = body.find("__local_depot");
    if (at == std::string::npos) return 0;
    const std::size_t open = body.find('[', at);
    return open == std::string::npos ? 0 : std::stoi(body.substr(open + 1));
  }
  static inline std::string ptx_;
};

// tma_unswizzled and tma_swizzled (SlabOrder 2: taken_columns).
constexpr const char* kTmaKernels[] = {"tma_transpose_kernelIL7Swizzle0EL9SlabOrder2E",
                                       "tma_transpose_kernelIL7Swizzle3EL9SlabOrder2E"};
constexpr const char* kGuideKernels[] = {"guide_int4_kernelIL7Swizzle0E", "guide_int4_kernelIL7Swizzle3E"};

TEST_F(HostCodegen, TmaKernelsLoadAndStoreWithTensorCopies) {
  for (const char* name : kTmaKernels) {
    const std::string k = kernel(name);
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")) << name;
    EXPECT_TRUE(has(k, "mbarrier.arrive.expect_tx")) << name;
    EXPECT_TRUE(has(k, "mbarrier.try_wait.parity")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.commit_group")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.wait_group.read 0")) << name;
    EXPECT_TRUE(has(k, "fence.proxy.async.shared::cta")) << name;
    EXPECT_TRUE(has(k, "fence.mbarrier_init.release.cluster")) << name;
    EXPECT_TRUE(has(k, "elect.sync")) << name << ": cg::invoke_one should elect with elect.sync";
  }
}

// The taken orders draw slab numbers from the counter with one atomic add per slab; the dealt
// order computes them.
TEST_F(HostCodegen, OnlyTheTakenOrdersUseTheCounter) {
  EXPECT_TRUE(has(kernel("tma_transpose_kernelIL7Swizzle3EL9SlabOrder2E"), "atom.global.add.u64"));
  EXPECT_TRUE(has(kernel("tma_transpose_kernelIL7Swizzle3EL9SlabOrder1E"), "atom.global.add.u64"));
  EXPECT_FALSE(has(kernel("tma_transpose_kernelIL7Swizzle3EL9SlabOrder0E"), "atom.global"));
}

// The bank model counts 16-byte accesses for these kernels: the compiler must keep them 16 bytes
// wide, and the rotation must not push the quad into local memory.
TEST_F(HostCodegen, SharedMemoryTransposeMovesSixteenBytesPerAccess) {
  for (const char* name : kTmaKernels) {
    const std::string k = kernel(name);
    EXPECT_TRUE(has(k, "ld.shared.v4.f32")) << name;
    EXPECT_TRUE(has(k, "st.shared.v4.f32")) << name;
    EXPECT_FALSE(has(k, "ld.shared.f32")) << name;
    // The only local memory is the 16-byte WaitSite the bounded wait hands to its diagnosis;
    // a quad indexed at run time (v[k ^ rotation]) would add 64 bytes.
    EXPECT_LE(local_depot_bytes(k), 16) << name << ": the quad went to local memory";
  }
  for (const char* name : kGuideKernels) {
    const std::string k = kernel(name);
    EXPECT_TRUE(has(k, "ld.shared.v4.u32")) << name;
    EXPECT_TRUE(has(k, "st.shared.v4.u32")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.shared::cta.global")) << name;
    EXPECT_TRUE(has(k, "cp.async.bulk.tensor.2d.global.shared::cta")) << name;
    EXPECT_TRUE(has(k, "elect.sync")) << name;
  }
}

TEST_F(HostCodegen, ClassicKernelMovesFloatsThroughRegisters) {
  const std::string k = kernel("classic_padded_kernel");
  EXPECT_TRUE(has(k, "ld.global"));
  EXPECT_TRUE(has(k, "st.shared.f32"));
  EXPECT_TRUE(has(k, "ld.shared.f32"));
  EXPECT_FALSE(has(k, "cp.async"));
}

// ---- On the GPU: the hardware as the oracle of the swizzle function --------------------------

/// [raw_layout]
// Loads one box with TMA into shared memory `shift_bytes` past a 1024-byte boundary, then copies
// the raw shared-memory bytes out, swizzle and all, with the buffer's two addresses.
__global__ void raw_layout_kernel(const __grid_constant__ CUtensorMap map, int box_bytes, int shift_bytes,
                                  std::uint32_t tx_bytes, uint4* gmem_raw, unsigned long long* gmem_addresses) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ std::uint64_t full_bar;
  const auto raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem_box = smem_raw + (1024 - raw_addr % 1024) % 1024 + shift_bytes;
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  if (threadIdx.x / 32 == 0) {
    cg::invoke_one(warp, [&] {
      ptx::mbarrier_init(&full_bar, 1);                                // the issuer's arrival completes the phase
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA unit
    });
  }
  __syncthreads();  // initialised before anyone waits
  if (threadIdx.x / 32 == 0) {
    cg::invoke_one(warp, [&] {
      const std::int32_t coords[2] = {0, 0};
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar, tx_bytes);
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, &map, coords, &full_bar);
      gmem_addresses[0] = __cvta_generic_to_shared(smem_box);            // shared-window address
      gmem_addresses[1] = reinterpret_cast<std::uintptr_t>(smem_box);    // generic address (the guide's formula)
    });
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", -1, 0});  // the box landed
  for (int i = threadIdx.x; i < box_bytes / kChunkBytes; i += blockDim.x) {
    gmem_raw[i] = reinterpret_cast<const uint4*>(smem_box)[i];
  }
}
/// [raw_layout]

// One probe: a box of `rows` rows whose inner dimension fills the swizzle span (128 bytes without
// one). Chunk j of row r holds {r, j, tag, ~(r * 64 + j)}, so every landed chunk names itself.
struct LayoutProbe {
  explicit LayoutProbe(Swizzle mode)
      : mode(mode), row_bytes(mode == Swizzle::none ? kRowBytes : span_bytes(mode)), rows(2048 / row_bytes),
        gmem_box(rows * row_bytes / sizeof(std::uint32_t)), gmem_raw(2048 / kChunkBytes), gmem_addresses(2) {
    std::vector<std::uint32_t> box(gmem_box.size());
    for (int r = 0; r < rows; ++r) {
      for (int j = 0; j < row_bytes / kChunkBytes; ++j) {
        std::uint32_t* chunk = &box[(r * row_bytes + j * kChunkBytes) / 4];
        chunk[0] = r, chunk[1] = j, chunk[2] = 0x5A000000u + static_cast<int>(mode), chunk[3] = ~(r * 64u + j);
      }
    }
    gmem_box.upload(box.data());
    map = encode_tiled(matrix_map(CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, gmem_box.data(), rows, row_bytes / 4, rows,
                                  row_bytes / 4, mode));
  }
  void launch(int shift_bytes, std::uint32_t tx_bytes) const {
    constexpr int kBoxBytes = 2048, kSmemBytes = kBoxBytes + 1024 + 896;  // box, alignment slack, largest shift
    raw_layout_kernel<<<1, 128, kSmemBytes>>>(map, kBoxBytes, shift_bytes, tx_bytes, gmem_raw.data(),
                                              gmem_addresses.data());
    COURSE_CHECK_LAUNCH();
  }
  // The first chunk whose place disagrees with swizzled_byte(), or "" when all 128 agree.
  std::string check(int shift_bytes) {
    gmem_raw.fill_bytes(course::kPoisonByte);
    launch(shift_bytes, 2048);
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<uint4> raw(gmem_raw.size());
    gmem_raw.download(raw.data());
    unsigned long long addresses[2];
    COURSE_CHECK(cudaMemcpy(addresses, gmem_addresses.data(), sizeof addresses, cudaMemcpyDeviceToHost));
    const int offset = swizzle_offset(mode, static_cast<std::uint32_t>(addresses[0]));
    const std::string where = std::string(swizzle_name(mode)) + ", buffer at shared address " +
                              std::to_string(addresses[0]) + " (offset " + std::to_string(offset) + ")";
    if ((addresses[0] / kRowBytes) % 8 != (addresses[1] / kRowBytes) % 8) {
      return where + ": the guide's formula on the generic address gives another offset";
    }
    for (std::size_t p = 0; p < raw.size(); ++p) {
      const uint4 c = raw[p];
      if (c.z != 0x5A000000u + static_cast<unsigned>(mode) || c.w != ~(c.x * 64u + c.y)) {
        return where + ": chunk at byte " + std::to_string(p * kChunkBytes) + " holds no landed chunk";
      }
      const std::uint32_t logical = c.x * row_bytes + c.y * kChunkBytes;
      if (swizzled_byte(mode, logical, offset) != p * kChunkBytes) {
        return where + ": row " + std::to_string(c.x) + " chunk " + std::to_string(c.y) + " landed at byte " +
               std::to_string(p * kChunkBytes) + ", the function says " +
               std::to_string(swizzled_byte(mode, logical, offset));
      }
    }
    return "";
  }
  Swizzle mode;
  int row_bytes, rows;
  course::DeviceBuffer<std::uint32_t> gmem_box;
  course::DeviceBuffer<uint4> gmem_raw;
  course::DeviceBuffer<unsigned long long> gmem_addresses;
  CUtensorMap map{};
};

class Sm90_SwizzleOracle : public course::GpuTest {
 protected:
  Sm90_SwizzleOracle() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_SwizzleOracle, TmaPutsEveryChunkWhereTheFunctionSays) {
  for (Swizzle mode : kAllSwizzles) {
    LayoutProbe probe(mode);
    for (int shift = 0; shift < 1024; shift += kRowBytes) EXPECT_EQ(probe.check(shift), "") << "shift " << shift;
  }
}

class Sm90_BoundedWait : public course::GpuTest {
 protected:
  Sm90_BoundedWait() : GpuTest(chapter_info().requirement) {}
};

// A broken expect_tx: the barrier waits for 16 bytes more than the box brings, so the phase never
// completes. The bounded wait must name the barrier instead of hanging.
TEST_F(Sm90_BoundedWait, WrongTransactionCountIsDiagnosed) {
  LayoutProbe probe(Swizzle::b128);
  COURSE_EXPECT_DIAGNOSED_HANG(probe.launch(0, 2048 + 16), "bounded wait: gave up .*barrier 'full'", 30.0);
}

// ---- On the GPU: every variant --------------------------------------------------------------

class Sm90_Swizzle : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_Swizzle() : GpuTest(chapter_info().requirement) {}
  course::Comparison verify_matrix(int rows, int cols) {
    Problem problem(rows, cols);
    return verify(GetParam(), problem);
  }
};

TEST_P(Sm90_Swizzle, OneSlab) {
  const course::Comparison result = verify_matrix(kSlabRows, kSlabCols);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

// 96 x 160: the last slab row and column hang over the edge. Their loads find zeros outside the
// matrix and their stores are clipped there; nothing outside the output may change.
TEST_P(Sm90_Swizzle, SlabsHangingOverTheEdge) {
  const course::Comparison result = verify_matrix(kSlabRows + kTileDim, kSlabCols + kTileDim);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;  // the guard bands included
}

TEST_P(Sm90_Swizzle, ManyMoreSlabsThanResidentBlocks) {
  const course::Comparison result = verify_matrix(2048, 2048);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_Swizzle, Rectangle) {
  const course::Comparison result = verify_matrix(256, 96);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

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

}  // namespace
