// Exercise 10.3 (CPU): choose the cluster shape from a measured table.
//
// The lesson's ring runs clusters of 8 blocks with 2 buffers (stages) per block; the lab measured
// other shapes (the results tables of README.md and REFERENCE.md). A row of such a table is a
// shape, blocks per cluster and stages, with the speed it was measured at (GB/s, or x cudaMemcpy
// of the same run: larger is faster). No shape appears twice in a table.
// On a given GPU a shape is legal when
//   - its cluster has 1 to max_cluster_blocks blocks (what cudaOccupancyMaxPotentialClusterSize
//     reports for the kernel: 8 portably; 16 on an H100 once non-portable sizes are allowed), and
//   - its block's shared memory, ring_smem_bytes(stages), is at most smem_per_block_bytes.
// The row to run is not simply the fastest. Measurements vary by a few per cent from run to run;
// a smaller cluster is easier to place (all its blocks must be resident at once in one GPU
// processing cluster), and fewer stages leave shared memory to other blocks. So: the best speed
// is the fastest legal row's; a legal row at least (1 - tolerance) x that speed is good enough;
// among the good-enough rows pick the smallest cluster, and among those the fewest stages.
//
// Your task: shape_is_legal, and pick_shape, which returns the index of the row to run, or -1
// when no row of the table is legal. The test grades both on the chapter's own measurements and
// on made-up tables and devices.
// Check: scripts/exercise.py cluster_shape
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stas_cluster_model.hpp"  // kMessageBytes

struct MeasuredShape {
  int cluster_blocks;  // blocks per cluster
  int stages;          // buffers per block
  double speed;        // as measured: larger is faster
};

struct DeviceLimits {
  int max_cluster_blocks;            // the largest cluster the kernel may be launched with
  std::size_t smem_per_block_bytes;  // the most shared memory one block may hold
};

// The shared memory one block of the lesson's ring holds with `stages` buffers: per buffer an
// 8 KiB message and its two mbarriers, filled and ready (stas_ring in stas_cluster.cu).
constexpr std::size_t ring_smem_bytes(int stages) {
  return static_cast<std::size_t>(stages) * (kMessageBytes + 2 * sizeof(std::uint64_t));
}

inline bool shape_is_legal(const MeasuredShape& shape, const DeviceLimits& device) {
  return shape.cluster_blocks >= 1 && shape.cluster_blocks <= device.max_cluster_blocks &&
         ring_smem_bytes(shape.stages) <= device.smem_per_block_bytes;
}

// `tolerance` is a fraction: 0.05 means within 5 % of the best.
inline int pick_shape(const std::vector<MeasuredShape>& rows, const DeviceLimits& device, double tolerance) {
  // The best speed among the legal rows only: an illegal row, however fast, cannot run.
  double best = 0;
  bool any_legal = false;
  for (const MeasuredShape& row : rows) {
    if (!shape_is_legal(row, device)) continue;
    if (!any_legal || row.speed > best) best = row.speed;
    any_legal = true;
  }
  if (!any_legal) return -1;
  const double good_enough = best * (1.0 - tolerance);
  int pick = -1;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const MeasuredShape& row = rows[i];
    if (!shape_is_legal(row, device) || row.speed < good_enough) continue;
    const bool smaller = pick < 0 || row.cluster_blocks < rows[pick].cluster_blocks ||
                         (row.cluster_blocks == rows[pick].cluster_blocks && row.stages < rows[pick].stages);
    if (smaller) pick = i;
  }
  return pick;  // the fastest legal row is good enough, so some row is picked
}
