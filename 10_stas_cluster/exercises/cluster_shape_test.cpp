// Grades exercise 10.3. shape_is_legal is asked about every shape of clusters of 1 to 17 blocks
// with 1 to 7 stages on several devices, the limits included. pick_shape is asked about the
// chapter's own measurements (the H100 rows of the results tables, the H200 rows of "Which variant
// is faster") and about made-up tables that catch the usual mistakes: the fastest row illegal, the
// best taken over illegal rows, the biggest cluster not the best, ties, a row exactly at the
// tolerance, every order of one table, no legal row at all. Each pick is judged by the rules of
// the starter's header, and a wrong one is named with the rule it breaks.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Table = std::vector<MeasuredShape>;

constexpr std::size_t kStaticSmem = 48 * 1024;      // what a block may hold in static shared memory
constexpr std::size_t kOptInSmem = 227 * 1024;      // with the dynamic opt-in on compute capability 9.0
constexpr DeviceLimits kPortable{8, kStaticSmem};   // the lesson's kernel, portable cluster sizes
constexpr DeviceLimits kH100NonPortable{16, kStaticSmem};

std::string shape_text(const MeasuredShape& s) {
  std::ostringstream text;
  text << "clusters of " << s.cluster_blocks << (s.cluster_blocks == 1 ? " block" : " blocks") << " with "
       << s.stages << (s.stages == 1 ? " stage" : " stages");
  return text.str();
}

// "within 5 % of the best", or "as fast as the best" for a tolerance of 0.
std::string within(double tolerance) {
  if (tolerance == 0) return "as fast as the best";
  std::ostringstream text;
  text << "within " << tolerance * 100 << " % of the best";
  return text.str();
}

// "tolerance 5 %", for the line's context.
std::string tolerance_text(double tolerance) {
  std::ostringstream text;
  text << "tolerance " << tolerance * 100 << " %";
  return text.str();
}

// Why a shape is not legal on `device` ("" when it is), by the header's rules.
std::string illegal_because(const MeasuredShape& s, const DeviceLimits& device) {
  std::ostringstream why;
  if (s.cluster_blocks < 1 || s.cluster_blocks > device.max_cluster_blocks) {
    why << "the device allows 1 to " << device.max_cluster_blocks << " blocks per cluster";
  } else if (ring_smem_bytes(s.stages) > device.smem_per_block_bytes) {
    why << "its " << ring_smem_bytes(s.stages) << " bytes of shared memory per block are more than the device's "
        << device.smem_per_block_bytes;
  }
  return why.str();
}

bool legal(const MeasuredShape& s, const DeviceLimits& device) { return illegal_because(s, device).empty(); }

// "" when pick_shape's answer keeps every rule; else what is wrong with it, one sentence.
std::string judge_pick(const Table& rows, const DeviceLimits& device, double tolerance) {
  const int pick = pick_shape(rows, device, tolerance);
  const auto num_rows = static_cast<int>(rows.size());
  const auto num_legal = std::count_if(rows.begin(), rows.end(), [&](const MeasuredShape& r) { return legal(r, device); });
  std::ostringstream said;
  if (pick == -1) {
    if (num_legal == 0) return "";
    said << "you pick no row, where " << num_legal << " of the table's " << num_rows
         << " rows are legal on this device";
    return said.str();
  }
  if (pick < 0 || pick >= num_rows) {
    said << "you pick row " << pick << " of a table of " << num_rows << (num_rows == 1 ? " row" : " rows");
    return said.str();
  }
  const MeasuredShape& chosen = rows[pick];
  said << "you pick " << shape_text(chosen) << " (measured " << chosen.speed << "), where ";
  if (const std::string why = illegal_because(chosen, device); !why.empty()) return said.str() + why;
  double best = chosen.speed;
  for (const MeasuredShape& r : rows) {
    if (legal(r, device)) best = std::max(best, r.speed);
  }
  const double good_enough = best * (1.0 - tolerance);
  if (chosen.speed < good_enough) {
    said << "the fastest legal row runs at " << best << ": yours is not " << within(tolerance);
    return said.str();
  }
  for (const MeasuredShape& r : rows) {
    if (!legal(r, device) || r.speed < good_enough) continue;
    if (r.cluster_blocks < chosen.cluster_blocks) {
      said << "a legal row with a smaller cluster is also " << within(tolerance);
      return said.str();
    }
    if (r.cluster_blocks == chosen.cluster_blocks && r.stages < chosen.stages) {
      said << "a legal row with the same cluster and fewer stages is also " << within(tolerance);
      return said.str();
    }
  }
  return "";
}

// Judges the pick for each tolerance; one failure per table is enough to read.
void expect_right_picks(const char* table_name, const Table& rows, const DeviceLimits& device,
                        std::initializer_list<double> tolerances) {
  for (double tolerance : tolerances) {
    const std::string problem = judge_pick(rows, device, tolerance);
    if (problem.empty()) continue;
    ADD_FAILURE() << table_name << " on a device of at most " << device.max_cluster_blocks
                  << " blocks per cluster and " << device.smem_per_block_bytes
                  << " bytes of shared memory per block, " << tolerance_text(tolerance) << ": " << problem;
    return;
  }
}

TEST(HostExerciseClusterShape, LegalShapesFitTheClusterAndTheSharedMemory) {
  const DeviceLimits devices[] = {kPortable,
                                  kH100NonPortable,
                                  {4, kOptInSmem},
                                  {1, kStaticSmem},
                                  {2, ring_smem_bytes(3)},       // exactly three stages' worth
                                  {16, ring_smem_bytes(5) - 1}};  // one byte short of five
  for (const DeviceLimits& device : devices) {
    for (int blocks = 1; blocks <= 17; ++blocks) {
      for (int stages = 1; stages <= 7; ++stages) {
        const MeasuredShape shape{blocks, stages, 1.0};
        const std::string why = illegal_because(shape, device);
        const bool said = shape_is_legal(shape, device);
        if (said == why.empty()) continue;
        std::ostringstream where;
        where << "a device of at most " << device.max_cluster_blocks << " blocks per cluster and " << device.smem_per_block_bytes
              << " bytes of shared memory per block: you call " << shape_text(shape);
        if (said) {
          FAIL() << where.str() << " legal, where " << why;
        } else {
          FAIL() << where.str() << " illegal, where its cluster is within the device's " << device.max_cluster_blocks
                 << " blocks and its " << ring_smem_bytes(stages) << " bytes of shared memory per block fit the "
                 << device.smem_per_block_bytes << " the device allows";
        }
      }
    }
  }
}

TEST(HostExerciseClusterShape, TheChaptersH100Rows) {
  // The H100 rows of the results tables: the lesson's stas_ring and stas_ring_1stage (clusters of
  // 8), the lab's stas_ring_s1_c2 and stas_ring_s2_c2, in x cudaMemcpy.
  const Table rows = {{8, 2, 1.20}, {8, 1, 0.96}, {2, 1, 1.09}, {2, 2, 1.22}};
  expect_right_picks("the chapter's H100 table", rows, kPortable, {0.0, 0.05, 0.15, 0.25, 0.5});
  expect_right_picks("the chapter's H100 table", rows, kH100NonPortable, {0.0, 0.05, 0.15});
}

TEST(HostExerciseClusterShape, TheChaptersH200Rows) {
  // "Which variant is faster": the two-buffer ring, the one-buffer ring and the two-buffer ring
  // in clusters of 2 on the H200, in GB/s.
  const Table rows = {{8, 2, 3783}, {8, 1, 2987}, {2, 2, 3986}};
  expect_right_picks("the chapter's H200 table", rows, kPortable, {0.0, 0.05, 0.3});
}

TEST(HostExerciseClusterShape, TheFastestRowIsNotLegal) {
  // Clusters of 16 on a device that allows 8; six stages, 96 bytes more than 48 KiB.
  const Table rows = {{16, 2, 1.40}, {8, 6, 1.35}, {8, 2, 1.20}, {4, 2, 1.10}, {2, 1, 0.90}};
  expect_right_picks("a table whose two fastest rows cannot run", rows, kPortable, {0.0, 0.05, 0.2});
}

TEST(HostExerciseClusterShape, TheBestIsTakenOverLegalRowsOnly) {
  // Against the illegal 2.0 every legal row is far more than 5 % slower; against the best legal
  // row, 1.0, the smaller cluster's 0.97 is within 5 %.
  const Table rows = {{16, 2, 2.00}, {8, 2, 1.00}, {2, 2, 0.97}, {1, 2, 0.50}};
  expect_right_picks("a table with a very fast illegal row", rows, kPortable, {0.05, 0.0});
}

TEST(HostExerciseClusterShape, TheBiggestClusterIsNotTheBest) {
  const Table rows = {{16, 2, 0.80}, {8, 2, 0.95}, {4, 2, 1.10}, {2, 2, 0.90}, {1, 2, 0.70}};
  expect_right_picks("a table whose best cluster is in the middle", rows, kH100NonPortable, {0.0, 0.05, 0.2, 0.4});
}

TEST(HostExerciseClusterShape, TiesGoToTheSmallerClusterThenToFewerStages) {
  const Table same_speed = {{8, 2, 1.00}, {4, 2, 1.00}, {4, 1, 0.60}};
  expect_right_picks("two clusters measured at the same speed", same_speed, kPortable, {0.0});
  const Table same_cluster = {{4, 3, 1.00}, {4, 2, 1.00}, {8, 1, 0.99}};
  expect_right_picks("one cluster with two stage counts at the same speed", same_cluster, kPortable, {0.0, 0.05});
  const Table nearly = {{4, 4, 1.00}, {4, 3, 0.99}, {4, 2, 0.98}, {4, 1, 0.70}};
  expect_right_picks("one cluster with stages within a few per cent", nearly, kPortable, {0.0, 0.015, 0.05});
}

TEST(HostExerciseClusterShape, ARowExactlyAtTheToleranceIsGoodEnough) {
  // 0.75 is exactly 1 - 0.25 of the best, in binary too.
  const Table rows = {{8, 2, 1.00}, {4, 2, 0.875}, {1, 2, 0.75}};
  expect_right_picks("a row exactly 25 % below the best", rows, kPortable, {0.25});
}

// An order of shapes, to walk through every order of a table.
bool shape_before(const MeasuredShape& a, const MeasuredShape& b) {
  return a.cluster_blocks != b.cluster_blocks ? a.cluster_blocks < b.cluster_blocks : a.stages < b.stages;
}

TEST(HostExerciseClusterShape, TheTablesOrderDoesNotMatter) {
  Table rows = {{2, 2, 1.00}, {2, 1, 0.98}, {8, 2, 1.01}, {4, 1, 0.99}, {16, 1, 1.20}};
  std::sort(rows.begin(), rows.end(), shape_before);
  int order = 0;
  do {
    std::ostringstream name;
    name << "one table in order " << ++order << " of 120 (" << shape_text(rows[0]) << " first)";
    for (double tolerance : {0.0, 0.015, 0.05}) {
      const std::string problem = judge_pick(rows, kPortable, tolerance);
      if (!problem.empty()) FAIL() << name.str() << ", " << tolerance_text(tolerance) << ": " << problem;
    }
  } while (std::next_permutation(rows.begin(), rows.end(), shape_before));
}

TEST(HostExerciseClusterShape, NoLegalRowPicksNone) {
  expect_right_picks("a table of shapes too large for the device", {{16, 2, 1.0}, {8, 6, 1.1}, {2, 9, 0.9}},
                     kPortable, {0.0, 0.5});
  expect_right_picks("an empty table", {}, kPortable, {0.05});
  expect_right_picks("a table of one legal row", {{2, 2, 1.0}}, kPortable, {0.0});
}

}  // namespace
