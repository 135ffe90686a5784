// Tests for 01_sync_copy, lesson, lab and model: the host reference by hand, the size rule; the
// model's instructions and bytes per batch and Little's law, on the
// CPU; what each kernel of the lesson and the lab compiles to (PTX for 7.5, 8.0 and 9.0, machine
// code for 8.0 and 9.0 where cuobjdump can read it); every lesson variant and every lab row
// bit-exact on the GPU for one batch, many batches and an odd count, and with one to three blocks
// so that the register prefetch meets every remainder of its unrolled loop; the grid rule on the
// CPU, and the grids the launchers start, read back from the GPU; the committed concept figure
// against a fresh drawing.
#include "sync_copy_lab.cu"  // the lab, which brings the lesson and the model
#include "sync_copy_figures.cpp"  // the concept figure, drawn from the model

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/codegen.hpp"
#include "course/grid_probe.cuh"
#include "course/testing.hpp"

// Test names and skip lists show the variant's name instead of its bytes.
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The host reference, the size rule and the two tables ------------------------------------

TEST(HostSyncCopy, ReferenceMixesNeighboursInsideEachBatchRing) {
  std::vector<std::uint32_t> in(2 * kBatchElems);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  const std::vector<std::uint32_t> out = reference(in);
  EXPECT_EQ(out[5], 4u + 2u * 5u + 6u);
  EXPECT_EQ(out[0], (kBatchElems - 1) + 0u + 1u);  // wraps to the end of its own batch
  EXPECT_EQ(out[kBatchElems - 1], (kBatchElems - 2) + 2u * (kBatchElems - 1) + 0u);
  EXPECT_EQ(out[kBatchElems], (2 * kBatchElems - 1) + 2u * kBatchElems + (kBatchElems + 1));  // not batch 0's
}

TEST(HostSyncCopy, SizeMustBeWholeBatches) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(1000 * kBatchBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.verify_bytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.bench_bytes)) << info.program;
    EXPECT_TRUE(info.size_rule(kBatchBytes + 4)) << info.program;
    EXPECT_TRUE(info.size_rule(100)) << info.program;
    EXPECT_TRUE(info.size_rule(0)) << info.program;
  }
}

TEST(HostSyncCopy, TheLabTakesTheLessonsCommandLine) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_STREQ(lesson.program, "sync_copy");
  EXPECT_STREQ(lab.program, "sync_copy_lab");
  EXPECT_EQ(lab.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab.bench_bytes, lesson.bench_bytes);
  EXPECT_EQ(lab.requirement.major, 7);
  EXPECT_EQ(lab.requirement.minor, 5);
  ASSERT_TRUE(lab.size_rule(100));
  EXPECT_EQ(*lab.size_rule(100), *lesson.size_rule(100));
}

template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> names;
  for (const Variant& v : table) names.push_back(v.name);
  return names;
}

// ---- The grid rule ----------------------------------------------------------------------------

TEST(HostSyncCopyGrid, TheLessonTakesFourBatchesPerBlock) {
  // The rule itself: course/batch_grid.hpp, tested by HostBatchGrid; here the chapter's use of it.
  EXPECT_EQ(batch_grid((std::size_t{1} << 30) / kBatchBytes, kBatchesPerBlock), 65536u) << "1 GiB";
}

// ---- The model: instructions and bytes of one batch ------------------------------------------

TEST(HostSyncCopyModel, EveryVariantAndEveryRowHasAPlanAndEveryPlanIsMeasured) {
  const std::vector<CopyPlan> plans = copy_plans();
  std::vector<std::string> measured = names_of(kVariants);
  for (const std::string& row : names_of(lab::kVariants)) measured.push_back(row);
  for (const std::string& name : measured) EXPECT_NE(find_plan(plans, name), nullptr) << name;
  for (const CopyPlan& plan : plans) {
    EXPECT_NE(std::find(measured.begin(), measured.end(), plan.variant), measured.end()) << plan.variant;
  }
  EXPECT_EQ(find_plan(plans, "no_such_variant"), nullptr);
}

TEST(HostSyncCopyModel, TheLessonsBatch) {
  const std::vector<CopyPlan> plans = copy_plans();
  const BatchCost narrow = batch_cost(*find_plan(plans, "sync_copy"), kBatchBytes, kBlockThreads);
  EXPECT_EQ(narrow.global_loads, 1024);
  EXPECT_EQ(narrow.shared_stores, 1024);
  EXPECT_EQ(narrow.shared_loads, 3072) << "an element and two neighbours per output";
  EXPECT_EQ(narrow.global_stores, 1024);
  EXPECT_EQ(narrow.barriers, 2);
  EXPECT_EQ(narrow.bytes_requested, 4096);
  EXPECT_EQ(narrow.bytes_in_flight, 4) << "one 4-byte load, then its store, then the next load";
  const BatchCost wide = batch_cost(*find_plan(plans, "sync_copy_uint4"), kBatchBytes, kBlockThreads);
  EXPECT_EQ(wide.global_loads, 256);
  EXPECT_EQ(wide.shared_stores, 256);
  EXPECT_EQ(wide.shared_loads, 3072) << "the compute is the same";
  EXPECT_EQ(wide.bytes_requested, 4096);
  EXPECT_EQ(wide.bytes_in_flight, 16);
}

TEST(HostSyncCopyModel, EveryStagedPlanMovesTheBatchOnceThroughSharedMemory) {
  for (const CopyPlan& plan : copy_plans()) {
    if (!plan.staged) continue;
    const BatchCost c = batch_cost(plan, kBatchBytes, kBlockThreads);
    EXPECT_EQ(c.global_loads * plan.load_bytes, static_cast<int>(kBatchBytes)) << plan.variant;
    EXPECT_EQ(c.shared_stores, c.global_loads) << plan.variant << ": each load is stored once";
    EXPECT_EQ(c.bytes_requested, static_cast<int>(kBatchBytes)) << plan.variant;
    EXPECT_EQ(c.barriers, 2) << plan.variant;
  }
}

TEST(HostSyncCopyModel, WithoutStagingTheLoadsAskForTheNeighboursAgain) {
  const std::vector<CopyPlan> plans = copy_plans();
  const BatchCost direct = batch_cost(*find_plan(plans, "direct"), kBatchBytes, kBlockThreads);
  EXPECT_EQ(direct.global_loads, 3 * kBatchElems);
  EXPECT_EQ(direct.bytes_requested, 3 * static_cast<int>(kBatchBytes));
  EXPECT_EQ(direct.shared_stores + direct.shared_loads + direct.barriers, 0);
  EXPECT_EQ(direct.global_stores, kBatchElems);
  const BatchCost wide = batch_cost(*find_plan(plans, "direct_uint4"), kBatchBytes, kBlockThreads);
  EXPECT_EQ(wide.global_loads, 768) << "per thread: one uint4 and two neighbours";
  EXPECT_EQ(wide.bytes_requested, 6144);
  EXPECT_EQ(wide.global_stores, 256) << "four outputs per 16-byte store";
}

TEST(HostSyncCopyModel, LoadsFirstAndPrefetchKeepMoreBytesInFlight) {
  const std::vector<CopyPlan> plans = copy_plans();
  auto in_flight = [&](const char* name) { return batch_cost(*find_plan(plans, name), kBatchBytes, kBlockThreads).bytes_in_flight; };
  EXPECT_EQ(in_flight("sync_copy"), 4);
  EXPECT_EQ(in_flight("sync_copy_uint4"), 16);
  EXPECT_EQ(in_flight("width_16_resident"), 16) << "the grid changes nothing a thread holds";
  EXPECT_EQ(in_flight("width_4_loads_first"), 16) << "four 4-byte loads before the first store";
  EXPECT_EQ(in_flight("prefetch_regs_1"), 16);
  EXPECT_EQ(in_flight("prefetch_regs_4"), 64);
  // The lab's loads-first kernel unrolls exactly the loads the model counts.
  EXPECT_EQ(kBatchElems / kBlockThreads * 4, in_flight("width_4_loads_first"));
}

// ---- The model: Little's law ---------------------------------------------------------------------

TEST(HostLittlesLaw, BytesInFlightAreBandwidthTimesLatency) {
  EXPECT_DOUBLE_EQ(bytes_in_flight(1000, 600), 600000);  // 1 TB/s for 600 ns
  EXPECT_DOUBLE_EQ(bandwidth_gbps(600000, 600), 1000);
  EXPECT_DOUBLE_EQ(bandwidth_gbps(bytes_in_flight(1234.5, 777), 777), 1234.5);
  EXPECT_NEAR(bytes_in_flight_per_sm(3000, 600, 132), 13636.36, 0.01);
  EXPECT_DOUBLE_EQ(bytes_in_flight_per_sm(2000, 800, 1), 2 * bytes_in_flight_per_sm(2000, 400, 1));
}

TEST(HostLittlesLaw, FourBytesPerThreadAreTheLessonsLimit) {
  // Eight blocks of 256 threads with 4 bytes each: 8 KiB per SM, 132 SMs at 600 ns.
  const MachineModel h100;
  EXPECT_NEAR(bandwidth_gbps(4.0 * kBlockThreads * h100.blocks_per_sm * h100.num_sms, h100.latency_ns), 1802.24, 0.01);
}

TEST(HostLittlesLaw, ProgramsPrintTheTables) {
  std::ostringstream lesson, lab;
  chapter_info().host_model(lesson);
  lab::chapter_info().host_model(lab);
  const std::string text = lesson.str();
  EXPECT_TRUE(contains(text, "  sync_copy             1024  1024   3072  1024    2    4096 B        4 B     8.0 KiB      1802"))
      << text;
  EXPECT_TRUE(contains(text, "  sync_copy_uint4        256   256   3072  1024    2    4096 B       16 B    32.0 KiB      7209"))
      << text;
  EXPECT_TRUE(contains(text, "  read GB/s        400 ns      600 ns      800 ns     1000 ns")) << text;
  EXPECT_TRUE(contains(text, "       3000        8.9 KiB     13.3 KiB     17.8 KiB     22.2 KiB")) << text;
  EXPECT_FALSE(contains(text, "direct")) << "the lesson prints its own variants";
  const std::string rows = lab.str();
  EXPECT_TRUE(contains(rows, "  direct_uint4           768     0      0   256    0    6144 B       16 B    32.0 KiB      7209"))
      << rows;
  EXPECT_TRUE(contains(rows, "  prefetch_regs_4        256   256   3072  1024    2    4096 B       64 B   128.0 KiB     28836"))
      << rows;
  for (const Variant& v : lab::kVariants) EXPECT_TRUE(contains(rows, std::string("  ") + v.name + " ")) << v.name;
}

// ---- The concept figure and the program that draws it -----------------------------------------

static_assert(figure::kBatch == kBatchBytes && figure::kThreads == kBlockThreads,
              "the figure draws the lesson's batch and block");

TEST(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, DrawsTheModelsNumbers) {
  const std::string svg = copy_paths_svg();
  EXPECT_TRUE(contains(svg, "viewBox=\"0 0 720 ")) << "scales to its column";
  EXPECT_TRUE(contains(svg, "width=\"100%\"")) << "no fixed width";
  EXPECT_TRUE(contains(svg, "1024 LDG + 1024 STS, 2 syncs")) << svg;
  EXPECT_TRUE(contains(svg, "256 LDG + 256 STS, 2 syncs")) << svg;
  EXPECT_TRUE(contains(svg, "16 B in flight a thread, 32 KiB an SM")) << svg;
  EXPECT_TRUE(contains(svg, "reads 1802 GB/s at most")) << svg;
  EXPECT_TRUE(contains(svg, "256 LDGSTS of 16 B, 0 STS")) << svg;
  EXPECT_TRUE(contains(svg, "needs 900 KB in flight")) << svg;
  EXPECT_TRUE(contains(svg, "6.7 KiB on each of 132 SMs")) << svg;
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ----------

class HostCodegen : public ::testing::Test {
 public:  // the helpers below serve the free functions of these tests too
  static void SetUpTestSuite() {
    for (const char* arch : kArchs) {
      lesson_[arch] = course::chapter_ptx("sync_copy", arch);
      lab_[arch] = course::chapter_ptx("sync_copy_lab", arch);
    }
  }
  // A kernel of the lesson (by its plain name) or of the lab (namespace lab; `args` are the
  // mangled template arguments, "" for none).
  static std::string lesson_kernel(const std::string& arch, const std::string& name) {
    const std::string body = course::ptx_kernel_body(lesson_.at(arch), std::to_string(name.size()) + name + "PKj");
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in sync_copy.compute_" << arch << ".ptx";
    return body;
  }
  static std::string lab_kernel(const std::string& arch, const std::string& name, const std::string& args = "") {
    const std::string body = course::ptx_kernel_body(lab_.at(arch), lab_part(name, args));
    EXPECT_FALSE(body.empty()) << "no kernel " << lab_part(name, args) << " in sync_copy_lab.compute_" << arch << ".ptx";
    return body;
  }
  static std::string lab_part(const std::string& name, const std::string& args) {
    return "3lab" + std::to_string(name.size()) + name + (args.empty() ? "E" : "I" + args + "EE");
  }
  static constexpr const char* kArchs[] = {"75", "80", "90"};
  static inline std::map<std::string, std::string> lesson_, lab_;
};

const char* const kNarrow = "sync_copy_kernel";
const char* const kWide = "sync_copy_uint4_kernel";
const char* const kLoadsFirst = "loads_first_kernel";
const char* const kDirect = "direct_kernel";
const char* const kDirectWide = "direct_uint4_kernel";
const char* const kPrefetch = "prefetch_regs_kernel";
std::string ahead_arg(int batches) { return "Li" + std::to_string(batches) + "E"; }
const int kAheads[] = {1, 4};

const std::string kBarrier = R"(\bbar(rier)?\.sync\b)";

// Every kernel that stages the batch, lesson and lab, on every architecture.
std::vector<std::pair<std::string, std::string>> staged_kernels(const std::string& arch) {
  std::vector<std::pair<std::string, std::string>> kernels = {
      {kNarrow, HostCodegen::lesson_kernel(arch, kNarrow)},
      {kWide, HostCodegen::lesson_kernel(arch, kWide)},
      {kLoadsFirst, HostCodegen::lab_kernel(arch, kLoadsFirst)}};
  for (int d : kAheads) {
    kernels.push_back({"prefetch " + std::to_string(d), HostCodegen::lab_kernel(arch, kPrefetch, ahead_arg(d))});
  }
  return kernels;
}

// The lesson's point: a global load into a register and a shared store from it, then the block
// barriers, and none of the asynchronous copies that 8.0 and 9.0 could have used.
TEST_F(HostCodegen, EveryStagedKernelLoadsGlobalStoresSharedAndSyncsTwice) {
  for (const char* arch : kArchs) {
    for (const auto& [name, k] : staged_kernels(arch)) {
      EXPECT_GE(course::count_matches(k, R"(ld\.global\.nc\.)"), 1) << name << ", compute_" << arch;
      EXPECT_GE(course::count_matches(k, R"(st\.shared\.)"), 1) << name << ", compute_" << arch;
      EXPECT_GE(course::count_matches(k, R"(ld\.shared\.u32)"), 3) << name << ": the compute reads three neighbours";
      EXPECT_GE(course::count_matches(k, kBarrier), 2) << name << ", compute_" << arch;
      EXPECT_EQ(course::count_matches(k, R"(cp\.async)"), 0) << name << ", compute_" << arch;
    }
  }
}

// Nothing anywhere in either program is an asynchronous copy where the architecture has them.
TEST_F(HostCodegen, NoAsynchronousCopyOnAmpereOrHopper) {
  for (const char* arch : {"80", "90"}) {
    EXPECT_GT(lesson_.at(arch).size(), 1000u) << "sync_copy.compute_" << arch << ".ptx is missing";
    EXPECT_GT(lab_.at(arch).size(), 1000u) << "sync_copy_lab.compute_" << arch << ".ptx is missing";
    for (const std::string* ptx : {&lesson_.at(arch), &lab_.at(arch)}) {
      EXPECT_EQ(course::count_matches(*ptx, R"(cp\.async)"), 0) << "compute_" << arch;
      EXPECT_EQ(course::count_matches(*ptx, R"(mbarrier)"), 0) << "compute_" << arch;
    }
  }
}

TEST_F(HostCodegen, EachCopyLoadsAndStoresAtItsWidth) {
  const std::pair<std::string, std::string> widths[] = {
      {"u32", lesson_kernel("90", kNarrow)}, {"v4.u32", lesson_kernel("90", kWide)}};
  for (const auto& [suffix, k] : widths) {
    EXPECT_EQ(course::count_matches(k, R"(ld\.global\.nc\.)" + suffix + R"(\s)"), 1) << suffix;
    EXPECT_EQ(course::count_matches(k, R"(st\.shared\.)" + suffix + R"(\s)"), 1) << suffix;
    EXPECT_EQ(course::count_matches(k, R"(ld\.global)"), 1) << suffix << ": one load in the copy loop";
  }
}

// The global loads (L) and shared stores (S) of a kernel, in program order, up to its first
// block barrier: the copy of the first batch.
std::string copy_order(const std::string& body) {
  std::string order;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (course::count_matches(line, kBarrier) > 0) break;
    if (contains(line, "ld.global")) order += 'L';
    if (contains(line, "st.shared")) order += 'S';
  }
  return order;
}

// The lesson's loop issues one load, then its store: one load in flight per thread (in the PTX;
// ptxas may still unroll the loop). The lab's loads-first kernel writes the four loads first.
TEST_F(HostCodegen, TheLessonStoresEachLoadBeforeTheNextLoadsFirstDoesNot) {
  for (const char* arch : kArchs) {
    EXPECT_EQ(copy_order(lesson_kernel(arch, kNarrow)), "LS") << "compute_" << arch;
    EXPECT_EQ(copy_order(lesson_kernel(arch, kWide)), "LS") << "compute_" << arch;
    EXPECT_EQ(copy_order(lab_kernel(arch, kLoadsFirst)), "LLLLSSSS") << "compute_" << arch;
  }
}

TEST_F(HostCodegen, TheDirectKernelsUseNoSharedMemoryAndNoBarrier) {
  for (const char* arch : kArchs) {
    for (const char* name : {kDirect, kDirectWide}) {
      const std::string k = lab_kernel(arch, name);
      EXPECT_EQ(course::count_matches(k, R"(\.shared)"), 0) << name << ", compute_" << arch;
      EXPECT_EQ(course::count_matches(k, kBarrier), 0) << name << ", compute_" << arch;
    }
    const std::string narrow = lab_kernel(arch, kDirect), wide = lab_kernel(arch, kDirectWide);
    EXPECT_EQ(course::count_matches(narrow, R"(ld\.global\.nc\.u32)"), 3) << "left, centre, right";
    EXPECT_EQ(course::count_matches(wide, R"(ld\.global\.nc\.v4\.u32)"), 1) << "four centres";
    EXPECT_EQ(course::count_matches(wide, R"(ld\.global\.nc\.u32)"), 2) << "the two outside neighbours";
    EXPECT_EQ(course::count_matches(wide, R"(st\.global\.v4\.u32)"), 1) << "four outputs at once";
  }
}

// After each barrier that opens a compute, which comes first: a global load or a shared load?
// Counts the barriers after which a global load is issued before the compute reads shared memory.
int loads_issued_before_compute(const std::string& body) {
  int count = 0;
  bool after_barrier = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (course::count_matches(line, kBarrier) > 0) {
      after_barrier = true;
    } else if (after_barrier && contains(line, "ld.global")) {
      ++count;
      after_barrier = false;
    } else if (after_barrier && contains(line, "ld.shared")) {
      after_barrier = false;
    }
  }
  return count;
}

// The register prefetch: kAhead loads prime the registers, and each of the kAhead unrolled steps
// issues the load of a later batch after the barrier and before the compute. The lesson loads
// the next batch only after the compute.
TEST_F(HostCodegen, ThePrefetchIssuesTheNextLoadBeforeTheCompute) {
  for (const char* arch : kArchs) {
    for (int d : kAheads) {
      const std::string k = lab_kernel(arch, kPrefetch, ahead_arg(d));
      EXPECT_EQ(loads_issued_before_compute(k), d) << d << " ahead, compute_" << arch;
      EXPECT_EQ(course::count_matches(k, R"(ld\.global\.nc\.v4\.u32)"), 2 * d) << d << " ahead: prime and refill";
      EXPECT_EQ(course::count_matches(k, R"(ld\.local|st\.local)"), 0) << d << " ahead: ahead[] lives in registers";
    }
    EXPECT_EQ(loads_issued_before_compute(lesson_kernel(arch, kNarrow)), 0) << "compute_" << arch;
    EXPECT_EQ(loads_issued_before_compute(lesson_kernel(arch, kWide)), 0) << "compute_" << arch;
  }
}

// The machine code (this executable's sm_80 or sm_90 code; skipped where cuobjdump or that code
// is missing): LDG loads into registers, STS stores them to shared memory, BAR.SYNC is the block
// barrier; LDGSTS, the asynchronous copy both architectures have, appears nowhere. Wide copies
// are LDG.E.64 / LDG.E.128 and STS.64 / STS.128; .CONSTANT is the read-only path of __restrict__.
void expect_machine_code(const std::string& sass, const std::string& sm) {
  EXPECT_EQ(course::count_matches(sass, "LDGSTS"), 0) << sm;
  const auto kernel = [&](const std::string& part) {
    const std::string body = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in the " << sm << " machine code";
    return body;
  };
  const std::string lesson_narrow = "16sync_copy_kernelPKj", lesson_wide = "22sync_copy_uint4_kernelPKj";
  std::vector<std::string> staged = {lesson_narrow, lesson_wide, HostCodegen::lab_part(kLoadsFirst, "")};
  for (int d : kAheads) staged.push_back(HostCodegen::lab_part(kPrefetch, ahead_arg(d)));
  for (const std::string& part : staged) {
    const std::string k = kernel(part);
    EXPECT_GE(course::count_matches(k, R"(LDG\.E)"), 1) << part << ", " << sm;
    EXPECT_GE(course::count_matches(k, R"(\bSTS\b)"), 1) << part << ", " << sm;
    EXPECT_GE(course::count_matches(k, R"(\bLDS\b)"), 1) << part << ", " << sm;
    EXPECT_GE(course::count_matches(k, R"(BAR\.SYNC)"), 1) << part << ", " << sm;
  }
  std::vector<std::string> wide = {lesson_wide};
  for (int d : kAheads) wide.push_back(HostCodegen::lab_part(kPrefetch, ahead_arg(d)));
  for (const std::string& part : wide) {
    EXPECT_GE(course::count_matches(kernel(part), R"(LDG\.E\.128)"), 1) << part << ", " << sm;
    EXPECT_GE(course::count_matches(kernel(part), R"(STS\.128)"), 1) << part << ", " << sm;
  }
  for (const char* name : {kDirect, kDirectWide}) {
    const std::string k = kernel(HostCodegen::lab_part(name, ""));
    EXPECT_GE(course::count_matches(k, R"(LDG\.E)"), 1) << name << ", " << sm;
    EXPECT_EQ(course::count_matches(k, R"(\b(STS|LDS|BAR)\b)"), 0) << name << ", " << sm;
  }
}

TEST_F(HostCodegen, MachineCodeOnAmpereIsLdgThenSts) {
  COURSE_SASS_OR_SKIP(sass, "sm_80");
  expect_machine_code(sass, "sm_80");
}

TEST_F(HostCodegen, MachineCodeOnHopperIsLdgThenSts) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  expect_machine_code(sass, "sm_90");
}

// ---- On the GPU --------------------------------------------------------------------------

class Sm75_SyncCopy : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm75_SyncCopy() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm75_SyncCopy, OneBatch) {
  Problem problem(1);
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm75_SyncCopy, ManyMoreBatchesThanResidentBlocks) {
  Problem problem(10007);  // prime: blocks do unequal numbers of batches
  const course::Comparison result = verify(GetParam().launch, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm75_SyncCopy, PoisonedOutputIsFullyOverwrittenThreeTimes) {
  Problem problem(777);
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm75_SyncCopy, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Lab, Sm75_SyncCopy, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// One, two and three blocks over 2 to 11 batches: each block's count of batches takes every
// remainder modulo 1, 2 and 4, so the register prefetch leaves its unrolled loop at every step
// and its prime finds fewer batches than it could hold.
using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t);
class Sm75_SyncCopyFewBlocks : public course::GpuTest {
 protected:
  Sm75_SyncCopyFewBlocks() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm75_SyncCopyFewBlocks, EveryKernelForEveryRemainder) {
  const std::pair<const char*, Kernel> kernels[] = {
      {"sync_copy", sync_copy_kernel},
      {"sync_copy_uint4", sync_copy_uint4_kernel},
      {"width_4_loads_first", lab::loads_first_kernel},
      {"direct", lab::direct_kernel},
      {"direct_uint4", lab::direct_uint4_kernel},
      {"width_16_resident", sync_copy_uint4_kernel},
      {"prefetch_regs_1", lab::prefetch_regs_kernel<1>},
      {"prefetch_regs_4", lab::prefetch_regs_kernel<4>}};
  ASSERT_EQ(std::size(kernels), std::size(kVariants) + std::size(lab::kVariants));
  for (std::size_t num_batches = 2; num_batches <= 11; ++num_batches) {
    Problem problem(num_batches);
    for (const auto& [name, kernel] : kernels) {
      for (unsigned blocks : {1u, 2u, 3u}) {
        problem.gmem_out.poison();
        kernel<<<blocks, kBlockThreads>>>(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
        COURSE_CHECK_LAUNCH();
        COURSE_CHECK(cudaDeviceSynchronize());
        const course::Comparison result = problem.gmem_out.check(problem.expected, kBatchElems);
        EXPECT_TRUE(result.ok()) << name << ", " << num_batches << " batches, " << blocks
                                 << " blocks: " << result.summary() << '\n'
                                 << result.first;
      }
    }
  }
}

// The launchers' grids, read back from the device: the lesson's has batch_grid's blocks, the
// lab's resident one every SM's resident blocks (or one per batch when there are fewer).
TEST_F(Sm75_SyncCopyFewBlocks, TheLessonLaunchesTheBatchGridTheLabsResidentRowsFillTheGpu) {
  for (std::size_t num_batches : {std::size_t{1}, std::size_t{5}, std::size_t{10007}}) {
    EXPECT_EQ(course::launched_grid(&launch_batch_grid<course::grid_probe_kernel>, num_batches), batch_grid(num_batches, kBatchesPerBlock))
        << num_batches << " batches";
  }
  int blocks_per_sm = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, course::grid_probe_kernel, kBlockThreads, 0));
  const std::size_t resident = static_cast<std::size_t>(device().sm_count) * blocks_per_sm;
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 10 * resident), resident);
  EXPECT_EQ(course::launched_grid(&lab::launch_resident<course::grid_probe_kernel>, 3), 3u);
}

}  // namespace
