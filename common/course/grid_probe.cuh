/// @file
/// @brief The grid a launcher chose, read back from the device (tests of chapters 01-05).
///
/// The lessons of 01-05 launch one block per few batches and their labs a resident grid; the
/// tests check both by handing the launcher a kernel that only records `gridDim.x`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "course/buffer.hpp"
#include "course/check.hpp"

namespace course {

/// A kernel with the batch kernels' signature (input, output, number of batches) that writes
/// its grid size to `gmem_out[0]` and touches nothing else.
static __global__ void grid_probe_kernel(const std::uint32_t*, std::uint32_t* gmem_out, std::size_t) {
  if (blockIdx.x == 0 && threadIdx.x == 0) gmem_out[0] = gridDim.x;
}

/// Calls `launch(nullptr, out, args...)` (a launcher instantiated with grid_probe_kernel) and
/// returns the number of blocks its grid had.
template <typename Launch, typename... Args>
std::uint32_t launched_grid(Launch launch, Args... args) {
  DeviceBuffer<std::uint32_t> gmem_grid(1);
  launch(nullptr, gmem_grid.data(), args...);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::uint32_t grid = 0;
  COURSE_CHECK(cudaMemcpy(&grid, gmem_grid.data(), sizeof grid, cudaMemcpyDeviceToHost));
  return grid;
}

}  // namespace course
