// Tests for 09_device_tensormap: the model (batch layout, rules, tile table, copy model, PTX's
// field numbers) on the CPU, what each kernel of the lesson and the lab compiles to, every
// variant of the lesson and every row of the lab bit-exact on awkward batches, device-made maps
// against the driver's, the guide's __device__ variable, and a stale byte count after a
// replaced box diagnosed, not hung.
#include "device_tensormap_lab.cu"  // the lab, which brings the lesson and the model
#include "device_tensormap_figures.cpp"  // map_life_svg(), chapter_figures()

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

namespace {

// The rules look at an address's value only; this one is 16-byte aligned (and 256-byte).
const float* const kAlignedAddress = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);

// Eight tensors: padded and packed pitches, one row, one column, a box narrower than the tile,
// rows one element past a tile.
const std::vector<TensorShape> kAwkwardBatch = {{999, 1001, 1004}, {61, 61, 64},  {130, 250, 260}, {1, 4093, 4096},
                                                {77, 1, 4},        {33, 257, 268}, {32, 256, 256},  {5, 12, 12}};

// ---- The batch layout ------------------------------------------------------------------------

TEST(HostBatchLayout, TensorsStartAlignedAndNeverOverlap) {
  for (const std::vector<TensorShape>& shapes : {default_shapes(64u << 20), kAwkwardBatch}) {
    const BatchPlan plan = plan_batch(shapes);
    std::int64_t end = 0;
    for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
      const TensorLayout& t = plan.tensors[i];
      EXPECT_EQ(t.offset_elems * sizeof(float) % kTensorAlignBytes, 0u) << "tensor " << i;
      EXPECT_GE(t.offset_elems, end) << "tensor " << i << " overlaps the one before";
      EXPECT_LT(t.offset_elems - end, static_cast<std::int64_t>(kTensorAlignBytes / sizeof(float))) << "a needless gap";
      end = t.offset_elems + std::int64_t{t.rows} * t.pitch_elems;
    }
    EXPECT_EQ(plan.total_elems, end);
  }
}

TEST(HostBatchLayout, BoxIsTheRowRoundedUpToSixteenBytesAndAtMostTheTile) {
  const BatchPlan plan = plan_batch({{1, 61, 64}, {1, 1, 4}, {1, 250, 252}, {1, 256, 256}, {1, 257, 260}, {1, 1001, 1004}});
  const int expected_box[] = {64, 4, 252, 256, 256, 256};
  const int expected_tiles_x[] = {1, 1, 1, 1, 2, 4};
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    EXPECT_EQ(plan.tensors[i].box_cols, expected_box[i]) << "tensor " << i;
    EXPECT_EQ(plan.tensors[i].tiles_x, expected_tiles_x[i]) << "tensor " << i;
  }
}

TEST(HostBatchLayout, DefaultBatchSharesTheBytesWithPitchesOfWholeGranules) {
  const std::size_t total = 64u << 20;
  const BatchPlan plan = plan_batch(default_shapes(total));
  ASSERT_EQ(plan.tensors.size(), std::size_t{kBatchTensors});
  for (const TensorLayout& t : plan.tensors) {
    const std::size_t row_bytes = std::size_t(t.pitch_elems) * sizeof(float);
    EXPECT_EQ(row_bytes % 16, 0u) << t.cols;
    EXPECT_GE(t.pitch_elems, t.cols);
    EXPECT_LE(t.rows * row_bytes, total / kBatchTensors) << t.cols;
    EXPECT_GT((t.rows + 1) * row_bytes, total / kBatchTensors) << t.cols << ": the share is not used up";
  }
}

TEST(HostBatchLayout, MoreTensorsTakeTheWidthsInTurn) {
  const std::vector<TensorShape> shapes = default_shapes(std::size_t{1} << 30, kMaxTensors);
  ASSERT_EQ(shapes.size(), std::size_t{kMaxTensors});
  for (int i = 0; i < kMaxTensors; ++i) {
    EXPECT_EQ(shapes[i].cols, kBatchWidths[i % kBatchTensors].cols) << "tensor " << i;
    EXPECT_EQ(shapes[i].pitch_elems, shapes[i % kBatchTensors].pitch_elems) << "tensor " << i;
    EXPECT_LE(std::size_t(shapes[i].rows) * shapes[i].pitch_elems * sizeof(float), (std::size_t{1} << 30) / kMaxTensors);
  }
  EXPECT_EQ(default_shapes(1u << 20).size(), std::size_t{kBatchTensors}) << "the lesson's batch: eight tensors";
}

// The lab's friendly batch: every box full and 1 KiB wide, no padding, the bytes shared equally.
TEST(HostBatchLayout, UniformShapesFillEveryBox) {
  for (int count : {1, kBatchTensors}) {
    const BatchPlan plan = plan_batch(uniform_shapes(64u << 20, count));
    ASSERT_EQ(plan.tensors.size(), std::size_t(count));
    for (const TensorLayout& t : plan.tensors) {
      EXPECT_EQ(t.box_cols, kTileCols);
      EXPECT_EQ(t.cols % kTileCols, 0);
      EXPECT_EQ(t.pitch_elems, t.cols);
      EXPECT_EQ(t.rows % kTileRows, 0) << "no partial tile at the bottom either";
    }
    EXPECT_EQ(batch_bytes_moved(plan), 2 * (std::size_t{64} << 20)) << count << " tensors";
  }
}

// The kernels' walk: tiles in increasing order, a cursor that only moves up. Every (tensor, box)
// must come up exactly once, every box origin inside its tensor.
TEST(HostTileTable, TheWalkVisitsEveryBoxOfEveryTensorOnce) {
  const BatchPlan plan = plan_batch(kAwkwardBatch);
  const Batch batch = batch_param(plan);
  ASSERT_EQ(batch.first_tile[batch.num_tensors], plan.num_tiles);
  for (int stride : {1, 3, 7}) {  // gridDim.x
    std::set<std::pair<int, std::pair<int, int>>> seen;
    for (int block = 0; block < stride; ++block) {
      int tensor = 0;
      for (int tile = block; tile < batch.num_tiles; tile += stride) {
        while (tile >= batch.first_tile[tensor + 1]) ++tensor;
        const TensorLayout& t = batch.tensors[tensor];
        const TileCoords at = tile_origin(t, tile - batch.first_tile[tensor]);
        EXPECT_TRUE(at.x >= 0 && at.x < t.cols && at.y >= 0 && at.y < t.rows) << "tensor " << tensor << " tile " << tile;
        EXPECT_TRUE(seen.insert({tensor, {at.x, at.y}}).second) << "box visited twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(plan.num_tiles)) << "stride " << stride;
  }
}

// The lesson's loop is a ring of one box: course::StageCursor<1> must give what the loop's
// old `phase ^= 1` gave, stage 0 and a parity that flips every tile.
TEST(HostTileTable, AOneBoxRingFlipsTheParityEveryTile) {
  course::StageCursor<1> cursor;
  for (std::uint32_t tile = 0; tile < 6; ++tile, cursor.advance()) {
    EXPECT_EQ(cursor.stage, 0) << "tile " << tile;
    EXPECT_EQ(cursor.phase, tile % 2) << "tile " << tile;
  }
}

// ---- The rules, before any kernel encodes a map ------------------------------------------------

TEST(HostBatchRules, TheChaptersBatchesPass) {
  for (const std::vector<TensorShape>& shapes : {default_shapes(1u << 20), default_shapes(1u << 30), kAwkwardBatch}) {
    const std::vector<std::string> problems = batch_problems(plan_batch(shapes), kAlignedAddress, kAlignedAddress);
    EXPECT_TRUE(problems.empty()) << joined(problems);
  }
}

// Every batch a lab row runs on, at the smallest, the default, the bench and the largest --size.
TEST(HostBatchRules, TheLabsBatchesPassAtEverySize) {
  for (std::size_t bytes : {std::size_t{1} << 20, kVerifyBytes, std::size_t{1} << 30, std::size_t{16} << 30}) {
    for (const lab::Variant& v : lab::kVariants) {
      const BatchPlan plan = plan_batch(v.shapes(bytes));
      const std::vector<std::string> problems = batch_problems(plan, kAlignedAddress, kAlignedAddress);
      EXPECT_TRUE(problems.empty()) << v.name << " at " << bytes << " bytes:" << joined(problems);
      EXPECT_GT(plan.num_tiles, 0) << v.name;
      // (At 1 MiB a 32nd share is narrower than one 64 KiB row: such a tensor keeps one row.)
      if (bytes >= kVerifyBytes) EXPECT_LE(batch_bytes_moved(plan), 2 * bytes) << v.name << ": larger than --size";
    }
  }
}

TEST(HostBatchRules, APackedPitchIsOneLineNamingTheTensor) {
  const std::vector<std::string> problems = batch_problems(plan_batch({{999, 1001, 1001}}), kAlignedAddress, kAlignedAddress);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "tensor 0 (999 x 1001 floats, pitch 1001): input map: globalStrides[0] = 4004 bytes is not a multiple of 16 "
            "(pad each row to 4016 bytes)");
}

TEST(HostBatchRules, EveryBrokenTensorGetsItsOwnLine) {
  const std::vector<std::string> problems = batch_problems(
      plan_batch({{999, 1001, 1001}, {10, 64, 64}, {0, 64, 64}, {5, 100, 96}}), kAlignedAddress, kAlignedAddress);
  ASSERT_EQ(problems.size(), 3u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("tensor 0 ", 0), 0u) << problems[0];
  EXPECT_EQ(problems[1].rfind("tensor 2 (0 x 64 floats, pitch 64): input map: globalDim[1] = 0 is outside 1..2^32", 0), 0u)
      << problems[1];
  EXPECT_EQ(problems[2].rfind("tensor 3 (5 x 100 floats, pitch 96): input map: globalStrides[0] = 384 bytes is less than "
                              "the 400 bytes",
                              0),
            0u)
      << problems[2];
}

TEST(HostBatchRules, AMisalignedOutputIsReportedForTheOutputMapOnly) {
  const std::vector<std::string> problems =
      batch_problems(plan_batch({{4, 64, 64}, {4, 64, 64}}), kAlignedAddress, kAlignedAddress + 1);
  ASSERT_EQ(problems.size(), 2u) << joined(problems);
  for (const std::string& line : problems) {
    EXPECT_NE(line.find("output map: global address "), std::string::npos) << line;
    EXPECT_NE(line.find(" is not 16-byte aligned"), std::string::npos) << line;
  }
}

TEST(HostBatchRules, TheDeviceMapArrayBoundsTheBatch) {
  const std::vector<TensorShape> many(kMaxTensors + 1, TensorShape{4, 64, 64});
  const std::vector<std::string> problems = batch_problems(plan_batch(many), kAlignedAddress, kAlignedAddress);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "a batch holds 1 to 32 tensors (the device map array has 64 slots); this one has 33");
  EXPECT_EQ(batch_problems(plan_batch({}), kAlignedAddress, kAlignedAddress).size(), 1u);
  EXPECT_TRUE(batch_problems(plan_batch(std::vector<TensorShape>(kMaxTensors, TensorShape{4, 64, 64})), kAlignedAddress,
                             kAlignedAddress)
                  .empty());
}

// The device replaces exactly the fields of this request; the template fixes the rest.
TEST(HostBatchRules, TheRequestOfATensorIsItsLayout) {
  const TensorLayout t = plan_batch({{999, 1001, 1004}}).tensors[0];
  const course::TensorMapRequest r = tensor_request(kAlignedAddress, t);
  EXPECT_EQ(r.rank, 2u);
  EXPECT_EQ(r.global_dim[0], 1001u);
  EXPECT_EQ(r.global_dim[1], 999u);
  EXPECT_EQ(r.global_strides[0], 4016u);
  EXPECT_EQ(r.box_dim[0], 256u);
  EXPECT_EQ(r.box_dim[1], std::uint32_t{kTileRows});
  EXPECT_EQ(r.data_type, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_FALSE(course::broken_tensor_map_rule(template_request(kAlignedAddress))) << "the template must be a valid map";
}

// ---- The host model of a tensor copy ---------------------------------------------------------

TEST(HostTmaModel, LoadBringsZerosOutsideTheMatrixNotThePadding) {
  const TensorLayout t = plan_batch({{3, 5, 8}}).tensors[0];  // box 8 x 32
  std::vector<float> matrix(3 * 8, -1.0f);                     // padding: -1
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 5; ++c) matrix[r * 8 + c] = float(100 * r + c + 1);
  }
  std::vector<float> box(kTileElems, 42.0f);
  load_box_model(matrix.data(), t, -4, -1, box.data());
  EXPECT_EQ(box[0 * 8 + 0], 0.0f);      // (row -1, col -4)
  EXPECT_EQ(box[1 * 8 + 3], 0.0f);      // (row 0, col -1)
  EXPECT_EQ(box[1 * 8 + 4], 1.0f);      // (row 0, col 0)
  EXPECT_EQ(box[3 * 8 + 7], 204.0f);    // (row 2, col 3)
  EXPECT_EQ(box[4 * 8 + 4], 0.0f);      // (row 3, col 0): below the matrix
  load_box_model(matrix.data(), t, 4, 0, box.data());
  EXPECT_EQ(box[0], 5.0f);   // (row 0, col 4): the last element
  EXPECT_EQ(box[1], 0.0f);   // (row 0, col 5): padding is outside the matrix, never read
}

TEST(HostTmaModel, StoreWritesUpToTheRowsLast16ByteGranule) {
  const TensorLayout t = plan_batch({{10, 18, 28}}).tensors[0];  // 72-byte rows in a 112-byte pitch, box 20
  std::vector<float> matrix(10 * 28, -1.0f);
  const std::vector<float> box(kTileElems, 7.0f);
  store_box_model(matrix.data(), t, 0, 8, box.data());
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 28; ++c) {
      const bool written = r >= 8 && c < 20;  // columns 18 and 19 are padding inside the last granule
      EXPECT_EQ(matrix[r * 28 + c], written ? 7.0f : -1.0f) << r << ", " << c;
    }
  }
}

// The tile-by-tile reference against a direct formula: 2 x in inside each matrix, zero in the
// rest of a row's last granule, poison everywhere else (wider padding, gaps between tensors).
TEST(HostTmaModel, TileByTileReferenceMatchesTheDirectFormula) {
  for (const std::vector<TensorShape>& shapes : {kAwkwardBatch, default_shapes(1u << 20)}) {
    const BatchPlan plan = plan_batch(shapes);
    std::vector<float> in(plan.total_elems);
    course::fill_pattern(in);
    std::vector<float> direct(in.size(), course::poison_value<float>());
    for (const TensorLayout& t : plan.tensors) {
      for (int r = 0; r < t.rows; ++r) {
        for (int c = 0; c < round_up(t.cols, kGranuleElems); ++c) {
          const std::int64_t i = t.offset_elems + std::int64_t{r} * t.pitch_elems + c;
          direct[i] = c < t.cols ? modify(in[i]) : 0.0f;
        }
      }
    }
    const course::Comparison same = course::compare_exact(reference(in, plan), direct);
    EXPECT_TRUE(same.ok()) << same.summary() << '\n' << same.first;
  }
}

// ---- The life of a map edited on the device, and its figure ------------------------------------

TEST(HostMapLife, TheMinimalKernelsMapIsReleasedAndAcquiredBeforeTmaReadsIt) {
  EXPECT_EQ(first_stale_read(edit_address_life()), -1);
}

TEST(HostMapLife, AMissingOrMisorderedFenceLeavesTheReadStale) {
  const std::vector<MapStep> life = edit_address_life();
  const int use = static_cast<int>(life.size()) - 1;
  for (MapOp dropped : {MapOp::release, MapOp::acquire}) {
    std::vector<MapStep> broken;
    for (const MapStep& s : life) {
      if (s.op != dropped) broken.push_back(s);
    }
    EXPECT_EQ(first_stale_read(broken), use - 1) << "without the " << (dropped == MapOp::release ? "release" : "acquire");
  }
  std::vector<MapStep> swapped = life;
  std::swap(swapped[3], swapped[4]);  // acquire before release
  EXPECT_EQ(first_stale_read(swapped), use);
  std::vector<MapStep> late_edit = life;
  late_edit.insert(late_edit.end() - 1, life[2]);  // an edit after the fences
  EXPECT_EQ(first_stale_read(late_edit), use + 1);
}

TEST(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, EveryStepAndTheFencesAreDrawn) {
  const std::string svg = map_life_svg();
  for (const MapStep& s : edit_address_life()) EXPECT_NE(svg.find(svg_text(s.instruction)), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 720 "), std::string::npos);
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos);
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- PTX's numbers for the fields ------------------------------------------------------------

TEST(HostPtxCodes, ThreeElementTypesAreNumberedUnlikeTheDriver) {
  for (CUtensorMapDataType type : {CU_TENSOR_MAP_DATA_TYPE_UINT8, CU_TENSOR_MAP_DATA_TYPE_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT32,
                                   CU_TENSOR_MAP_DATA_TYPE_INT32, CU_TENSOR_MAP_DATA_TYPE_UINT64, CU_TENSOR_MAP_DATA_TYPE_INT64,
                                   CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                   CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ}) {
    EXPECT_EQ(ptx_elemtype(type), static_cast<int>(type));
  }
  // Passing the driver's enum value as the immediate would encode another type:
  EXPECT_EQ(ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_FLOAT64), 9);       // 8 would be .f32.ftz
  EXPECT_EQ(ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16), 10);     // 9 would be .f64
  EXPECT_EQ(ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ), 8);   // 10 would be .bf16
  EXPECT_EQ(ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B), -1);  // packed types: not on sm_90a
  static_assert(ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_FLOAT32) == 7, "this chapter's element type is .f32, code 7");
}

TEST(HostPtxCodes, InterleaveSwizzleAndFillFollowTheDriverOnSm90a) {
  EXPECT_EQ(ptx_interleave(CU_TENSOR_MAP_INTERLEAVE_NONE), 0);
  EXPECT_EQ(ptx_interleave(CU_TENSOR_MAP_INTERLEAVE_32B), 2);
  EXPECT_EQ(ptx_swizzle(CU_TENSOR_MAP_SWIZZLE_NONE), 0);
  EXPECT_EQ(ptx_swizzle(CU_TENSOR_MAP_SWIZZLE_128B), 3);
  EXPECT_EQ(ptx_swizzle(CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B), -1);  // PTX's 4 is a 96-byte swizzle (sm_103a)
  EXPECT_EQ(ptx_fill_mode(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), 0);
  EXPECT_EQ(ptx_fill_mode(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA), 1);
}

// ---- The program's command line and host model -----------------------------------------------

TEST(HostChapter, SizeIsWholeMebibytes) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(1u << 20));
  EXPECT_FALSE(info.size_rule(1u << 30));
  EXPECT_TRUE(info.size_rule(0));
  EXPECT_TRUE(info.size_rule((1u << 20) + 16));
  EXPECT_TRUE(info.size_rule(std::size_t{17} << 30));
}

TEST(HostChapter, HostModelShowsTheBatchAndARefusedOne) {
  std::ostringstream text;
  chapter_info().host_model(text);
  EXPECT_NE(text.str().find("all 16 maps pass"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("tensor 0 (999 x 1001 floats, pitch 1001): input map: globalStrides[0] = 4004 bytes"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("tensor 1 (0 x 64 floats, pitch 64): input map: globalDim[1] = 0"), std::string::npos)
      << text.str();
  EXPECT_EQ(text.str().find("tensor 2 (40"), std::string::npos) << "tensor 2 is valid: " << text.str();
}

TEST(HostChapter, TheLabTakesTheLessonsCommandLine) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_STREQ(lab.program, "device_tensormap_lab");
  EXPECT_EQ(std::string(lab.title).rfind("09 device_tensormap lab: ", 0), 0u) << lab.title;
  EXPECT_EQ(lab.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab.bench_bytes, lesson.bench_bytes);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1} << 20, (std::size_t{1} << 20) + 16, std::size_t{17} << 30}) {
    EXPECT_EQ(bool(lab.size_rule(bytes)), bool(lesson.size_rule(bytes))) << bytes;
  }
  EXPECT_EQ(lab.requirement.major, 9);
  EXPECT_TRUE(lab.requirement.arch_specific);
}

TEST(HostChapter, EveryRowHasOneNameAndAOneLineSummary) {
  std::set<std::string> names;
  for (const lab::Variant& v : lab::kVariants) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " twice";
    EXPECT_NE(v.launch, nullptr) << v.name;
    EXPECT_LE(std::string(v.summary).size(), 90u) << v.name << ": --help prints one line per row";
  }
  for (const Variant& v : kVariants) {
    EXPECT_LE(std::string(v.summary).size(), 120u) << v.name;
    EXPECT_EQ(names.count(v.name), 0u) << v.name << ": a lesson variant, not measured again";
  }
}

TEST(HostChapter, LabModelDescribesItsOtherBatches) {
  std::ostringstream text;
  lab::chapter_info().host_model(text);
  EXPECT_NE(text.str().find("all 16 maps pass"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("uniform_batch: 8 tensors, 16 maps, 2048 tiles, boxes of 32.0 to 32.0 KiB"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("batch_of_32: 32 tensors, 64 maps,"), std::string::npos) << text.str();
}

TEST(HostChapter, RequiresSm90aExactly) {
  const course::Requirement r = chapter_info().requirement;
  EXPECT_EQ(r.major, 9);
  EXPECT_EQ(r.minor, 0);
  EXPECT_TRUE(r.arch_specific);
  course::DeviceInfo later;
  later.present = true;
  later.major = 10;
  later.name = "a newer GPU";
  const std::optional<std::string> why = course::unmet_requirement(r, later);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("sm_90a code runs on no other architecture"), std::string::npos) << *why;
}

// ---- What the compiler emits (PTX for compute_90a, written by the build) ------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ptx_ = course::chapter_ptx("device_tensormap", "90a");
    lab_ptx_ = course::chapter_ptx("device_tensormap_lab", "90a");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static std::string lesson(const char* name) { return kernel(lesson_ptx_, name); }
  static std::string lab(const char* name) { return kernel(lab_ptx_, name); }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static std::string replace_of(const char* field) { return std::string("tensormap.replace.tile.") + field + ".shared::cta"; }
  static inline std::string lesson_ptx_, lab_ptx_;
};

// Each field of a map in shared memory (.shared::cta) of the .b1024 object, with the width of its
// new value: the address and the stride are 64-bit, the rest 32-bit.
struct Field {
  const char* name;
  const char* width;
};
const Field kTensorFields[] = {
    {"global_address", "b64"}, {"global_dim", "b32"}, {"global_stride", "b64"}, {"box_dim", "b32"}};
const Field kFixedFields[] = {{"rank", "b32"},         {"element_stride", "b32"}, {"elemtype", "b32"},
                              {"interleave_layout", "b32"}, {"swizzle_mode", "b32"}, {"fill_mode", "b32"}};
std::string full_replace(const Field& f) {
  return std::string("tensormap.replace.tile.") + f.name + ".shared::cta.b1024." + f.width;
}

// tensormap.cp_fenceproxy copies the map from shared to global memory through the generic proxy
// and releases it to the tensor-map proxy at the scope named; .sync.aligned: the whole warp.
const std::string kReleaseGpu = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned";
const std::string kReleaseCta = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.cta.sync.aligned";
// The acquire: fence.proxy.tensormap::generic.acquire.<scope> [map], 128.
std::string acquire_at(const char* scope) { return std::string("fence.proxy.tensormap::generic.acquire.") + scope + " "; }
// The tensor copies: a 2D tile load completing on an mbarrier, a 2D tile store in a bulk group.
const std::string kTileLoad = "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes";
const std::string kTileStore = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group";

TEST_F(HostCodegen, TheTemplateEncoderReplacesOnlyWhatDiffersBetweenTensors) {
  const std::string k = lesson("encode_from_template_kernel");
  for (const Field& field : kTensorFields) EXPECT_TRUE(has(k, full_replace(field))) << field.name;
  for (const Field& field : kFixedFields) {
    EXPECT_FALSE(has(k, replace_of(field.name))) << field.name << " comes from the template";
  }
  EXPECT_TRUE(has(k, kReleaseGpu));
  EXPECT_TRUE(has(k, "elect.sync")) << "one elected lane replaces the fields";
  EXPECT_FALSE(has(k, "cp.async.bulk.tensor")) << "the encoder only writes maps";
}

TEST_F(HostCodegen, TheZeroEncoderReplacesEveryField) {
  const std::string k = lab("encode_from_zero_kernel");
  for (const Field& field : kTensorFields) EXPECT_TRUE(has(k, full_replace(field))) << field.name;
  for (const Field& field : kFixedFields) EXPECT_TRUE(has(k, full_replace(field))) << field.name;
  EXPECT_TRUE(has(k, replace_of("elemtype") + ".b1024.b32 [")) << k;
  const std::size_t elemtype = k.find(replace_of("elemtype"));
  EXPECT_TRUE(has(k.substr(elemtype, k.find('\n', elemtype) - elemtype), "], 7;")) << "PTX's code of .f32 is 7";
  EXPECT_TRUE(has(k, kReleaseGpu));
  EXPECT_TRUE(has(k, "elect.sync"));
}

TEST_F(HostCodegen, EachConsumerAcquiresAtItsWritersScope) {
  const std::pair<std::string, const char*> kernels[] = {{lesson("edit_address_kernel"), "cta"},
                                                         {lab("consume_host_maps_kernel"), "sys"},
                                                         {lesson("consume_device_maps_kernel"), "gpu"},
                                                         {lab("in_block_kernel"), "cta"},
                                                         {lab("acquire_every_tile_kernel"), "gpu"}};
  for (const auto& [k, scope] : kernels) {
    for (const char* other : {"sys", "gpu", "cta"}) {
      EXPECT_EQ(has(k, acquire_at(other)), std::string(other) == scope)
          << k.substr(0, k.find('(')) << ": acquire." << other;
    }
  }
  EXPECT_TRUE(has(lab("in_block_kernel"), kReleaseCta)) << "in_block releases its own maps at .cta";
  EXPECT_FALSE(has(lab("in_block_kernel"), kReleaseGpu));
  EXPECT_FALSE(has(lab("constant_maps_kernel"), "fence.proxy.tensormap")) << "constant memory needs no acquire";
}

TEST_F(HostCodegen, ConsumersMoveTilesWithTensorCopiesOnly) {
  const std::pair<std::string, std::string> doubling[] = {
      {"edit_address_kernel", lesson("edit_address_kernel")},
      {"consume_host_maps_kernel", lab("consume_host_maps_kernel")},
      {"consume_device_maps_kernel", lesson("consume_device_maps_kernel")},
      {"in_block_kernel", lab("in_block_kernel")},
      {"acquire_every_tile_kernel", lab("acquire_every_tile_kernel")},
      {"constant_maps_kernel", lab("constant_maps_kernel")}};
  for (const auto& [name, k] : doubling) {
    EXPECT_TRUE(has(k, kTileLoad)) << name;
    EXPECT_TRUE(has(k, kTileStore)) << name;
    EXPECT_TRUE(has(k, "mbarrier.arrive.expect_tx")) << name;
    EXPECT_TRUE(has(k, "fence.proxy.async.shared::cta")) << name << ": st.shared must be fenced before the store";
    EXPECT_TRUE(has(k, "cp.async.bulk.wait_group.read")) << name;
    EXPECT_EQ(has(k, "elect.sync"), name != std::string("edit_address_kernel"))
        << name << ": the TMA issuer is elected (the minimal kernel's is thread 0)";
    EXPECT_TRUE(has(k, "st.shared.v4.f32")) << name << ": the threads double the box in shared memory";
    // The minimal kernel's one thread-side global store is its copy of the map, not the output.
    EXPECT_EQ(has(k, "st.global"), name == std::string("edit_address_kernel")) << name;
  }
  EXPECT_FALSE(has(lesson("consume_device_maps_kernel"), "tensormap.replace")) << "it only reads maps";
  EXPECT_FALSE(has(lab("consume_host_maps_kernel"), "tensormap.replace")) << "it only reads maps";
}

// The minimal kernel edits its map in global memory (tensormap.replace on .global, no
// cp_fenceproxy), then fences: the release before the acquire, the acquire before the load.
TEST_F(HostCodegen, TheMinimalEditReleasesThenAcquiresBeforeItsLoad) {
  const std::string k = lesson("edit_address_kernel");
  const std::size_t edit = k.find("tensormap.replace.tile.global_address.global.b1024.b64");
  const std::size_t release = k.find("fence.proxy.tensormap::generic.release.cta");
  const std::size_t acquire = k.find(acquire_at("cta"));
  const std::size_t load = k.find(kTileLoad);
  ASSERT_NE(edit, std::string::npos) << k;
  ASSERT_NE(release, std::string::npos) << k;
  ASSERT_NE(acquire, std::string::npos) << k;
  ASSERT_NE(load, std::string::npos) << k;
  EXPECT_LT(edit, release);
  EXPECT_LT(release, acquire);
  EXPECT_LT(acquire, load);
  EXPECT_EQ(course::count_matches(k, R"(tensormap\.replace)"), 1) << "one field, the address";
  EXPECT_FALSE(has(k, "tensormap.cp_fenceproxy")) << "the map never goes through shared memory";
  EXPECT_EQ(course::count_matches(k, R"(atom(\.global)?\.add)"), 0) << "one block per box, no counter";
}

// Every consumer of the batch's maps takes its tiles from the counter, with one atomicAdd, and
// past the last tile the leader completes the phase with a plain arrival (no expect-tx): that is
// how the end reaches the block.
TEST_F(HostCodegen, ConsumersTakeTilesFromTheCounterAndEndThroughTheBarrier) {
  const char* const take = R"(atom(\.global)?\.add\.u64)";
  const char* const plain_arrive = R"(mbarrier\.arrive\.release)";  // not arrive.expect_tx
  const std::pair<const char*, std::string> consumers[] = {
      {"consume_device_maps_kernel", lesson("consume_device_maps_kernel")},
      {"consume_host_maps_kernel", lab("consume_host_maps_kernel")},
      {"in_block_kernel", lab("in_block_kernel")},
      {"acquire_every_tile_kernel", lab("acquire_every_tile_kernel")},
      {"constant_maps_kernel", lab("constant_maps_kernel")}};
  for (const auto& [name, k] : consumers) {
    // The leader's take_and_load, inlined where it primes the stages (unrolled) and refills one.
    const int takes = course::count_matches(k, take);
    EXPECT_GE(takes, 1) << name << ": an atomicAdd, where the leader takes a tile";
    EXPECT_LE(takes, kStages + 1) << name << ": a take per stage of the prime, one per refill";
    EXPECT_GT(course::count_matches(k, plain_arrive), 0) << name;
  }
  EXPECT_EQ(course::count_matches(lesson("encode_from_template_kernel"), take), 0) << "the encoder takes no tile";
}

// The course moves data with TMA (cp.async.bulk), never with chapter 02's LDGSTS (cp.async.ca/cg).
TEST_F(HostCodegen, NoCopyGoesThroughLdgsts) {
  ASSERT_FALSE(lesson_ptx_.empty() || lab_ptx_.empty()) << "no PTX under " << COURSE_PTX_DIR;
  for (const std::string* ptx : {&lesson_ptx_, &lab_ptx_}) {
    EXPECT_EQ(course::count_matches(*ptx, R"(cp\.async\.c[ag]\.)"), 0);
  }
}

// The machine code of this executable (cuobjdump, sm_90a). On sm_90a none of the three new
// instructions is a special one: the acquire fence becomes a TMA descriptor-cache invalidation
// (UTMACCTL.IV) on the map's address before the UTMALDG/UTMASTG that use it, and the release
// copy a warp of 4-byte strong atomic exchanges at the release's scope (ATOMG.E.EXCH.STRONG.GPU);
// the barrier operations are SYNCS instructions.
TEST_F(HostCodegen, MachineCodeUsesTheTmaUnitAndItsDescriptorCache) {
  COURSE_SASS_OR_SKIP(sass, course::sm90a_sass_name());
  const std::string consumer = course::sass_kernel_body(sass, "consume_device_maps_kernel");
  ASSERT_FALSE(consumer.empty()) << "no consume_device_maps_kernel in the " << course::sm90a_sass_name() << " machine code";
  for (const char* op : {"UTMALDG", "UTMASTG", "SYNCS", "UTMACCTL.IV"}) {
    EXPECT_GT(course::count_matches(consumer, op), 0) << op;
  }
  const std::string encoder = course::sass_kernel_body(sass, "encode_from_template_kernel");
  ASSERT_FALSE(encoder.empty());
  EXPECT_GT(course::count_matches(encoder, R"(ATOMG\.E\.EXCH\.STRONG\.GPU)"), 0) << "the .gpu release copy";
  EXPECT_EQ(course::count_matches(encoder, "UTMALDG|UTMASTG"), 0) << "the encoder moves no tile";
}

// ---- On the GPU: every variant --------------------------------------------------------------

class Sm90a_DeviceTensormap : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90a_DeviceTensormap() : GpuTest(chapter_info().requirement) {}
  void expect_correct(const std::vector<TensorShape>& shapes, unsigned max_blocks = 0, int runs = 1) {
    Problem problem(shapes);
    for (int run = 0; run < runs; ++run) {
      const course::Comparison result = verify(GetParam(), problem, max_blocks);
      ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
      ASSERT_EQ(result.untouched + result.mismatches, 0u);
    }
  }
};

TEST_P(Sm90a_DeviceTensormap, OneTensorOneTile) { expect_correct({{kTileRows, kTileCols, kTileCols}}); }
TEST_P(Sm90a_DeviceTensormap, OneRowAndOneColumn) { expect_correct({{1, 256, 256}, {1, 1, 4}, {77, 1, 4}}); }
TEST_P(Sm90a_DeviceTensormap, AwkwardBatch) { expect_correct(kAwkwardBatch); }
TEST_P(Sm90a_DeviceTensormap, DefaultBatchOf4MiB) { expect_correct(default_shapes(4u << 20)); }
TEST_P(Sm90a_DeviceTensormap, ManyTensorsThroughTwoBlocks) { expect_correct(kAwkwardBatch, 2); }
TEST_P(Sm90a_DeviceTensormap, ThirtyTwoTensorsFillTheMapArray) {
  std::vector<TensorShape> shapes;
  for (int t = 0; t < kMaxTensors; ++t) shapes.push_back({1 + 13 * t, 1 + 37 * t, round_up(1 + 37 * t, 4) + 4 * (t % 3)});
  expect_correct(shapes);
}
TEST_P(Sm90a_DeviceTensormap, RepeatedRunsGiveTheSameBits) { expect_correct(default_shapes(2u << 20), 0, 3); }

INSTANTIATE_TEST_SUITE_P(Variants, Sm90a_DeviceTensormap, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- On the GPU: every row of the lab ---------------------------------------------------------
// The lesson's GPU cases through every lab row (in_block, the maps made at .cta inside the
// consuming blocks, among them), and each row's own batch. Repeated runs check that the
// in-order counter starts again at zero and that the maps made ahead survive the timed launches.

class Sm90a_DeviceTensormapLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm90a_DeviceTensormapLab() : GpuTest(lab::chapter_info().requirement) {}
  void expect_correct(const std::vector<TensorShape>& shapes, unsigned max_blocks = 0, int runs = 1) {
    lab::Problem problem(shapes);
    for (int run = 0; run < runs; ++run) {
      const course::Comparison result = lab::verify(GetParam(), problem, max_blocks);
      ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
      ASSERT_EQ(result.untouched + result.mismatches, 0u);
    }
  }
};

TEST_P(Sm90a_DeviceTensormapLab, OneTensorOneTile) { expect_correct({{kTileRows, kTileCols, kTileCols}}); }
TEST_P(Sm90a_DeviceTensormapLab, OneRowAndOneColumn) { expect_correct({{1, 256, 256}, {1, 1, 4}, {77, 1, 4}}); }
TEST_P(Sm90a_DeviceTensormapLab, AwkwardBatch) { expect_correct(kAwkwardBatch); }
TEST_P(Sm90a_DeviceTensormapLab, OwnBatchOf4MiB) { expect_correct(GetParam().shapes(4u << 20)); }
TEST_P(Sm90a_DeviceTensormapLab, ManyTensorsThroughTwoBlocks) { expect_correct(kAwkwardBatch, 2); }
TEST_P(Sm90a_DeviceTensormapLab, ThirtyTwoTensorsFillTheMapArray) {
  std::vector<TensorShape> shapes;
  for (int t = 0; t < kMaxTensors; ++t) shapes.push_back({1 + 13 * t, 1 + 37 * t, round_up(1 + 37 * t, 4) + 4 * (t % 3)});
  expect_correct(shapes);
}
TEST_P(Sm90a_DeviceTensormapLab, RepeatedRunsGiveTheSameBits) { expect_correct(GetParam().shapes(2u << 20), 0, 3); }

// A timed launch without its preparation: the rows that make their maps ahead must still find
// them after other launches, as the timing loop relies on.
TEST_P(Sm90a_DeviceTensormapLab, TimedLaunchesAfterTheCheckStayCorrect) {
  lab::Problem problem(kAwkwardBatch);
  const lab::Variant& v = GetParam();
  ASSERT_TRUE(lab::verify(v, problem).ok());
  problem.lesson.gmem_out.poison();
  for (int run = 0; run < 3; ++run) v.launch(problem.buffers, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison result = problem.lesson.gmem_out.check(problem.lesson.expected);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

INSTANTIATE_TEST_SUITE_P(Rows, Sm90a_DeviceTensormapLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- On the GPU: tiles taken in order, and blocks that find none -------------------------------
// launch_resident never starts more blocks than there are tiles; here the consumers are launched
// with more, so that some blocks find "none left" at their very first take. Each block's leader
// takes one tile per stage to start with and one more after each tile it doubles, and the block
// stops at its first "none left": the counter ends at num_tiles + stages x blocks, exactly.

class Sm90a_TilesInOrder : public course::GpuTest {
 protected:
  Sm90a_TilesInOrder() : GpuTest(chapter_info().requirement) {}
  template <int kRingStages, class Kernel>
  static void expect_correct_with_blocks(Kernel kernel, unsigned blocks) {
    Problem p({{kTileRows, kTileCols, kTileCols}, {5, 12, 12}, {40, 300, 300}});  // 1 + 1 + 4 tiles
    ASSERT_EQ(p.plan.num_tiles, 6);
    p.gmem_out.poison();
    lab::encode_on_device<false>(p.buffers);
    COURSE_CHECK(cudaMemset(p.buffers.gmem_next_tile, 0, sizeof(unsigned long long)));
    constexpr std::size_t smem_bytes = kRingStages * kTileBytes;
    ASSERT_GE(course::blocks_per_sm((const void*)kernel, kBlockThreads, smem_bytes), 1);  // opts in
    kernel<<<blocks, kBlockThreads, smem_bytes>>>(p.buffers.gmem_maps, p.buffers.batch,
                                                  p.buffers.gmem_next_tile);
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    const course::Comparison result = p.gmem_out.check(p.expected);
    EXPECT_TRUE(result.ok()) << blocks << " blocks: " << result.summary() << '\n' << result.first;
    unsigned long long takes = 0;
    COURSE_CHECK(cudaMemcpy(&takes, p.buffers.gmem_next_tile, sizeof takes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(takes, 6u + unsigned{kRingStages} * blocks) << blocks << " blocks";
  }
};

TEST_F(Sm90a_TilesInOrder, BlocksWithoutATileStopAtTheirFirstTake) {
  for (unsigned blocks : {1u, 2u, 6u, 7u, 40u}) {
    expect_correct_with_blocks<kStages>(consume_device_maps_kernel, blocks);
    expect_correct_with_blocks<1>(lab::one_box_kernel, blocks);
  }
}

// The lesson's ring keeps the bytes in flight per SM that Little's law asks of this GPU.
TEST_F(Sm90a_TilesInOrder, TheRingKeepsTheBytesInFlightThisGpuNeeds) {
  ASSERT_TRUE(chapter_info().in_flight.has_value());
  course::expect_enough_in_flight(*chapter_info().in_flight, device());
}

// A batch the maps cannot describe is refused with the host rules' sentences before any launch.
class Sm90a_BatchRefused : public course::GpuTest {
 protected:
  Sm90a_BatchRefused() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90a_BatchRefused, BeforeAnyKernelRuns) {
  try {
    Problem problem({{8, 64, 64}, {999, 1001, 1001}});
    FAIL() << "a 4004-byte pitch was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("tensor 1 (999 x 1001 floats, pitch 1001): input map: globalStrides[0]"),
              std::string::npos)
        << error.what();
  }
}

// ---- On the GPU: device-made maps against the driver's ---------------------------------------

/// [load_one_box]
// Loads one box through a map in global memory and writes it out unchanged: what the map moves.
__global__ void load_one_box_kernel(const CUtensorMap* gmem_map, int box_cols, TileCoords at, float* gmem_box) {
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];
  __shared__ alignas(8) std::uint64_t full_bar;
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});                 // the leader's arrival
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to TMA
  }
  __syncthreads();  // visible to every thread
  if (is_leader) {
    GlobalMaps<ptx::dot_scope::sys>{gmem_map}.acquire(0);  // .sys holds every writer
    load_box(gmem_map, at, static_cast<std::uint32_t>(box_cols * kTileRows * sizeof(float)), smem_box, &full_bar);
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});  // the whole box landed, fill included
  for (int i = threadIdx.x; i < box_cols * kTileRows; i += blockDim.x) gmem_box[i] = smem_box[i];
}
/// [load_one_box]

class Sm90a_DeviceMaps : public course::GpuTest {
 protected:
  Sm90a_DeviceMaps() : GpuTest(chapter_info().requirement) {}
  static std::size_t num_maps(const Problem& p) { return kMapsPerTensor * p.plan.tensors.size(); }
  // The maps of the batch as the driver encodes them on the host.
  static std::vector<CUtensorMap> driver_maps(const Problem& p) {
    std::vector<CUtensorMap> maps;
    for (const TensorLayout& t : p.plan.tensors) {  // slot order: [2t] input, [2t + 1] output
      maps.push_back(course::encode_tiled(tensor_request(p.buffers.gmem_in + t.offset_elems, t)));
      maps.push_back(course::encode_tiled(tensor_request(p.buffers.gmem_out + t.offset_elems, t)));
    }
    return maps;
  }
  // The maps as an encode kernel writes them into gmem_batch_maps (poisoned first).
  static std::vector<CUtensorMap> device_maps(const Problem& p, bool from_zero) {
    COURSE_CHECK(cudaMemset(p.buffers.gmem_maps, course::kPoisonByte, sizeof(CUtensorMap) * kMaxMaps));
    const unsigned count = static_cast<unsigned>(num_maps(p));
    if (from_zero) {
      lab::encode_from_zero_kernel<<<count, kWarpThreads>>>(p.buffers.batch, p.buffers.gmem_in, p.buffers.gmem_out,
                                                        p.buffers.gmem_maps);
    } else {
      encode_from_template_kernel<<<count, kWarpThreads>>>(p.buffers.template_map, p.buffers.batch, p.buffers.gmem_in,
                                                            p.buffers.gmem_out, p.buffers.gmem_maps);
    }
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<CUtensorMap> maps(count);
    COURSE_CHECK(cudaMemcpy(maps.data(), p.buffers.gmem_maps, count * sizeof(CUtensorMap), cudaMemcpyDeviceToHost));
    return maps;
  }
  static std::vector<float> load(const CUtensorMap* gmem_map, const TensorLayout& t, TileCoords at) {
    course::DeviceBuffer<float> gmem_box(std::size_t(t.box_cols) * kTileRows);
    gmem_box.fill_bytes(course::kPoisonByte);
    load_one_box_kernel<<<1, kBlockThreads>>>(gmem_map, t.box_cols, at, gmem_box.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<float> box(gmem_box.size());
    gmem_box.download(box.data());
    return box;
  }
};

// The map is opaque: whether the device's bytes equal the driver's is not documented. What must
// agree is what a map moves: every input map, made three ways, loads the same boxes as the model
// (output maps are exercised by every variant's store).
TEST_F(Sm90a_DeviceMaps, MoveTheSameBoxesAsTheDriversMaps) {
  const Problem p(kAwkwardBatch);
  const std::vector<CUtensorMap> sources[] = {driver_maps(p), device_maps(p, false), device_maps(p, true)};
  const char* const source_names[] = {"driver", "device from template", "device from zero"};
  course::DeviceBuffer<CUtensorMap> gmem_maps(num_maps(p));
  for (int s = 0; s < 3; ++s) {
    gmem_maps.upload(sources[s].data());
    for (std::size_t i = 0; i < p.plan.tensors.size(); ++i) {
      const TensorLayout& t = p.plan.tensors[i];
      const int last_x = (t.tiles_x - 1) * t.box_cols, last_y = (t.rows - 1) / kTileRows * kTileRows;
      for (const TileCoords at : {TileCoords{0, 0}, TileCoords{-4, -3}, TileCoords{last_x, last_y},
                                  TileCoords{round_up(t.cols, 4) - 4, t.rows - 1}, TileCoords{-t.box_cols + 4, 5}}) {
        std::vector<float> expected(std::size_t(t.box_cols) * kTileRows);
        load_box_model(p.host_in.data() + t.offset_elems, t, at.x, at.y, expected.data());
        const course::Comparison result =
            course::compare_exact(load(gmem_maps.data() + kMapsPerTensor * i, t, at), expected, t.box_cols);
        EXPECT_TRUE(result.ok()) << source_names[s] << ", tensor " << i << ", box at (" << at.x << ", " << at.y
                                 << "): " << result.summary() << '\n' << result.first;
      }
    }
  }
}

// Prints, for every map, whether the device's 128 bytes equal the driver's (the GPU run records
// the answer), and checks what must hold whatever the layout: each slot was written, encoding
// is deterministic, and tensors of different shapes get different maps.
TEST_F(Sm90a_DeviceMaps, BytesComparedWithTheDriversEncoding) {
  const Problem p(kAwkwardBatch);
  const std::vector<CUtensorMap> driver = driver_maps(p);
  const CUtensorMap poison = course::poison_value<CUtensorMap>();
  for (bool from_zero : {false, true}) {
    const std::vector<CUtensorMap> device = device_maps(p, from_zero);
    const std::vector<CUtensorMap> again = device_maps(p, from_zero);
    std::ostringstream report;
    int identical = 0;
    for (std::size_t m = 0; m < device.size(); ++m) {
      ASSERT_NE(std::memcmp(&device[m], &poison, sizeof(CUtensorMap)), 0) << "map " << m << " was never written";
      EXPECT_EQ(std::memcmp(&device[m], &again[m], sizeof(CUtensorMap)), 0) << "map " << m << " is not deterministic";
      std::string words;
      for (int w = 0; w < kMapWords; ++w) {
        if (device[m].opaque[w] != driver[m].opaque[w]) words += " " + std::to_string(w);
      }
      identical += words.empty();
      report << "  map " << m << ": " << (words.empty() ? "identical" : "8-byte words differ:" + words) << '\n';
    }
    EXPECT_NE(std::memcmp(&device[0], &device[2], sizeof(CUtensorMap)), 0) << "tensors 0 and 1 got the same map";
    const char* path = from_zero ? "device_from_zero" : "device_from_template";
    RecordProperty(std::string(path) + "_maps_identical_to_driver", identical);
    std::printf("%s: %d of %zu maps byte-identical to the driver's\n%s", path, identical, device.size(),
                report.str().c_str());
  }
}

// ---- The guide's __device__ variable, from host code -----------------------------------------

// In host code, `&gmem_batch_maps` is the address of the host-side shadow that the runtime uses
// to find the symbol: not device memory. The device address comes from cudaGetSymbolAddress.
TEST_F(Sm90a_DeviceMaps, HostCodeSeesOnlyTheShadowOfADeviceVariable) {
  void* device_address = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&device_address, gmem_batch_maps));
  const void* shadow = static_cast<const void*>(&gmem_batch_maps);
  EXPECT_NE(device_address, shadow);
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, device_address));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, shadow));
  EXPECT_NE(attributes.type, cudaMemoryTypeDevice) << "the shadow is host memory";
}

// ---- A stale byte count after a replaced box is diagnosed, not hung ---------------------------

/// [broken]
// Replacing a box dimension changes how many bytes every load of the map delivers. This kernel
// halves the box's height on the device but keeps announcing the template's full box to the
// barrier: TMA delivers half the bytes, the phase never completes.
__global__ void stale_byte_count_kernel(const __grid_constant__ CUtensorMap template_map, CUtensorMap* gmem_map) {
  __shared__ CUtensorMap smem_map;
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];
  __shared__ alignas(8) std::uint64_t full_bar;
  const bool is_leader = course::elect_tma_leader();
  if (threadIdx.x < kWarpThreads) {  // warp 0 makes the map
    if (threadIdx.x < kMapWords) smem_map.opaque[threadIdx.x] = template_map.opaque[threadIdx.x];
    __syncwarp();  // the template is in shared memory
    if (course::elect_one_lane()) {
      ptx::tensormap_replace_box_dim(ptx::space_shared, &smem_map, ptx::n32_t<1>{}, std::uint32_t{kTileRows / 2});
    }
    __syncwarp();  // the change is visible to the whole warp
    ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_cta, gmem_map, &smem_map, ptx::n32_t<kMapBytes>{});
  }
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // the map is released and the barrier initialised
  if (is_leader) {
    GlobalMaps<ptx::dot_scope::cta>{gmem_map}.acquire(0);
    load_box(gmem_map, {0, 0}, std::uint32_t{kTileElems * sizeof(float)}, smem_box, &full_bar);  // wrong: 32 rows
  }
  course::bounded_wait_parity(&full_bar, 0, {"full", 0, 0});
}
/// [broken]

class Sm90a_DeviceTensormapDiagnosis : public course::GpuTest {
 protected:
  Sm90a_DeviceTensormapDiagnosis() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90a_DeviceTensormapDiagnosis, StaleByteCountAfterReplacingTheBoxIsDiagnosedNotHung) {
  course::DeviceBuffer<float> matrix(kTileElems);
  course::DeviceBuffer<CUtensorMap> gmem_map(1);
  const CUtensorMap template_map = course::encode_tiled(template_request(matrix.data()));
  auto launch = [&] { stale_byte_count_kernel<<<1, kBlockThreads>>>(template_map, gmem_map.data()); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(), "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
