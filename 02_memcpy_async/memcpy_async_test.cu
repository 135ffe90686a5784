// Tests for 02_memcpy_async, both lessons, lab and model: the model of which instruction a copy
// call becomes (alignment, architecture, what the call completes on, the run-time choice of
// cooperative groups), the stencil's copy plan against the guide's, the references and the
// variant tables, on the CPU; what every kernel of the three programs compiles to, checked
// against the model's row for its variant (PTX for 8.0 and 9.0; machine code for 8.0 and 9.0
// where cuobjdump can read it); every variant and every lab row bit-exact on the GPU; the grid
// rule on the CPU, the launch refusal of the stencil, one thread's commit groups and the
// committed figure; and the grids the launchers start, read back from the GPU.
#include "halo_stencil.cu"      // the second lesson, in namespace halo
#include "memcpy_async_lab.cu"  // the lab, which brings the lesson and the model
#include "memcpy_async_figures.cpp"  // the concept figure, drawn from the model

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/grid_probe.cuh"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab
namespace halo {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace halo

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The problem, the size rules and the tables -------------------------------------------------

TEST(HostMemcpyAsync, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps inside its own batch
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));
}

TEST(HostMemcpyAsync, SizeRules) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(257 * kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.verify_bytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.bench_bytes)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes + 16)) << info.program;
  }
  const course::ChapterInfo stencil = halo::chapter_info();
  EXPECT_FALSE(stencil.size_rule(128));
  EXPECT_FALSE(stencil.size_rule(stencil.verify_bytes));
  EXPECT_TRUE(stencil.size_rule(100));
  EXPECT_TRUE(stencil.size_rule(128 + 64));
}

TEST(HostMemcpyAsync, TheLabTakesTheLessonsCommandLine) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_STREQ(lesson.program, "memcpy_async");
  EXPECT_STREQ(lab.program, "memcpy_async_lab");
  EXPECT_STREQ(halo::chapter_info().program, "halo_stencil");
  EXPECT_EQ(lab.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab.bench_bytes, lesson.bench_bytes);
  EXPECT_EQ(lab.requirement.major, 8);
  ASSERT_TRUE(lab.size_rule(100));
  EXPECT_EQ(*lab.size_rule(100), *lesson.size_rule(100));
}

// ---- 128-byte alignment: the lines and sectors a warp's copy touches ------------------------------

TEST(HostLineModel, AWarpOfSixteenByteCopiesTouchesFourLinesOnlyFromALineBoundary) {
  EXPECT_EQ(lab::units_per_warp_request(0, 16, lab::kLineBytes), 4u) << "512 bytes from a boundary";
  for (std::size_t offset = 16; offset < lab::kLineBytes; offset += 16) {
    EXPECT_EQ(lab::units_per_warp_request(offset, 16, lab::kLineBytes), 5u) << offset << " bytes past a boundary";
  }
  EXPECT_EQ(lab::units_per_warp_request(lab::kLineBytes, 16, lab::kLineBytes), 4u) << "the next boundary";
}

TEST(HostLineModel, SectorsGrowOnlyWhenTheSourceIsOffA32ByteBoundary) {
  EXPECT_EQ(lab::units_per_warp_request(0, 16, lab::kSectorBytes), 16u);
  EXPECT_EQ(lab::units_per_warp_request(64, 16, lab::kSectorBytes), 16u) << "five lines, the same sixteen sectors";
  EXPECT_EQ(lab::units_per_warp_request(16, 16, lab::kSectorBytes), 17u);
  EXPECT_EQ(lab::units_per_warp_request(96, 16, lab::kSectorBytes), 16u);
}

TEST(HostLineModel, AWarpOfFourByteCopiesTouchesOneLineOrTwo) {
  EXPECT_EQ(lab::units_per_warp_request(0, 4, lab::kLineBytes), 1u);
  EXPECT_EQ(lab::units_per_warp_request(4, 4, lab::kLineBytes), 2u);
  EXPECT_EQ(lab::units_per_warp_request(124, 4, lab::kLineBytes), 2u);
  EXPECT_EQ(lab::units_per_warp_request(0, 4, lab::kSectorBytes), 4u);
  EXPECT_EQ(lab::units_per_warp_request(4, 4, lab::kSectorBytes), 5u);
  EXPECT_EQ(lab::units_per_warp_request(0, 8, lab::kLineBytes), 2u) << "8-byte copies: 256 bytes";
}

// The formula against a count by brute force: the distinct units that the 32 lanes' byte ranges
// touch, for every copy width, every offset the width's alignment allows across two lines, and
// both unit sizes.
TEST(HostLineModel, FormulaAgreesWithCountingTheUnitsEveryLaneTouches) {
  for (std::size_t copy_bytes : {std::size_t{4}, std::size_t{8}, std::size_t{16}}) {
    for (std::size_t unit : {lab::kSectorBytes, lab::kLineBytes}) {
      for (std::size_t offset = 0; offset < 2 * lab::kLineBytes; offset += copy_bytes) {
        std::vector<std::size_t> units;
        for (std::size_t lane = 0; lane < 32; ++lane) {
          for (std::size_t byte = 0; byte < copy_bytes; ++byte) units.push_back((offset + lane * copy_bytes + byte) / unit);
        }
        std::sort(units.begin(), units.end());
        const auto distinct = static_cast<std::size_t>(std::unique(units.begin(), units.end()) - units.begin());
        EXPECT_EQ(lab::units_per_warp_request(offset, copy_bytes, unit), distinct)
            << copy_bytes << "-byte copies, " << offset << " bytes past a line, units of " << unit;
      }
    }
  }
}

// The model's table and the variant table agree, and every offset row keeps the alignment its copy
// width needs while leaving the 128-byte line: only the line changes against its aligned row.
TEST(HostLineModel, OffsetRowsKeepTheirWidthsAlignmentAndLeaveTheLine) {
  int offset_rows = 0;
  for (const lab::LineRow& row : lab::kLineRows) {
    EXPECT_EQ(lab::src_offset_of(row.variant), row.src_offset_bytes) << row.variant;
    EXPECT_EQ(row.src_offset_bytes % row.copy_bytes, 0u) << row.variant << ": aligned_size_t<" << row.copy_bytes << ">";
    if (row.src_offset_bytes == 0) continue;
    ++offset_rows;
    EXPECT_NE(row.src_offset_bytes % lab::kLineBytes, 0u) << row.variant;
    EXPECT_EQ(lab::units_per_warp_request(row.src_offset_bytes, row.copy_bytes, lab::kLineBytes),
              lab::units_per_warp_request(0, row.copy_bytes, lab::kLineBytes) + 1)
        << row.variant << ": one line more than from the boundary";
  }
  EXPECT_EQ(offset_rows, 1);
  EXPECT_THROW(lab::src_offset_of("ldgsts_32"), std::invalid_argument);
}

TEST(HostLineModel, TheLabPrintsLinesAndSectorsPerRow) {
  std::ostringstream out;
  lab::chapter_info().host_model(out);
  EXPECT_TRUE(has(out.str(), "ldgsts_16_offset_16        16-byte copies, source 16 B past a line: 5 lines, 17 sectors"))
      << out.str();
  EXPECT_TRUE(has(out.str(), "ldgsts_16                  16-byte copies, source  0 B past a line: 4 lines, 16 sectors"))
      << out.str();
}

// Every row of the three tables has a row in the model, and no model row is left without one.
std::vector<VariantCopies> model_rows() {
  std::vector<VariantCopies> rows = lab::copy_rows();
  for (VariantCopies& row : halo_copies(halo::kTileElems, halo::kHalo)) rows.push_back(row);
  return rows;
}

TEST(HostMemcpyAsync, TheModelHasOneRowPerVariantOfEachProgram) {
  std::multiset<std::string> model;
  for (const VariantCopies& row : model_rows()) model.insert(std::string(row.program) + " " + row.variant);
  std::multiset<std::string> tables;
  for (const Variant& v : kVariants) tables.insert(std::string("memcpy_async ") + v.name);
  for (const lab::Variant& v : lab::kVariants) tables.insert(std::string("memcpy_async_lab ") + v.name);
  for (const halo::Variant& v : halo::kVariants) tables.insert(std::string("halo_stencil ") + v.name);
  EXPECT_EQ(model, tables);
}

// ---- The model: which instruction a copy becomes --------------------------------------------------

TEST(HostCopyPathModel, SixteenBytesProvenAreLdgstsThatBypassL1OnAmpere) {
  const CopyPath p = cuda_memcpy_async_path(80, 16, 4096, SyncObject::smem_block_barrier);
  EXPECT_EQ(p.copy, Copy::ldgsts);
  EXPECT_EQ(p.width_bytes, 16);
  EXPECT_TRUE(p.bypasses_l1());
  EXPECT_EQ(p.signal, Signal::arrive_on);
}

TEST(HostCopyPathModel, OnHopperSixteenBytesOnASharedMemoryBlockBarrierAreOneBulkCopy) {
  const CopyPath bulk = cuda_memcpy_async_path(90, 16, 4096, SyncObject::smem_block_barrier);
  EXPECT_EQ(bulk.copy, Copy::bulk);
  EXPECT_EQ(bulk.width_bytes, 4096) << "one instruction for the whole call";
  EXPECT_EQ(bulk.signal, Signal::complete_tx);
  EXPECT_EQ(cuda_memcpy_async_path(90, 32, 4096, SyncObject::smem_block_barrier).copy, Copy::bulk);
  // Not with less alignment, not on a pipeline, not on another barrier, not before 9.0.
  EXPECT_EQ(cuda_memcpy_async_path(90, 8, 4096, SyncObject::smem_block_barrier).copy, Copy::ldgsts);
  EXPECT_EQ(cuda_memcpy_async_path(90, 16, 4096, SyncObject::pipeline).copy, Copy::ldgsts);
  EXPECT_EQ(cuda_memcpy_async_path(90, 16, 4096, SyncObject::pipeline).signal, Signal::wait_group);
  EXPECT_EQ(cuda_memcpy_async_path(90, 16, 4096, SyncObject::other_barrier).copy, Copy::ldgsts);
  EXPECT_EQ(cuda_memcpy_async_path(80, 16, 4096, SyncObject::smem_block_barrier).copy, Copy::ldgsts);
}

TEST(HostCopyPathModel, FourAndEightBytesGoThroughL1) {
  for (int sm : {80, 90}) {
    for (std::size_t align : {4u, 8u}) {
      const CopyPath p = cuda_memcpy_async_path(sm, align, 4096, SyncObject::smem_block_barrier);
      EXPECT_EQ(p.copy, Copy::ldgsts) << sm << " " << align;
      EXPECT_EQ(p.width_bytes, static_cast<int>(align));
      EXPECT_FALSE(p.bypasses_l1());
    }
  }
  EXPECT_EQ(cuda_memcpy_async_path(80, 32, 4096, SyncObject::pipeline).width_bytes, 16) << "16 bytes at most";
}

TEST(HostCopyPathModel, OneOrTwoBytesProvenIsASynchronousLoop) {
  for (std::size_t align : {1u, 2u}) {
    const CopyPath p = cuda_memcpy_async_path(90, align, 4096, SyncObject::smem_block_barrier);
    EXPECT_EQ(p.copy, Copy::sync);
    EXPECT_EQ(p.width_bytes, static_cast<int>(align));
    EXPECT_EQ(p.signal, Signal::none) << "done when the call returns: nothing to wait for";
  }
  EXPECT_EQ(cuda_memcpy_async_path(75, 16, 4096, SyncObject::smem_block_barrier).copy, Copy::sync)
      << "no LDGSTS before 8.0";
}

TEST(HostCopyPathModel, CooperativeGroupsWithAHintOfFourOrMoreNeverLooksAtTheAddresses) {
  const CopyPath p = cg_memcpy_async_path(4, 0x1000, 0x2001, 4096);  // a broken promise: undefined behaviour
  EXPECT_EQ(p.copy, Copy::ldgsts);
  EXPECT_EQ(p.width_bytes, 4);
  EXPECT_EQ(cg_memcpy_async_path(16, 0x1000, 0x2000, 4096).width_bytes, 16);
  EXPECT_EQ(cg_memcpy_async_path(8, 0x1000, 0x2000, 4096).width_bytes, 8) << "8 proven: 8, even where 16 would do";
}

TEST(HostCopyPathModel, CooperativeGroupsWithCharPointersTakesTheWidestWidthBothAddressesShare) {
  const int expected_width[16] = {16, 1, 2, 1, 4, 1, 2, 1, 8, 1, 2, 1, 4, 1, 2, 1};
  for (std::uintptr_t offset = 0; offset < 16; ++offset) {
    const CopyPath p = cg_memcpy_async_path(1, 0x1000, 0x2000 + offset, 4096);
    EXPECT_EQ(p.width_bytes, expected_width[offset]) << "source " << offset << " bytes off";
    EXPECT_EQ(p.copy, expected_width[offset] >= 4 ? Copy::ldgsts : Copy::sync) << offset;
  }
  const CopyPath lab_row = cg_memcpy_async_path(1, 0x1000, 0x2004, 4096);  // misaligned_cg
  EXPECT_EQ(lab_row.head_bytes, 0);
  EXPECT_EQ(lab_row.tail_bytes, 0);
}

TEST(HostCopyPathModel, CooperativeGroupsCopiesAnUnalignedHeadAndTailByteByByte) {
  // Both 4 bytes off: they differ in no bit below 16, so 16-byte copies after a 12-byte head.
  const CopyPath p = cg_memcpy_async_path(1, 0x1004, 0x2004, 4096);
  EXPECT_EQ(p.width_bytes, 16);
  EXPECT_EQ(p.head_bytes, 12);
  EXPECT_EQ(p.tail_bytes, 4);
  EXPECT_EQ(cg_memcpy_async_path(1, 0x1000, 0x2000, 8).copy, Copy::sync) << "fewer bytes than one 16-byte copy";
}

TEST(HostCopyPathModel, InstructionsPerBatch) {
  const std::vector<VariantCopies> rows = model_rows();
  auto count = [&](const char* variant, int sm) {
    long total = 0;
    for (const VariantCopies& row : rows) {
      if (std::string(row.variant) != variant) continue;
      for (const CopyCall& call : row.calls) total += instructions_per_batch(sm, call);
    }
    return total;
  };
  EXPECT_EQ(count("cg_memcpy_async", 80), 256);
  EXPECT_EQ(count("cuda_memcpy_async_block", 80), 256);
  EXPECT_EQ(count("cuda_memcpy_async_block", 90), 1);
  EXPECT_EQ(count("cuda_memcpy_async_thread", 90), 256) << "one 16-byte bulk copy per thread";
  EXPECT_EQ(count("misaligned_cg", 90), 1024);
  EXPECT_EQ(count("misaligned_cuda", 90), 4096);
  EXPECT_EQ(count("ldgsts_16", 90), 256);
  EXPECT_EQ(count("ldgsts_16_offset_16", 90), 256) << "off the line, the same copies";
  for (const char* stencil : {"stencil_sync", "stencil_cuda_memcpy_async"}) {
    EXPECT_EQ(count(stencil, 90), 48) << stencil << ": one per element of the 48-float window";
  }
}

TEST(HostCopyPathModel, ProgramsPrintTheirRows) {
  std::ostringstream lesson, lab_out;
  print_copy_paths(lesson, model_rows(), "memcpy_async");
  print_copy_paths(lab_out, model_rows(), "memcpy_async_lab");
  EXPECT_TRUE(has(lesson.str(), "bulk copy of 4096 B (cp.async.bulk) x1")) << lesson.str();
  EXPECT_FALSE(has(lesson.str(), "misaligned")) << lesson.str();
  EXPECT_TRUE(has(lab_out.str(), "4-byte LDGSTS (cp.async.ca, through L1)")) << lab_out.str();
  EXPECT_TRUE(has(lab_out.str(), "1-byte loads and stores (synchronous)")) << lab_out.str();
}

// ---- The stencil's copy plan ------------------------------------------------------------------

using halo::kStencilThreads;
using halo::kTileBufferElems;
using halo::TileCopies;

// The first problem of a plan for a 32-lane warp: every buffer slot must be written exactly
// once, from the window element of the same index (the window is contiguous).
template <class Plan>
std::string plan_problem(Plan plan) {
  int writes[kTileBufferElems] = {};
  for (int lane = 0; lane < kStencilThreads; ++lane) {
    const TileCopies copies = plan(lane);
    for (int c = 0; c < copies.count; ++c) {
      const int slot = copies.slot[c], from = copies.from[c];
      if (slot < 0 || slot >= kTileBufferElems) return "lane " + std::to_string(lane) + " writes outside the buffer";
      if (from != slot) {
        return "lane " + std::to_string(lane) + " fills slot " + std::to_string(slot) + " from window element " +
               std::to_string(from);
      }
      ++writes[slot];
    }
  }
  for (int slot = 0; slot < kTileBufferElems; ++slot) {
    if (writes[slot] != 1) return "slot " + std::to_string(slot) + " written " + std::to_string(writes[slot]) + " times";
  }
  return "";
}

// The guide's Version 1 (cuda::memcpy_async per thread), transcribed: left = window,
// right = window + 40; it copies the centre from `right + tid` into `buffer + 40`.
TileCopies guide_version1(int tid) {
  TileCopies c{0, {0, 0}, {0, 0}};
  auto add = [&](int slot, int from) { c.slot[c.count] = slot, c.from[c.count] = from, ++c.count; };
  if (tid < 8) add(tid, tid);
  else if (tid >= 32 - 8) add(tid + 16, 40 + tid);
  if (tid < 32) add(40, 40 + tid);
  return c;
}

// The guide's synchronous and primitives versions: centre right, right halo from `right + tid`.
TileCopies guide_primitives(int tid) {
  TileCopies c{0, {0, 0}, {0, 0}};
  auto add = [&](int slot, int from) { c.slot[c.count] = slot, c.from[c.count] = from, ++c.count; };
  if (tid < 8) add(tid, tid);
  else if (tid >= 32 - 8) add(tid + 16, 40 + tid);
  if (tid < 32) add(tid + 8, 8 + tid);
  return c;
}

TEST(HostStencilPlan, EverySlotOnceFromTheRightElement) { EXPECT_EQ(plan_problem(halo::stencil_copies), ""); }

TEST(HostStencilPlan, CatchesTheGuidesCentreCopy) {
  // Every lane writes slot 40 (the right halo's first slot), from right[tid].
  EXPECT_EQ(plan_problem(guide_version1), "lane 1 fills slot 40 from window element 41");
}

TEST(HostStencilPlan, CatchesTheGuidesRightHaloOffset) {
  EXPECT_EQ(plan_problem(guide_primitives), "lane 24 fills slot 40 from window element 64");
}

TEST(HostStencilPlan, CountsMatchTheModel) {
  int copies = 0;
  for (int lane = 0; lane < kStencilThreads; ++lane) copies += halo::stencil_copies(lane).count;
  EXPECT_EQ(copies, kTileBufferElems);
  for (const VariantCopies& row : halo_copies(halo::kTileElems, halo::kHalo)) {
    EXPECT_EQ(row.calls.front().calls, copies) << row.variant;
  }
}

// The guide's right-halo condition has no upper bound: lanes 32 and up would copy past the tile.
// The launcher refuses every block but one warp, in one line that names the rule, before it
// touches the GPU.
TEST(HostStencilPlan, ThePlanWouldWritePastTheTileForALaneOfASecondWarp) {
  const TileCopies lane32 = halo::stencil_copies(32);
  EXPECT_GE(lane32.slot[lane32.count - 1], kTileBufferElems) << "the plan is defined for lanes 0-31 only";
}

TEST(HostStencilPlan, TheLauncherRefusesABlockOtherThanOneWarp) {
  for (int threads : {16, 31, 33, 64, 128}) {
    try {
      halo::launch_tiles(halo::stencil_cuda_memcpy_async_kernel, threads, nullptr, nullptr, 1);
      ADD_FAILURE() << threads << " threads accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_EQ(what, "halo_stencil: the copy plan covers lanes 0-31, so a block must be one warp of 32 "
                      "threads (got " + std::to_string(threads) + ")");
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
  EXPECT_NO_THROW(halo::require_one_warp(halo::kStencilThreads));
}

TEST(HostStencil, ReferenceSumsSeventeenNeighbours) {
  std::vector<float> padded(32 + 16, 1.0f);
  padded[8 + 5] = 100.0f;  // in[5]
  const std::vector<float> out = halo::stencil_reference(padded);
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(out[0], 16.0f + 100.0f);   // window in[-8..8] contains in[5]
  EXPECT_EQ(out[13], 16.0f + 100.0f);  // window in[5..21]
  EXPECT_EQ(out[14], 17.0f);           // in[6..22] does not
}

// ---- One thread's commit groups ------------------------------------------------------------

TEST(HostCommitGroups, AWaitCoversCommittedGroupsOldestFirst) {
  CommitGroups groups;
  groups.copy(16);
  EXPECT_EQ(groups.groups_in_flight(), 0) << "an uncommitted copy is in no group yet";
  EXPECT_EQ(groups.copies_in_flight(), 1);
  groups.commit();
  groups.copy(4), groups.copy(4);
  groups.commit();
  EXPECT_EQ(groups.groups_in_flight(), 2);
  EXPECT_EQ(groups.bytes_in_flight(), 24);
  EXPECT_EQ(groups.wait_prior(1), 1) << "the older group lands, the newer may stay";
  EXPECT_EQ(groups.bytes_in_flight(), 8);
  EXPECT_EQ(groups.wait_prior(1), 0) << "already at most one pending";
  EXPECT_EQ(groups.wait_prior(0), 1);
  EXPECT_EQ(groups.copies_in_flight(), 0);
  EXPECT_THROW(groups.wait_prior(-1), std::invalid_argument);
}

TEST(HostCommitGroups, AWaitLeavesTheOpenGroupInFlight) {
  CommitGroups groups;
  groups.copy(16);
  groups.commit();
  groups.copy(8);  // not committed: wait_group does not cover it
  EXPECT_EQ(groups.wait_prior(0), 1);
  EXPECT_EQ(groups.copies_in_flight(), 1);
  EXPECT_EQ(groups.open_copies(), 1);
  groups.commit();
  groups.commit();  // an empty group
  EXPECT_EQ(groups.groups_in_flight(), 2);
  EXPECT_EQ(groups.wait_prior(0), 2);
}

// ---- The figure and the program that draws it ---------------------------------------------------

TEST(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, TheFigureCarriesTheModelsCounts) {
  const std::string svg = figures::ldgsts_path_svg();
  EXPECT_TRUE(has(svg, "viewBox=\"0 0 720 ")) << "scales to its column";
  EXPECT_TRUE(has(svg, "width=\"100%\""));
  EXPECT_TRUE(has(svg, "LDG \u00d71024, 4 B each, then STS \u00d71024"));
  EXPECT_TRUE(has(svg, "LDGSTS \u00d7256, 16 B each, L1 bypassed (.cg)"));
  EXPECT_TRUE(has(svg, "bulk copy \u00d71, 4096 B (cp.async.bulk)"));
  EXPECT_TRUE(has(svg, "open: 0, committed: 1 group, 16 B"));
  EXPECT_TRUE(has(svg, "&lt;") || !has(svg, "aligned_size_t<")) << "text is escaped";
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits, kernel by kernel, against the model -----------------------------

// The kernel that runs each variant, by its mangled name, and the program whose PTX holds it.
struct KernelOf {
  const char* variant;
  const char* program;
  const char* mangled;
};
const KernelOf kKernels[] = {
    {"cg_memcpy_async", "memcpy_async", "_Z22cg_memcpy_async_kernelPKjPjm"},
    {"cuda_memcpy_async_block", "memcpy_async", "_Z30cuda_memcpy_async_block_kernelPKjPjm"},
    {"cuda_memcpy_async_thread", "memcpy_async", "_Z31cuda_memcpy_async_thread_kernelPKjPjm"},
    {"pipeline_primitives", "memcpy_async", "_Z26pipeline_primitives_kernelPKjPjm"},
    {"misaligned_cg", "memcpy_async_lab", "_ZN3lab20misaligned_cg_kernelEPKjPjm"},
    {"misaligned_cuda", "memcpy_async_lab", "_ZN3lab22misaligned_cuda_kernelEPKjPjm"},
    {"ldgsts_16", "memcpy_async_lab", "_ZN3lab22ldgsts_pipeline_kernelEPKjPjm"},
    {"ldgsts_16_offset_16", "memcpy_async_lab", "_ZN3lab22ldgsts_pipeline_kernelEPKjPjm"},
    {"stencil_sync", "halo_stencil", "_ZN4halo19stencil_sync_kernelEPKfPfm"},
    {"stencil_cuda_memcpy_async", "halo_stencil", "_ZN4halo32stencil_cuda_memcpy_async_kernelEPKfPfm"},
};

const KernelOf& kernel_of(const std::string& variant) {
  for (const KernelOf& k : kKernels) {
    if (variant == k.variant) return k;
  }
  ADD_FAILURE() << "no kernel listed for " << variant;
  return kKernels[0];
}

// The LDGSTS PTX for a width: cp.async.cg for 16 bytes (L1 bypass), cp.async.ca for 4 and 8.
std::string ldgsts_ptx(int width) {
  return std::string(width == 16 ? R"(cp\.async\.cg)" : R"(cp\.async\.ca)") + R"(\.shared\.global [^;]*, )" +
         std::to_string(width) + ", " + std::to_string(width) + ";";
}
const std::string kAnyLdgstsPtx = R"(cp\.async\.c[ag]\.shared\.global )";
const std::string kBulkPtx = R"(cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes)";

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* program : {"memcpy_async", "memcpy_async_lab", "halo_stencil"}) {
      for (const char* arch : {"80", "90"}) ptx_[std::string(program) + arch] = course::chapter_ptx(program, arch);
    }
  }
  static std::string kernel(const std::string& variant, const std::string& arch) {
    const KernelOf& k = kernel_of(variant);
    const std::string body = course::ptx_kernel_body(ptx_.at(k.program + arch), k.mangled);
    EXPECT_FALSE(body.empty()) << "no kernel " << k.mangled << " in " << k.program << ".compute_" << arch << ".ptx";
    return body;
  }
  static inline std::map<std::string, std::string> ptx_;
};

// The model's path for every call of every variant, found in the PTX of its kernel.
TEST_F(HostCodegen, EveryKernelCompilesToTheModelsPathOnAmpereAndHopper) {
  for (const VariantCopies& row : model_rows()) {
    for (const int sm : {80, 90}) {
      const std::string k = kernel(row.variant, std::to_string(sm));
      const std::string where = std::string(row.variant) + " on compute_" + std::to_string(sm);
      for (const CopyCall& call : row.calls) {
        const CopyPath path = path_of(sm, call);
        const bool decided_at_run_time = call.api == Api::cg && call.proven_align < 4;
        switch (path.copy) {
          case Copy::bulk: {
            EXPECT_GE(course::count_matches(k, kBulkPtx), 1) << where;
            EXPECT_EQ(course::count_matches(k, kAnyLdgstsPtx), 0) << where << ": the bulk copy replaces LDGSTS";
            // The barrier's initialisation, a proxy fence, then the first copy that completes on it.
            const std::size_t init = k.find("mbarrier.init"), fence = k.find("fence.proxy.async", init);
            const std::size_t copy = k.find("cp.async.bulk");
            EXPECT_TRUE(init < fence && fence < copy) << where << ": no proxy fence between init and bulk copy";
            break;
          }
          case Copy::ldgsts:
            EXPECT_GE(course::count_matches(k, ldgsts_ptx(path.width_bytes)), 1) << where;
            EXPECT_EQ(course::count_matches(k, R"(cp\.async\.bulk)"), 0) << where;
            if (!decided_at_run_time) {
              EXPECT_EQ(course::count_matches(k, kAnyLdgstsPtx), course::count_matches(k, ldgsts_ptx(path.width_bytes)))
                  << where << ": every LDGSTS of the kernel has the model's width";
              EXPECT_FALSE(has(k, "ld.global")) << where << ": the copy never goes through registers";
            }
            break;
          case Copy::sync: {
            const char* type = path.width_bytes == 1 ? "u8" : "f32";
            EXPECT_GE(course::count_matches(k, std::string(R"(ld\.global\.)") + type), 1) << where;
            EXPECT_GE(course::count_matches(k, std::string(R"(st\.shared\.)") + type), 1) << where;
            EXPECT_FALSE(has(k, "cp.async")) << where << ": a synchronous copy issues no asynchronous one";
            break;
          }
        }
        switch (path.signal) {
          case Signal::complete_tx: EXPECT_TRUE(has(k, "mbarrier.expect_tx")) << where; break;
          case Signal::arrive_on:
            EXPECT_TRUE(has(k, "cp.async.mbarrier.arrive.shared.b64")) << where;
            EXPECT_FALSE(has(k, "cp.async.mbarrier.arrive.noinc")) << where << ": libcu++ uses the counting form";
            break;
          case Signal::wait_group:
            EXPECT_TRUE(has(k, "cp.async.commit_group")) << where;
            EXPECT_TRUE(has(k, "cp.async.wait_group")) << where;
            EXPECT_FALSE(has(k, "mbarrier")) << where << ": a commit group needs no barrier";
            break;
          case Signal::none: EXPECT_FALSE(has(k, "cp.async")) << where; break;
        }
      }
    }
  }
}

// The legacy form's list, kept as checks of its own: each instruction the chapter teaches
// appears in the PTX for 8.0 of the kernel that teaches it.
TEST_F(HostCodegen, EachTaughtInstructionAppearsWhereItIsTaught) {
  EXPECT_GE(course::count_matches(kernel("cg_memcpy_async", "80"), ldgsts_ptx(16)), 1);
  EXPECT_GE(course::count_matches(kernel("stencil_cuda_memcpy_async", "80"), ldgsts_ptx(4)), 1);
  EXPECT_TRUE(has(kernel("cuda_memcpy_async_block", "80"), "cp.async.mbarrier.arrive"));
  EXPECT_TRUE(has(kernel("pipeline_primitives", "80"), "cp.async.commit_group"));
  EXPECT_TRUE(has(kernel("pipeline_primitives", "80"), "cp.async.wait_group"));
  EXPECT_GE(course::count_matches(kernel("cuda_memcpy_async_block", "90"), kBulkPtx), 1);
}

// cooperative_groups with char pointers compiles every width and chooses at run time: the
// kernel holds 4-, 8- and 16-byte LDGSTS and the byte and 2-byte loops. cuda::memcpy_async, told
// one byte, holds the byte loop alone.
TEST_F(HostCodegen, CooperativeGroupsKeepsEveryWidthForTheRunTimeChoice) {
  for (const char* arch : {"80", "90"}) {
    const std::string group = kernel("misaligned_cg", arch);
    for (int width : {4, 8, 16}) EXPECT_GE(course::count_matches(group, ldgsts_ptx(width)), 1) << width << arch;
    EXPECT_TRUE(has(group, "ld.global.u8")) << arch;
    EXPECT_TRUE(has(group, "ld.global.u16")) << arch;
    const std::string cuda = kernel("misaligned_cuda", arch);
    EXPECT_FALSE(has(cuda, "cp.async")) << arch;
    EXPECT_FALSE(has(cuda, "ld.global.u16")) << arch;
    EXPECT_TRUE(has(cuda, "ld.global.u8")) << arch;
  }
}

// Every barrier variant initialises an mbarrier in shared memory; on 9.0 the waits use
// try_wait, on 8.0 test_wait.
TEST_F(HostCodegen, BarrierVariantsInitialiseAndWaitOnAnMbarrier) {
  for (const char* variant : {"cuda_memcpy_async_block", "cuda_memcpy_async_thread", "misaligned_cuda",
                              "stencil_cuda_memcpy_async"}) {
    EXPECT_TRUE(has(kernel(variant, "80"), "mbarrier.init.shared.b64")) << variant;
    EXPECT_TRUE(has(kernel(variant, "80"), "mbarrier.test_wait.shared.b64")) << variant;
    EXPECT_TRUE(has(kernel(variant, "90"), "mbarrier.try_wait.shared.b64")) << variant;
  }
}

// The opcodes of LDGSTS in a kernel's machine code, as (bytes, bypasses L1): LDGSTS.E is 4
// bytes, .64 is 8, .128 is 16, .BYPASS skips L1 (other modifiers, e.g. .LTC128B, ignored).
std::set<std::pair<int, bool>> ldgsts_forms(const std::string& sass) {
  std::set<std::pair<int, bool>> forms;
  const std::regex opcode(R"(\sLDGSTS((?:\.[A-Z0-9]+)*)\s)");  // not ARRIVES.LDGSTSBAR
  for (auto it = std::sregex_iterator(sass.begin(), sass.end(), opcode); it != std::sregex_iterator(); ++it) {
    int bytes = 4;
    bool bypass = false;
    std::istringstream parts((*it)[1].str());
    for (std::string part; std::getline(parts, part, '.');) {
      if (part == "64") bytes = 8;
      if (part == "128") bytes = 16;
      if (part == "BYPASS") bypass = true;
    }
    forms.insert({bytes, bypass});
  }
  return forms;
}

// The machine code (this executable's sm_80 and sm_90 code; skipped where cuobjdump or that code
// is missing) of every variant with a path decided at compile time: exactly the model's LDGSTS
// (LDGSTS.E.BYPASS.128 for 16 bytes, LDGSTS.E.64 for 8, LDGSTS.E for 4), UBLKCP.S.G for the bulk
// copy, ARRIVES.LDGSTSBAR.64.TRANSCNT for the counting arrive-on.
void expect_machine_code_follows_the_model(const std::string& sass, int sm) {
  for (const VariantCopies& row : model_rows()) {
    const std::string k = course::sass_kernel_body(sass, kernel_of(row.variant).mangled);
    const std::string where = std::string(row.variant) + " on sm_" + std::to_string(sm);
    ASSERT_FALSE(k.empty()) << "no kernel for " << where;
    std::set<std::pair<int, bool>> expected;
    bool bulk = false, arrive_on = false, run_time = false;
    for (const CopyCall& call : row.calls) {
      const CopyPath path = path_of(sm, call);
      run_time = run_time || (call.api == Api::cg && call.proven_align < 4);
      if (path.copy == Copy::ldgsts) expected.insert({path.width_bytes, path.bypasses_l1()});
      bulk = bulk || path.copy == Copy::bulk;
      arrive_on = arrive_on || path.signal == Signal::arrive_on;
    }
    const std::set<std::pair<int, bool>> found = ldgsts_forms(k);
    if (run_time) {
      for (const auto& form : expected) EXPECT_EQ(found.count(form), 1u) << where << ": " << form.first << " bytes";
    } else {
      EXPECT_EQ(found, expected) << where;
    }
    EXPECT_EQ(course::count_matches(k, R"(UBLKCP\.S\.G)") > 0, bulk) << where;
    if (sm >= 90) {  // the arrive-on's machine-code spelling is the one chapter 03 reads on sm_90
      EXPECT_EQ(course::count_matches(k, R"(ARRIVES\.LDGSTSBAR\.64\.TRANSCNT)") > 0, arrive_on) << where;
    }
  }
}

TEST_F(HostCodegen, MachineCodeOnHopperFollowsTheModel) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  expect_machine_code_follows_the_model(sass, 90);
  // 16-byte LDGSTS and the bulk copy side by side in one program, as the legacy list expected.
  EXPECT_GE(course::count_matches(sass, R"(LDGSTS\.E\.BYPASS\.128)"), 1);
  EXPECT_GE(course::count_matches(sass, R"(LDGSTS\.E[ .])"), 1);
  EXPECT_GE(course::count_matches(sass, R"(ARRIVES\.LDGSTSBAR)"), 1);
  EXPECT_GE(course::count_matches(sass, "UBLKCP"), 1);
}

TEST_F(HostCodegen, MachineCodeOnAmpereFollowsTheModel) {
  COURSE_SASS_OR_SKIP(sass, "sm_80");
  expect_machine_code_follows_the_model(sass, 80);
  EXPECT_EQ(course::count_matches(sass, "UBLKCP"), 0) << "no bulk copy before 9.0";
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm80_MemcpyAsync : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm80_MemcpyAsync() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm80_MemcpyAsync, OneBatch) {
  Problem problem(1);
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_MemcpyAsync, ManyMoreBatchesThanResidentBlocks) {
  Problem problem(10007);  // prime: blocks do unequal numbers of batches
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_MemcpyAsync, PoisonedOutputIsFullyOverwrittenTwice) {
  Problem problem(333);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_MemcpyAsync, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm80_MemcpyAsyncLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm80_MemcpyAsyncLab() : GpuTest(lab::chapter_info().requirement) {}
};

class Sm80_MemcpyAsyncLabOffsets : public course::GpuTest {
 protected:
  Sm80_MemcpyAsyncLabOffsets() : GpuTest(lab::chapter_info().requirement) {}
};

TEST_P(Sm80_MemcpyAsyncLab, OneBatch) {
  lab::Problem problem(1);
  const course::Comparison result = lab::verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_MemcpyAsyncLab, ManyMoreBatchesThanResidentBlocks) {
  lab::Problem problem(10007);
  const course::Comparison result = lab::verify(GetParam(), problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_MemcpyAsyncLab, PoisonedOutputIsFullyOverwrittenTwice) {
  lab::Problem problem(333);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = lab::verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

TEST_P(Sm80_MemcpyAsyncLab, InputStartsWhereTheRowSays) {
  lab::Problem problem(2);
  const auto address = reinterpret_cast<std::uintptr_t>(problem.input(GetParam()));
  EXPECT_EQ(address % lab::kLineBytes, GetParam().src_offset_bytes);
  std::vector<std::uint32_t> back(problem.host_in.size());
  COURSE_CHECK(cudaMemcpy(back.data(), problem.input(GetParam()), back.size() * sizeof(std::uint32_t),
                          cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, problem.host_in) << "the row reads the input itself, wherever it starts";
}

// The shifted copy is written again when rows of different offsets alternate.
TEST_F(Sm80_MemcpyAsyncLabOffsets, AlternatingOffsetsReadTheInputEachTime) {
  lab::Problem problem(3);
  for (std::size_t offset : {std::size_t{16}, std::size_t{4}, std::size_t{64}, std::size_t{16}}) {
    const std::uint32_t* input = problem.input_at(offset);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(input) % lab::kLineBytes, offset);
    std::vector<std::uint32_t> back(problem.host_in.size());
    COURSE_CHECK(cudaMemcpy(back.data(), input, back.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    EXPECT_EQ(back, problem.host_in) << offset << " bytes past a line";
  }
  EXPECT_THROW(problem.input_at(2), std::invalid_argument);
  EXPECT_THROW(problem.input_at(lab::kLineBytes), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Lab, Sm80_MemcpyAsyncLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

class Sm80_HaloStencil : public course::GpuTest, public ::testing::WithParamInterface<halo::Variant> {
 protected:
  Sm80_HaloStencil() : GpuTest(halo::chapter_info().requirement) {}
};

class Sm80_HaloStencilBounds : public course::GpuTest {
 protected:
  Sm80_HaloStencilBounds() : GpuTest(halo::chapter_info().requirement) {}
};

TEST_P(Sm80_HaloStencil, OneTile) {
  halo::Problem problem(1);
  const course::Comparison result = halo::verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_HaloStencil, ManyMoreTilesThanResidentBlocks) {
  halo::Problem problem(100003);  // prime, and more tiles than the one-warp blocks that fit at once
  const course::Comparison result = halo::verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm80_HaloStencil, PoisonedOutputIsFullyOverwrittenTwice) {
  halo::Problem problem(333);
  for (int run = 0; run < 2; ++run) {
    const course::Comparison result = halo::verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

// __launch_bounds__ makes the driver refuse a launch of more than one warp that bypasses the
// launcher's check: the kernel never runs with lanes its copy plan cannot serve.
TEST_F(Sm80_HaloStencilBounds, ALaunchOfTwoWarpsIsRefused) {
  halo::Problem problem(4);
  for (auto kernel : {halo::stencil_sync_kernel, halo::stencil_cuda_memcpy_async_kernel}) {
    kernel<<<1, 2 * halo::kStencilThreads>>>(problem.gmem_padded.data(), problem.gmem_out.data(),
                                              problem.num_tiles);
    EXPECT_NE(cudaGetLastError(), cudaSuccess) << "a block of 64 threads was launched";
    COURSE_CHECK(cudaDeviceSynchronize());
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm80_HaloStencil, ::testing::ValuesIn(halo::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// One and two blocks for many batches (or tiles): every barrier goes through dozens of phases,
// every commit group is reused, and a block's loop runs odd and even numbers of times.
class Sm80_FewBlocks : public course::GpuTest {
 protected:
  Sm80_FewBlocks() : GpuTest(chapter_info().requirement) {}
};

using BatchKernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t);
using TileKernel = void (*)(const float*, float*, std::size_t);

TEST_F(Sm80_FewBlocks, EveryBatchKernelRunsManyBatchesPerBlock) {
  struct {
    const char* name;
    BatchKernel kernel;
    std::size_t src_offset_bytes;
  } const kernels[] = {{"cg_memcpy_async", cg_memcpy_async_kernel, 0},
                       {"cuda_memcpy_async_block", cuda_memcpy_async_block_kernel, 0},
                       {"cuda_memcpy_async_thread", cuda_memcpy_async_thread_kernel, 0},
                       {"pipeline_primitives", pipeline_primitives_kernel, 0},
                       {"misaligned_cg", lab::misaligned_cg_kernel, lab::kMisalignBytes},
                       {"misaligned_cuda", lab::misaligned_cuda_kernel, lab::kMisalignBytes},
                       {"ldgsts_16", lab::ldgsts_pipeline_kernel, 0},
                       {"ldgsts_16_offset_16", lab::ldgsts_pipeline_kernel, 16}};
  lab::Problem problem(75);
  for (const auto& k : kernels) {
    const std::uint32_t* input = problem.input_at(k.src_offset_bytes);
    for (unsigned blocks : {1u, 2u}) {
      problem.gmem_out.poison();
      k.kernel<<<blocks, kBlockThreads>>>(input, problem.gmem_out.data(), problem.num_batches);
      COURSE_CHECK_LAUNCH();
      COURSE_CHECK(cudaDeviceSynchronize());
      const course::Comparison result = problem.gmem_out.check(problem.expected, kBatchElems);
      EXPECT_TRUE(result.ok()) << k.name << ", " << blocks << " blocks: " << result.summary() << '\n' << result.first;
    }
  }
}

// The lesson's launcher's grid, read back from the device: batch_grid's blocks.
TEST_F(Sm80_FewBlocks, TheLessonLaunchesTheBatchGrid) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{10007}}) {
    EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel>, num_batches), batch_grid(num_batches, kBatchesPerBlock))
        << num_batches << " batches";
  }
}

TEST_F(Sm80_FewBlocks, EveryStencilKernelRunsManyTilesPerBlock) {
  const std::pair<const char*, TileKernel> kernels[] = {
      {"stencil_sync", halo::stencil_sync_kernel},
      {"stencil_cuda_memcpy_async", halo::stencil_cuda_memcpy_async_kernel}};
  halo::Problem problem(75);
  for (const auto& [name, kernel] : kernels) {
    for (unsigned blocks : {1u, 2u}) {
      problem.gmem_out.poison();
      kernel<<<blocks, halo::kStencilThreads>>>(problem.gmem_padded.data(), problem.gmem_out.data(), problem.num_tiles);
      COURSE_CHECK_LAUNCH();
      COURSE_CHECK(cudaDeviceSynchronize());
      const course::Comparison result = problem.gmem_out.check(problem.expected, halo::kTileElems);
      EXPECT_TRUE(result.ok()) << name << ", " << blocks << " blocks: " << result.summary() << '\n' << result.first;
    }
  }
}

}  // namespace
