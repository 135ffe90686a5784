// Tests for 07_tma_2d: every tensor-map rule of the teaching copy on the CPU (and against the
// driver on the GPU), its agreement with the course's encoder (same verdicts, same bytes), the host
// model of zero fill and clipped stores, what each kernel of the lesson and the lab compiles to,
// raw out-of-bounds boxes, every lesson variant and every lab row bit-exact on awkward shapes, and
// a miscounted barrier diagnosed, not hung.
#include "tma_2d_lab.cu"  // the lab, which brings the lesson and the model
#include "tma_2d_figures.cpp"  // box_fill_svg, chapter_figures

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "course/codegen.hpp"
#include "course/tensor_map.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

namespace {

// ---- Tensor-map rules, one by one -----------------------------------------------------------

// The rules look at the address's value only; this one is 16-byte aligned (and 256-byte).
const float* const kAlignedAddress = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);

// A valid request: a 999 x 1001 float matrix with rows padded to 1004 floats (4016 bytes).
TensorMapRequest padded_request(const float* base = kAlignedAddress) { return matrix_request(base, {999, 1001, 1004}); }

struct RuleCase {
  const char* name;
  void (*breaks)(TensorMapRequest&);
  const char* says;             // a part of the sentence broken_tensor_map_rule() must return
  bool driver_rejects = true;   // false: a rule of this course that the driver does not check
};
const RuleCase kRuleCases[] = {
    {"AddressOff16Bytes", [](TensorMapRequest& r) { r.global_address = static_cast<const char*>(r.global_address) + 4; },
     "-byte aligned"},
    {"NullAddress", [](TensorMapRequest& r) { r.global_address = nullptr; }, "global address is null", false},
    {"PackedRowsOf1001Floats", [](TensorMapRequest& r) { r.global_strides[0] = 1001 * sizeof(float); },
     "globalStrides[0] = 4004 bytes is not a multiple of 16 (pad each row to 4016 bytes)"},
    {"StrideOf2To40", [](TensorMapRequest& r) { r.global_strides[0] = 1ull << 40; }, "is not below 2^40"},
    {"PitchShorterThanRow", [](TensorMapRequest& r) { r.global_strides[0] = 992 * sizeof(float); },
     "globalStrides[0] = 3968 bytes is less than the 4004 bytes", false},
    {"ZeroRows", [](TensorMapRequest& r) { r.global_dim[1] = 0; }, "globalDim[1] = 0 is outside 1..2^32"},
    {"DimAbove2To32", [](TensorMapRequest& r) { r.global_dim[1] = (1ull << 32) + 1; }, "globalDim[1] = 4294967297"},
    {"BoxOf257Rows", [](TensorMapRequest& r) { r.box_dim[1] = 257; }, "boxDim[1] = 257 is outside 1..256"},
    {"EmptyBox", [](TensorMapRequest& r) { r.box_dim[0] = 0; }, "boxDim[0] = 0 is outside 1..256"},
    {"BoxRowOf24Bytes", [](TensorMapRequest& r) { r.box_dim[0] = 6; },
     "boxDim[0] x element size = 24 bytes is not a multiple of 16"},
    {"ElementStrideZero", [](TensorMapRequest& r) { r.element_strides[1] = 0; }, "elementStrides[1] = 0 is outside 1..8"},
    {"ElementStrideNine", [](TensorMapRequest& r) { r.element_strides[1] = 9; }, "elementStrides[1] = 9 is outside 1..8"},
    {"RankZero", [](TensorMapRequest& r) { r.rank = 0; }, "rank 0 is outside 1..5"},
    {"RankSix", [](TensorMapRequest& r) { r.rank = 6; }, "rank 6 is outside 1..5"},
    {"UnknownDataType", [](TensorMapRequest& r) { r.data_type = static_cast<CUtensorMapDataType>(99); },
     "data type 99 is not"},
    {"NanFillForIntegers",
     [](TensorMapRequest& r) {
       r.data_type = CU_TENSOR_MAP_DATA_TYPE_INT32;
       r.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
     },
     "the NaN out-of-bounds fill needs a floating-point data type"},
    {"BoxRowWiderThanSwizzle", [](TensorMapRequest& r) { r.swizzle = CU_TENSOR_MAP_SWIZZLE_64B; },
     "bytes exceeds the 64-byte swizzle span"},
    {"InterleaveInRankTwo", [](TensorMapRequest& r) { r.interleave = CU_TENSOR_MAP_INTERLEAVE_16B; },
     "an interleaved layout needs rank 3 or more, not 2"},
    {"UnknownSwizzle", [](TensorMapRequest& r) { r.swizzle = static_cast<CUtensorMapSwizzle>(42); },
     "is not a value of its enum"},
    {"BoxOf256KiB", [](TensorMapRequest& r) { r.box_dim[1] = 256; },
     "one copy of this box moves 262144 bytes (boxDim / elementStrides per dimension, rounded down); the driver "
     "allows at most 233472"},
};

void PrintTo(const RuleCase& rule, std::ostream* out) { *out << rule.name; }

class HostTensorMapRules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(HostTensorMapRules, BreakingTheRuleIsNamed) {
  TensorMapRequest request = padded_request();
  ASSERT_FALSE(broken_tensor_map_rule(request)) << "the unbroken request must pass";
  GetParam().breaks(request);
  const std::optional<std::string> broken = broken_tensor_map_rule(request);
  ASSERT_TRUE(broken) << "the rule was not caught";
  EXPECT_NE(broken->find(GetParam().says), std::string::npos) << *broken;
  EXPECT_THROW(encode_tiled(request), std::invalid_argument) << "encode_tiled must refuse before calling the driver";
}

INSTANTIATE_TEST_SUITE_P(Rules, HostTensorMapRules, ::testing::ValuesIn(kRuleCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HostTensorMap, TheChaptersMatricesPass) {
  for (const MatrixView m : {MatrixView{16384, kMatrixCols, kMatrixCols}, MatrixView{999, 1001, 1004},
                             MatrixView{257, 16380, 16380}, MatrixView{64, 125, 128}}) {
    EXPECT_FALSE(broken_tensor_map_rule(matrix_request(kAlignedAddress, m))) << m.rows << " x " << m.cols;
  }
}

// The guide says both "all sizes must be greater than one" and "greater than or equal to one";
// the driver's rule is the second, and a one-row matrix is a valid tensor.
TEST(HostTensorMap, OneRowIsAValidSize) {
  EXPECT_FALSE(broken_tensor_map_rule(matrix_request(kAlignedAddress, {1, 128, 128})));
  EXPECT_FALSE(broken_tensor_map_rule(matrix_request(kAlignedAddress, {1, 4, 4})));
}

TEST(HostTensorMap, FiveDimensionsAndAnEvenElementStrideAreFine) {
  TensorMapRequest r = padded_request();
  r.rank = 5;
  for (int i = 2; i < 5; ++i) {
    r.global_dim[i] = 3;
    r.box_dim[i] = 2;
  }
  r.global_strides[1] = 999ull * 4016;
  r.global_strides[2] = 3 * r.global_strides[1];
  r.global_strides[3] = 3 * r.global_strides[2];
  r.element_strides[1] = 2;
  EXPECT_FALSE(broken_tensor_map_rule(r)) << *broken_tensor_map_rule(r);
  r.global_strides[3] = 2 * r.global_strides[2];  // dimension 4's index would overlap dimension 3's
  EXPECT_TRUE(broken_tensor_map_rule(r));
}

// ---- The host model of a tensor copy ------------------------------------------------------

std::vector<float> counting_matrix(const MatrixView& m) {
  std::vector<float> gmem(std::size_t(m.rows) * m.pitch_elems, -1.0f);  // padding: -1
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) gmem[std::size_t(r) * m.pitch_elems + c] = float(1000 * r + c + 1);
  }
  return gmem;
}

TEST(HostTmaModel, LoadFillsZerosOutsideTheMatrixAlsoAtNegativeStarts) {
  const MatrixView m{3, 5, 8};
  const std::vector<float> gmem = counting_matrix(m);
  std::vector<float> box(kTileElems);
  load_box_model(gmem, m, -2, -1, box.data());
  EXPECT_EQ(box[0], 0.0f);                       // (row -1, col -2)
  EXPECT_EQ(box[1 * kTileCols + 1], 0.0f);       // (row 0, col -1)
  EXPECT_EQ(box[1 * kTileCols + 2], 1.0f);       // (row 0, col 0)
  EXPECT_EQ(box[3 * kTileCols + 6], 2005.0f);    // (row 2, col 4): the last element
  EXPECT_EQ(box[3 * kTileCols + 7], 0.0f);       // (row 2, col 5): padding is outside the matrix
  EXPECT_EQ(box[4 * kTileCols + 2], 0.0f);       // (row 3, col 0): below the matrix
}

TEST(HostTmaModel, StoreClipsAtSixteenByteGranules) {
  const MatrixView m{10, 18, 24};  // rows of 72 bytes in a 96-byte pitch
  std::vector<float> gmem(std::size_t(m.rows) * m.pitch_elems, -1.0f);
  const std::vector<float> box(kTileElems, 7.0f);
  store_box_model(gmem, m, 16, 8, box.data());
  int written = 0;
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.pitch_elems; ++c) {
      const bool expected = r >= 8 && c >= 16 && c < 20;  // columns 18 and 19 are padding in the granule
      EXPECT_EQ(gmem[std::size_t(r) * m.pitch_elems + c], expected ? 7.0f : -1.0f) << r << ", " << c;
      written += expected;
    }
  }
  EXPECT_EQ(written, 2 * 4);
}

// The tile-by-tile reference against a direct formula: out[r][c] = modify(in[r - dy][c - dx]),
// zero outside the input; the padding keeps the poison beyond the last 16-byte granule.
TEST(HostTmaModel, TileByTileReferenceMatchesTheDirectFormula) {
  for (const MatrixView m : {MatrixView{1, 4, 4}, MatrixView{32, 256, 256}, MatrixView{130, 250, 252},
                             MatrixView{999, 1001, 1004}, MatrixView{70, 1001, 1012}}) {
    std::vector<float> in(std::size_t(m.rows) * m.pitch_elems);
    course::fill_pattern(in);
    for (bool shifted : {false, true}) {
      const std::vector<float> out = reference(in, m, shifted);
      const int dy = shifted ? kShiftRows : 0, dx = shifted ? kShiftCols : 0;
      const int granule_end = (m.cols + 3) / 4 * 4;
      std::vector<float> direct(in.size(), course::poison_value<float>());
      for (int r = 0; r < m.rows; ++r) {
        for (int c = 0; c < granule_end; ++c) {
          const bool inside = r - dy >= 0 && c - dx >= 0 && c - dx < m.cols;
          direct[std::size_t(r) * m.pitch_elems + c] =
              modify(inside ? in[std::size_t(r - dy) * m.pitch_elems + (c - dx)] : 0.0f);
        }
      }
      const course::Comparison same = course::compare_exact(out, direct, m.pitch_elems);
      EXPECT_TRUE(same.ok()) << m.rows << " x " << m.cols << (shifted ? " shifted" : "") << ": " << same.summary()
                             << '\n' << same.first;
    }
  }
}

TEST(HostTileGrid, CoversAnAwkwardMatrix) {
  static_assert(kTileCols == 256 && kTileRows == 32, "the numbers below are for 32 x 256 tiles");
  const TileGrid grid = tile_grid({999, 1001, 1004}, true);
  EXPECT_EQ(grid.tiles_x, 4);             // 3 full tiles of 256 columns and one of 233
  EXPECT_EQ(grid.num_tiles, 4 * 32);      // 31 full tiles of 32 rows and one of 7
  EXPECT_EQ(grid.shift_cols, kShiftCols);
  EXPECT_EQ(tile_origin(grid, 9).x, 256);
  EXPECT_EQ(tile_origin(grid, 9).y, 64);
}

// The rings' claim: tile i of a block uses stage i mod kStages and waits for phase parity
// floor(i / kStages) mod 2 of that stage's barrier; course::StageCursor walks exactly that.
template <int kRing>
void expect_cursor_walks_the_ring() {
  course::StageCursor<kRing> cursor;
  for (int i = 0; i < 5 * kRing + 1; ++i, cursor.advance()) {
    EXPECT_EQ(cursor.stage, i % kRing) << kRing << " stages, tile " << i;
    EXPECT_EQ(cursor.phase, static_cast<std::uint32_t>((i / kRing) % 2)) << kRing << " stages, tile " << i;
  }
}

TEST(HostStageCursor, WalksStagesAndFlipsThePhaseEachRound) {
  expect_cursor_walks_the_ring<1>();  // the one-stage loop: the phase flips every tile
  expect_cursor_walks_the_ring<2>();
  expect_cursor_walks_the_ring<3>();
  expect_cursor_walks_the_ring<4>();  // the lesson's ring
}

TEST(HostChapter, SizeIsWholeRows) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kRowBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(16384 * kRowBytes)) << info.program;
    EXPECT_TRUE(info.size_rule(0)) << info.program << ": no rows, no tiles, no grid to launch";
    EXPECT_TRUE(info.size_rule(kRowBytes + 16)) << info.program;
    EXPECT_TRUE(info.size_rule(std::size_t{1} << 41)) << info.program;
  }
}

TEST(HostChapter, HostModelShowsTheRejectedAndThePaddedPitch) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    std::ostringstream text;
    info.host_model(text);
    EXPECT_NE(text.str().find("rejected: globalStrides[0] = 4004 bytes is not a multiple of 16 (pad each row to 4016"),
              std::string::npos)
        << info.program << '\n' << text.str();
    EXPECT_NE(text.str().find("row pitch 4016 B -> tensor map ok"), std::string::npos) << text.str();
  }
}

// ---- The concept figure: a box at the edges, drawn from the model ------------------------------

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

TEST(HostFigures, CommittedSvgIsWhatTheModelDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

// The figure counts what the model loads: box A at (-4, -3) keeps 4 x 2 elements of the matrix,
// box B at (8, 5) 4 x 3; the rest of each 8 x 5 box is zeros.
TEST(HostFigures, TheFigureCountsWhatTheModelLoads) {
  const std::string svg = box_fill_svg();
  EXPECT_TRUE(contains(svg, "A: 8 of 40 elements loaded, 32 zeros")) << svg;
  EXPECT_TRUE(contains(svg, "B: 12 of 40 elements loaded, 28 zeros")) << svg;
  EXPECT_EQ(course::count_matches(svg, R"re(fill="#7a4a12">0</text>)re"), 32 + 28) << "one zero per filled element";
}

TEST(HostFigures, TheFigureScalesAndHasABackground) {
  const std::string svg = box_fill_svg();
  EXPECT_TRUE(contains(svg, "viewBox=\"0 0 720 "));
  EXPECT_TRUE(contains(svg, "width=\"100%\""));
  EXPECT_TRUE(contains(svg, "fill=\"#ffffff\""));
  EXPECT_EQ(course::count_matches(svg, R"re(font-size="([0-9]|1[01])")re"), 0) << "text at least 12 units";
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits (PTX generated by the build) --------------------------------

// Every tensor copy is one instruction. A load names the map and the box's coordinates {x, y},
// and completes on an mbarrier by bytes; a store completes through a bulk async-group:
//   cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [smem], [map, {x, y}], [bar];
//   cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {x, y}], [smem];
// mbarrier.arrive.expect_tx announces the bytes; fence.mbarrier_init.release.cluster makes the
// initialised barrier visible to the async proxy; fence.proxy.async.shared::cta orders the threads'
// st.shared before the store reads them; cp.async.bulk.commit_group / wait_group.read close and
// await the stores; elect.sync picks the issuing lane; fence.proxy.tensormap::generic.acquire
// makes a map in global memory visible to the tensormap proxy. No cp.async.ca / cp.async.cg
// (the LDGSTS copies of chapters 02-05): nothing passes through the old asynchronous copy path.
class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ptx_ = course::chapter_ptx("tma_2d", "90");
    lab_ptx_ = course::chapter_ptx("tma_2d_lab", "90");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static std::string lesson(const char* name) { return kernel(lesson_ptx_, name); }
  static std::string lab(const char* name) { return kernel(lab_ptx_, name); }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static inline std::string lesson_ptx_, lab_ptx_;
};

const char* const kLessonKernels[] = {"minimal_kernel", "ring_kernelILi4E"};
// The lab's kernels: the minimal kernel's body with the maps elsewhere, the lesson's ring at other
// depths, and the in-order pipeline.
const char* const kLabKernels[] = {"constant_memory_kernel", "global_memory_kernel",
                                   "ring_kernelILi2E", "in_order_kernel"};
// The kernels whose copies an elected lane issues (the others use threadIdx.x == 0).
const char* const kElectingKernels[] = {"ring_kernelILi4E", "ring_kernelILi2E",
                                        "in_order_kernel"};

void expect_tensor_copies_only(const std::string& k, const char* name) {
  auto has = [&](const char* text) { return k.find(text) != std::string::npos; };
  EXPECT_TRUE(has("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes")) << name;
  EXPECT_TRUE(has("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")) << name;
  EXPECT_TRUE(has("mbarrier.arrive.expect_tx")) << name;
  EXPECT_TRUE(has("fence.mbarrier_init.release.cluster")) << name << ": the initialised barrier is visible to TMA";
  EXPECT_TRUE(has("fence.proxy.async.shared::cta")) << name << ": st.shared must be fenced before the store";
  EXPECT_TRUE(has("cp.async.bulk.commit_group")) << name;
  EXPECT_TRUE(has("cp.async.bulk.wait_group.read")) << name;
  EXPECT_FALSE(has("ld.global")) << name << ": no element passes through registers from global memory";
  EXPECT_FALSE(has("st.global")) << name;
  EXPECT_EQ(course::count_matches(k, R"(cp\.async\.c[ag]\.)"), 0) << name << ": no LDGSTS-style copy";
}

TEST_F(HostCodegen, EveryKernelMovesTilesWithTensorCopiesOnly) {
  for (const char* name : kLessonKernels) expect_tensor_copies_only(lesson(name), name);
  for (const char* name : kLabKernels) expect_tensor_copies_only(lab(name), name);
  for (const std::string* ptx : {&lesson_ptx_, &lab_ptx_}) {
    EXPECT_EQ(course::count_matches(*ptx, R"(cp\.async\.c[ag]\.)"), 0) << "no cp.async.ca / cp.async.cg anywhere";
  }
  for (const char* name : kElectingKernels) EXPECT_TRUE(has(lab(name), "elect.sync")) << name;
  EXPECT_FALSE(has(lesson("minimal_kernel"), "elect.sync")) << "the minimal kernel: threadIdx.x == 0";
}

// Where the map lives decides how the kernel finds its address.
TEST_F(HostCodegen, TheMapIsReadWhereItLives) {
  for (const char* name : kLessonKernels) {
    EXPECT_TRUE(has(lesson(name), "cvta.param.u64")) << name << ": the parameter's own address, no local copy";
    EXPECT_FALSE(has(lesson(name), "fence.proxy.tensormap")) << name;
  }
  EXPECT_TRUE(has(lab("in_order_kernel"), "cvta.param.u64"));
  EXPECT_TRUE(has(lab("constant_memory_kernel"), "cvta.const.u64"));
  EXPECT_FALSE(has(lab("constant_memory_kernel"), "fence.proxy.tensormap"));
  EXPECT_TRUE(has(lab("global_memory_kernel"), "fence.proxy.tensormap::generic.acquire.sys"));
}

// The ring's store thread waits for all but its newest store to have read shared memory, and
// releases that stage; the minimal kernel waits for its one store.
TEST_F(HostCodegen, RingsFreeAStageOneStoreLate) {
  for (const char* name : {"ring_kernelILi4E", "ring_kernelILi2E", "in_order_kernel"}) {
    EXPECT_TRUE(has(lab(name), "cp.async.bulk.wait_group.read 1;")) << name;
  }
  EXPECT_TRUE(has(lesson("minimal_kernel"), "cp.async.bulk.wait_group.read 0;"));
  EXPECT_FALSE(has(lesson("minimal_kernel"), "cp.async.bulk.wait_group.read 1;"));
}

// The lesson's kernels compute their tiles (blockIdx.x, + gridDim.x, ...): no global counter.
// Only the lab's in-order pipeline takes tiles from one, with one atomic add per tile.
TEST_F(HostCodegen, OnlyTheInOrderPipelineUsesACounter) {
  EXPECT_TRUE(has(lab("in_order_kernel"), "atom.global.add.u64"));
  for (const char* name : kLessonKernels) EXPECT_FALSE(has(lesson(name), "atom.global")) << name;
  for (const char* name : {"ring_kernelILi2E", "constant_memory_kernel",
                           "global_memory_kernel"}) {
    EXPECT_FALSE(has(lab(name), "atom.global")) << name;
  }
}

// A plain arrival (no bytes): the ring's consumers release a stage on its empty barrier; the
// in-order pipeline signals the end through a full barrier. The minimal kernel has neither.
TEST_F(HostCodegen, PlainArrivalsReleaseStagesOrSignalTheEnd) {
  const char* const plain_arrive = R"(mbarrier\.arrive\.release)";  // not arrive.expect_tx
  EXPECT_GT(course::count_matches(lesson("ring_kernelILi4E"), plain_arrive), 0);
  EXPECT_GT(course::count_matches(lab("in_order_kernel"), plain_arrive), 0);
  EXPECT_EQ(course::count_matches(lesson("minimal_kernel"), plain_arrive), 0);
}

// In the machine code a tensor load is UTMALDG, a tensor store UTMASTG, and the mbarrier
// operations (arrive, expect-tx, try-wait) are SYNCS instructions; no LDGSTS.
TEST_F(HostCodegen, MachineCodeUsesTheTmaUnit) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (const char* name : {"minimal_kernel", "ring_kernelILi4E", "constant_memory_kernel",
                           "global_memory_kernel", "in_order_kernel"}) {
    const std::string k = course::sass_kernel_body(sass, name);
    ASSERT_FALSE(k.empty()) << "no kernel " << name << " in the sm_90 machine code";
    EXPECT_TRUE(has(k, "UTMALDG")) << name;
    EXPECT_TRUE(has(k, "UTMASTG")) << name;
    EXPECT_TRUE(has(k, "SYNCS")) << name;
    EXPECT_FALSE(has(k, "LDGSTS")) << name;
  }
}

// ---- On the GPU: every lesson variant and every lab row -------------------------------------

class Sm90_Tma2d : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_Tma2d() : GpuTest(chapter_info().requirement) {}
  void expect_correct(int rows, int pitch_elems, unsigned max_blocks = 0) {
    Problem problem(rows, pitch_elems);
    const course::Comparison result = verify(GetParam(), problem, max_blocks);
    EXPECT_TRUE(result.ok()) << rows << " x " << problem.view(GetParam().padded).cols << " (pitch " << pitch_elems
                             << "): " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_Tma2d, OneTile) { expect_correct(kTileRows, kTileCols); }
TEST_P(Sm90_Tma2d, OneRow) { expect_correct(1, kTileCols); }
TEST_P(Sm90_Tma2d, PaddedPitchAndPartialTiles) { expect_correct(999, 1004); }
TEST_P(Sm90_Tma2d, WideRowsNotAMultipleOfTheTile) { expect_correct(257, 16380); }
TEST_P(Sm90_Tma2d, ManyTilesThroughThreeBlocks) { expect_correct(300, 2048, 3); }  // ~27 tiles per block
TEST_P(Sm90_Tma2d, OneBlockWalksEveryStageAndPhase) { expect_correct(130, 512, 1); }
// 10 tiles, 4 blocks of 4 stages: some blocks have fewer tiles than stages.
TEST_P(Sm90_Tma2d, FewerTilesThanStagesOfAllBlocks) { expect_correct(64, 1280, 4); }

TEST_P(Sm90_Tma2d, RepeatedRunsGiveTheSameBits) {
  Problem problem(520, 4096);
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90_Tma2d, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm90_Tma2dLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm90_Tma2dLab() : GpuTest(lab::chapter_info().requirement) {}
  void expect_correct(int rows, int pitch_elems, unsigned max_blocks = 0) {
    lab::Problem problem(rows, pitch_elems);
    const course::Comparison result = lab::verify(GetParam(), problem, max_blocks);
    EXPECT_TRUE(result.ok()) << rows << " x " << problem.view(GetParam().padded).cols << " (pitch " << pitch_elems
                             << "): " << result.summary() << '\n' << result.first;
  }
};

TEST_P(Sm90_Tma2dLab, OneTile) { expect_correct(kTileRows, kTileCols); }
TEST_P(Sm90_Tma2dLab, OneRow) { expect_correct(1, kTileCols); }
TEST_P(Sm90_Tma2dLab, PaddedPitchAndPartialTiles) { expect_correct(999, 1004); }
TEST_P(Sm90_Tma2dLab, WideRowsNotAMultipleOfTheTile) { expect_correct(257, 16380); }
TEST_P(Sm90_Tma2dLab, ManyTilesThroughThreeBlocks) { expect_correct(300, 2048, 3); }  // ~27 tiles per block
TEST_P(Sm90_Tma2dLab, OneBlockWalksEveryStageAndPhase) { expect_correct(130, 512, 1); }
TEST_P(Sm90_Tma2dLab, FewerTilesThanStagesOfAllBlocks) { expect_correct(64, 1280, 4); }

TEST_P(Sm90_Tma2dLab, RepeatedRunsGiveTheSameBits) {
  lab::Problem problem(520, 4096);
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = lab::verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Sm90_Tma2dLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// A store past the right edge writes whole 16-byte granules. With 11 floats of padding per row,
// the 3 in the last column's granule are overwritten and the other 8 keep the poison.
class Sm90_TmaStore : public course::GpuTest {
 protected:
  Sm90_TmaStore() : GpuTest(chapter_info().requirement) {}
};

// The lesson's ring keeps the bytes in flight per SM that Little's law asks of this GPU.
TEST_F(Sm90_TmaStore, TheRingKeepsTheBytesInFlightThisGpuNeeds) {
  ASSERT_TRUE(chapter_info().in_flight.has_value());
  course::expect_enough_in_flight(*chapter_info().in_flight, device());
}

TEST_F(Sm90_TmaStore, ClipsAtSixteenByteGranules) {
  const MatrixView m{70, 1001, 1012};
  std::vector<float> host_in(std::size_t(m.rows) * m.pitch_elems);
  course::fill_pattern(host_in, 3);
  course::DeviceBuffer<float> gmem_in(host_in.size());
  gmem_in.upload(host_in.data());
  course::GuardedOutput<float> gmem_out(host_in.size());
  gmem_out.poison();
  const TileMaps maps{encode_tiled(matrix_request(gmem_in.data(), m)),
                      encode_tiled(matrix_request(gmem_out.data(), m))};
  launch_ring<kStages>(maps, tile_grid(m, false), 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = gmem_out.check(reference(host_in, m, false), m.pitch_elems);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

// ---- On the GPU: the driver and the rules --------------------------------------------------

class Sm90_TensorMap : public course::GpuTest {
 protected:
  Sm90_TensorMap() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_TensorMap, TheSameRequestGivesTheSameBytes) {
  course::DeviceBuffer<float> matrix(999 * 1004);
  const CUtensorMap first = encode_tiled(padded_request(matrix.data()));
  const CUtensorMap second = encode_tiled(padded_request(matrix.data()));
  EXPECT_EQ(std::memcmp(&first, &second, sizeof(CUtensorMap)), 0);
  const CUtensorMap other = encode_tiled(matrix_request(matrix.data(), {999, 1000, 1004}));
  EXPECT_NE(std::memcmp(&first, &other, sizeof(CUtensorMap)), 0) << "the map must depend on the matrix";
}

TEST_F(Sm90_TensorMap, OneRowMatrixIsAccepted) {
  course::DeviceBuffer<float> matrix(kTileCols);
  EXPECT_NO_THROW(encode_tiled(matrix_request(matrix.data(), {1, kTileCols, kTileCols})));
}

TEST_F(Sm90_TensorMap, RefusalNamesTheDriverResult) {
  course::DeviceBuffer<float> matrix(999 * 1004);
  TensorMapRequest request = padded_request(matrix.data());
  request.global_strides[0] = 1001 * sizeof(float);
  try {
    encode_tiled_unchecked(request);
    FAIL() << "the driver accepted a 4004-byte row stride";
  } catch (const course::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << error.what();
  }
}

// Every request the host rules reject, the driver rejects too, except for the two rules of
// this course (a null address, rows that overlap), which the driver accepts: for those the
// host check is the only guard.
class Sm90_TensorMapDriver : public course::GpuTest, public ::testing::WithParamInterface<RuleCase> {
 protected:
  Sm90_TensorMapDriver() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm90_TensorMapDriver, RejectsWhatTheRulesReject) {
  course::DeviceBuffer<float> matrix(999 * 1004 + 16);
  TensorMapRequest request = padded_request(matrix.data());
  EXPECT_NO_THROW(encode_tiled_unchecked(request));
  GetParam().breaks(request);
  if (GetParam().driver_rejects) {
    EXPECT_THROW(encode_tiled_unchecked(request), course::CudaError) << "the driver accepted it";
  } else {
    EXPECT_NO_THROW(encode_tiled_unchecked(request)) << "the driver now checks this rule too";
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, Sm90_TensorMapDriver, ::testing::ValuesIn(kRuleCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- The shared library's copy of this chapter's encoding (course/tensor_map.hpp) ----------

// The same request in the library's type, field by field.
course::TensorMapRequest promoted(const TensorMapRequest& r) {
  course::TensorMapRequest p;
  p.data_type = r.data_type;
  p.rank = r.rank;
  p.global_address = r.global_address;
  std::copy(std::begin(r.global_dim), std::end(r.global_dim), std::begin(p.global_dim));
  std::copy(std::begin(r.global_strides), std::end(r.global_strides), std::begin(p.global_strides));
  std::copy(std::begin(r.box_dim), std::end(r.box_dim), std::begin(p.box_dim));
  std::copy(std::begin(r.element_strides), std::end(r.element_strides), std::begin(p.element_strides));
  p.interleave = r.interleave;
  p.swizzle = r.swizzle;
  p.l2_promotion = r.l2_promotion;
  p.oob_fill = r.oob_fill;
  return p;
}

TEST(HostPromotedTensorMap, ReportsTheSameBrokenRuleForEveryCase) {
  for (const RuleCase& rule : kRuleCases) {
    TensorMapRequest request = padded_request();
    rule.breaks(request);
    EXPECT_EQ(broken_tensor_map_rule(request), course::broken_tensor_map_rule(promoted(request))) << rule.name;
  }
  EXPECT_EQ(broken_tensor_map_rule(padded_request()), course::broken_tensor_map_rule(promoted(padded_request())));
}

// Requests near every boundary of every argument: a valid request of random type, rank, layout
// and shape, then 0 to 3 arguments moved to a boundary value (an enum's last value and one past
// it, rank 0 and 6, misaligned addresses and strides, dimensions and boxes at their limits).
class RequestMaker {
 public:
  explicit RequestMaker(std::uint32_t seed) : rng_(seed) {}

  TensorMapRequest make() {
    TensorMapRequest r = valid();
    for (int m = static_cast<int>(uniform(4)); m > 0; --m) mutate(r);
    return r;
  }
  TensorMapRequest valid() {
    TensorMapRequest r;
    r.data_type = static_cast<CUtensorMapDataType>(uniform(13));  // the 1- to 8-byte types
    r.rank = static_cast<std::uint32_t>(1 + uniform(5));
    r.swizzle = static_cast<CUtensorMapSwizzle>(uniform(4));
    r.l2_promotion = static_cast<CUtensorMapL2promotion>(uniform(4));
    r.oob_fill = is_floating(r.data_type) && uniform(3) == 0 ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                                              : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    r.global_address = reinterpret_cast<const void*>(0x7f0000000000ull + 16 * uniform(64));
    const std::uint32_t elem = element_bytes(r.data_type), span = swizzle_span_bytes(r.swizzle);
    for (std::uint32_t i = 0; i < 5; ++i) {
      r.global_dim[i] = i < r.rank ? 1 + uniform(uniform(5) == 0 ? (1u << 20) : 300) : 1;
      r.box_dim[i] = static_cast<std::uint32_t>(1 + uniform(i < 2 ? 256 : 4));
      r.element_strides[i] = static_cast<std::uint32_t>(uniform(5) == 0 ? 1 + uniform(8) : 1);
    }
    const std::uint32_t unit = 16 / elem, max_inner = std::min<std::uint32_t>(256, (span ? span : 2048) / elem);
    r.box_dim[0] = unit * static_cast<std::uint32_t>(1 + uniform(std::max<std::uint32_t>(max_inner / unit, 1)));
    std::uint64_t pitch = r.global_dim[0] * elem;
    for (std::uint32_t i = 0; i + 1 < r.rank; ++i) {
      pitch = (pitch + 15) / 16 * 16 + 16 * uniform(3);
      r.global_strides[i] = pitch;
      pitch *= r.global_dim[i + 1];
    }
    return r;
  }

 private:
  void mutate(TensorMapRequest& r) {
    const int i = static_cast<int>(uniform(5));
    const std::uint64_t s = r.global_strides[i % 4];
    switch (uniform(12)) {
      case 0: r.data_type = static_cast<CUtensorMapDataType>(uniform(17)); break;  // packed types and one past
      case 1: r.rank = static_cast<std::uint32_t>(uniform(7)); break;
      case 2:
        r.interleave = static_cast<CUtensorMapInterleave>(uniform(4));
        if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_16B || r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B) {
          std::uint64_t pitch = r.global_dim[0] * interleave_slice_bytes(r.interleave);  // a slice per index
          for (std::uint32_t d = 0; d < 4; ++d) {
            r.global_strides[d] = pitch;  // packed: one index of dimension d + 1 spans the rows below it
            pitch *= r.global_dim[d + 1];
          }
        }
        break;
      case 3: r.swizzle = static_cast<CUtensorMapSwizzle>(uniform(8)); break;
      case 4: r.l2_promotion = static_cast<CUtensorMapL2promotion>(uniform(5)); break;
      case 5: r.oob_fill = static_cast<CUtensorMapFloatOOBfill>(uniform(3)); break;
      case 6:
        r.global_address =
            uniform(8) == 0 ? nullptr : reinterpret_cast<const void*>(0x7f0000000000ull + pick({1, 4, 8, 24, 32, 48}));
        break;
      case 7: r.global_dim[i] = pick({0, 1, 2, 256, 1ull << 31, 1ull << 32, (1ull << 32) + 1}); break;
      case 8: r.global_strides[i % 4] = pick({0, s - 16, s - 1, s + 8, s + 16, s + 32, 1ull << 40, (1ull << 40) - 16});
        break;
      case 9: r.box_dim[i] = static_cast<std::uint32_t>(pick({0, 1, 2, 255, 256, 257})); break;
      case 10: r.element_strides[i] = static_cast<std::uint32_t>(pick({0, 1, 2, 7, 8, 9})); break;
      default: r.global_dim[i] = r.global_dim[i] * 2 + 1; break;  // rows that no longer fit their stride
    }
  }
  std::uint64_t uniform(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }
  std::uint64_t pick(std::initializer_list<std::uint64_t> values) { return *(values.begin() + uniform(values.size())); }
  std::mt19937_64 rng_;
};

// The teaching copy and the library give the same verdict, word for word, for every request,
// for the GPU of this course and for two newer ones (their box limits and enums differ).
TEST(HostPromotedTensorMap, ReportsTheSameVerdictNearEveryBoundary) {
  RequestMaker maker(2024);
  int valid = 0;
  std::set<std::string> rules;  // the broken rules seen, numbers left out
  const std::regex number("0x[0-9a-f]+|[0-9]+");
  for (int n = 0; n < 30000; ++n) {
    const TensorMapRequest request = maker.make();
    for (int cc : {90, 100, 120}) {
      const std::optional<std::string> taught = broken_tensor_map_rule(request, cc);
      ASSERT_EQ(taught, course::broken_tensor_map_rule(promoted(request), cc)) << "request " << n << ", cc " << cc;
      if (cc != 90) continue;
      valid += !taught;
      if (taught) rules.insert(std::regex_replace(*taught, number, "#"));
    }
  }
  EXPECT_GT(valid, 3000) << "the sweep must hold many valid requests";
  EXPECT_EQ(rules.size(), 19u) << "the sweep must break each of the 19 rules";
}

TEST_F(Sm90_TensorMap, LibraryCopyEncodesTheSameBytes) {
  course::DeviceBuffer<float> matrix(999 * 1004);
  TensorMapRequest swizzled = padded_request(matrix.data());
  swizzled.box_dim[0] = 32;  // 128 bytes: within the 128-byte swizzle span
  swizzled.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  TensorMapRequest nan_fill = padded_request(matrix.data());
  nan_fill.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  for (const TensorMapRequest& request : {padded_request(matrix.data()), swizzled, nan_fill}) {
    const CUtensorMap taught = encode_tiled(request);
    const CUtensorMap library = course::encode_tiled(promoted(request));
    EXPECT_EQ(std::memcmp(&taught, &library, sizeof(CUtensorMap)), 0);
  }
  // Valid requests of every type, rank and layout (encoding reads no memory: any aligned address
  // will do). Where the driver refuses one after all, it must refuse both.
  RequestMaker maker(7);
  int encoded = 0;
  for (int n = 0; n < 2000 && encoded < 500; ++n) {
    const TensorMapRequest request = maker.valid();
    if (broken_tensor_map_rule(request)) continue;  // e.g. a five-dimensional box of more than 228 KiB
    ++encoded;
    std::optional<CUtensorMap> taught, library;
    try { taught = encode_tiled(request); } catch (const course::CudaError&) {}
    try { library = course::encode_tiled(promoted(request)); } catch (const course::CudaError&) {}
    ASSERT_EQ(taught.has_value(), library.has_value()) << "request " << n;
    if (taught) EXPECT_EQ(std::memcmp(&*taught, &*library, sizeof(CUtensorMap)), 0) << "request " << n;
  }
  EXPECT_GT(encoded, 100);
}

// ---- On the GPU: raw boxes around the matrix's edges ----------------------------------------

/// [tile_window]
// Arrive on `bar` expecting a whole box, and load the box at (x, y) into smem_box.
__device__ void load_box_at(const CUtensorMap* map, int x, int y, float* smem_box, std::uint64_t* bar) {
  const std::int32_t coords[2] = {x, y};  // negative or past the edge: zero fill
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                       std::uint32_t{kTileBytes});  // the whole box, zeros included
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, map, coords, bar);
}

// Loads one box at (x, y) and writes it out unchanged, so that the fill is visible.
__global__ void tile_window_kernel(const __grid_constant__ CUtensorMap map, int x, int y, float* gmem_box) {
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];
  __shared__ alignas(8) std::uint64_t full_bar;
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});                 // the leader's arrival
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to TMA
  }
  __syncthreads();  // visible to every thread
  if (is_leader) load_box_at(&map, x, y, smem_box, &full_bar);
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // the whole box landed, fill included
  for (int i = threadIdx.x; i < kTileElems; i += blockDim.x) gmem_box[i] = smem_box[i];
}
/// [tile_window]

class Sm90_TileWindow : public course::GpuTest {
 protected:
  Sm90_TileWindow() : GpuTest(chapter_info().requirement) {}
  static constexpr MatrixView kMatrix{100, 203, 204};  // padded rows, partial tiles both ways
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    host.resize(std::size_t(kMatrix.rows) * kMatrix.pitch_elems);
    course::fill_pattern(host, 7);
    matrix = course::DeviceBuffer<float>(host.size());
    matrix.upload(host.data());
  }
  std::vector<float> load(const CUtensorMap& map, int x, int y) {
    course::DeviceBuffer<float> gmem_box(kTileElems);
    gmem_box.fill_bytes(course::kPoisonByte);
    tile_window_kernel<<<1, kBlockThreads>>>(map, x, y, gmem_box.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<float> box(kTileElems);
    gmem_box.download(box.data());
    return box;
  }
  std::vector<float> host;
  course::DeviceBuffer<float> matrix;
};

TEST_F(Sm90_TileWindow, OutOfBoundsElementsAreZeroBitExactly) {
  const CUtensorMap map = encode_tiled(matrix_request(matrix.data(), kMatrix));
  // Column starts are multiples of 4 floats (16 bytes); rows may start anywhere.
  const int corners[][2] = {{0, 0}, {-4, -3}, {-252, -31}, {152, 90}, {-8, 50}, {200, 0}, {-60, 77}};
  for (const auto& at : corners) {
    std::vector<float> expected(kTileElems);
    load_box_model(host, kMatrix, at[0], at[1], expected.data());
    const course::Comparison result = course::compare_exact(load(map, at[0], at[1]), expected, kTileCols);
    EXPECT_TRUE(result.ok()) << "box at (" << at[0] << ", " << at[1] << "): " << result.summary() << '\n'
                             << result.first;
  }
}

TEST_F(Sm90_TileWindow, NanFillIsRequestedPerMap) {
  TensorMapRequest request = matrix_request(matrix.data(), kMatrix);
  request.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  const std::vector<float> box = load(encode_tiled(request), -4, -3);
  std::vector<float> zero_filled(kTileElems);
  load_box_model(host, kMatrix, -4, -3, zero_filled.data());
  std::uint32_t nan_bits = 0;
  for (int r = 0; r < kTileRows; ++r) {
    for (int c = 0; c < kTileCols; ++c) {
      const bool inside = r - 3 >= 0 && r - 3 < kMatrix.rows && c - 4 >= 0 && c - 4 < kMatrix.cols;
      const float got = box[r * kTileCols + c];
      if (inside) {
        ASSERT_EQ(std::memcmp(&got, &zero_filled[r * kTileCols + c], sizeof(float)), 0) << r << ", " << c;
      } else {
        ASSERT_TRUE(std::isnan(got)) << "(" << r << ", " << c << ") outside the matrix holds " << got;
        std::memcpy(&nan_bits, &got, sizeof(float));
      }
    }
  }
  std::ostringstream bits;
  bits << "0x" << std::hex << nan_bits;
  RecordProperty("oob_nan_bits", bits.str());
  std::printf("out-of-bounds NaN fill: %s\n", bits.str().c_str());
}

// A rule that no map can check: the box's start in dimension 0 must be a multiple of 16 bytes.
// Column -5 (-20 bytes) stops the kernel with an illegal-instruction error; rows may start
// anywhere. (Run in a child process: the error ends the CUDA context.)
TEST_F(Sm90_TileWindow, UnalignedColumnStartIsAnIllegalInstruction) {
  const CUtensorMap map = encode_tiled(matrix_request(matrix.data(), kMatrix));
  course::DeviceBuffer<float> gmem_box(kTileElems);
  auto launch = [&] { tile_window_kernel<<<1, kBlockThreads>>>(map, -5, 0, gmem_box.data()); };
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const course::TrapLock trap_lock;
  EXPECT_EXIT(course::run_and_exit(launch), ::testing::ExitedWithCode(1), "cudaErrorIllegalInstruction");
}

// ---- A miscounted barrier is diagnosed, not hung --------------------------------------------

/// [broken]
// The guide's cuda::barrier expects one arrival per thread; this chapter's full barrier expects
// one, the leader's arrive.expect_tx. Mixing the two: the barrier is initialised for every
// thread, only the leader arrives, and the phase never completes although every byte landed.
__global__ void barrier_expects_every_thread_kernel(const __grid_constant__ CUtensorMap in_map) {
  __shared__ alignas(kSmemAlign) float smem_tile[kTileElems];
  __shared__ alignas(8) std::uint64_t full_bar;
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{kBlockThreads});  // wrong: only one thread arrives
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (is_leader) load_box_at(&in_map, 0, 0, smem_tile, &full_bar);
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});
}
/// [broken]

class Sm90_Tma2dDiagnosis : public course::GpuTest {
 protected:
  Sm90_Tma2dDiagnosis() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_Tma2dDiagnosis, BarrierCountingEveryThreadIsDiagnosedNotHung) {
  course::DeviceBuffer<float> matrix(kTileElems);
  const CUtensorMap map = encode_tiled(matrix_request(matrix.data(), {kTileRows, kTileCols, kTileCols}));
  auto launch = [&] { barrier_expects_every_thread_kernel<<<1, kBlockThreads>>>(map); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(), "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
