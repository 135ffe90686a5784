/// @file
/// @brief 10_stas_cluster: launching clusters, with the size fixed by the kernel
/// (__cluster_dims__) or chosen at run time (cudaLaunchKernelEx with a cluster dimension), and
/// asking the runtime how large a cluster may be and how many fit at once.
/// Included by the lesson (stas_cluster.cu), whose kernels and RingShape it launches.
/// Runtime API: https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
#pragma once

#include <cstdint>
#include <stdexcept>

#include "course/check.hpp"
#include "stas_cluster_model.hpp"  // RingShape, kClusterBlocks, kThreads

/// [launch_dims]
template <auto kKernel>
void launch_cluster_dims(const RingShape& shape, std::uint32_t* gmem_out) {
  if (shape.cluster_blocks != kClusterBlocks)
    throw std::invalid_argument("this kernel's cluster size is fixed at 8");
  kKernel<<<shape.num_blocks(), kThreads>>>(
      gmem_out, shape.num_iterations);  // the grid counts blocks, not clusters
  COURSE_CHECK_LAUNCH();
}
/// [launch_dims]

/// [launch_ex]
// The launch attribute that groups the grid into clusters of `blocks` blocks along x.
inline cudaLaunchAttribute cluster_dimension(unsigned blocks) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = blocks;  // gridDim.x must be a multiple of it
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

template <auto kKernel>
void launch_ex(const RingShape& shape, std::uint32_t* gmem_out) {
  // More than the portable 8 blocks per cluster needs the kernel's permission.
  if (shape.cluster_blocks > kClusterBlocks) {
    COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  cudaLaunchAttribute attribute = cluster_dimension(shape.cluster_blocks);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(shape.num_blocks());
  config.blockDim = dim3(kThreads);
  config.attrs = &attribute;
  config.numAttrs = 1;
  COURSE_CHECK(cudaLaunchKernelEx(&config, kKernel, gmem_out, shape.num_iterations));
}
/// [launch_ex]

/// [queries]
struct ClusterLimits {
  int max_portable = 0;       // largest cluster of this kernel without special permission
  int max_nonportable = 0;    // with cudaFuncAttributeNonPortableClusterSizeAllowed
  int resident_clusters = 0;  // clusters of kClusterBlocks that fit on the GPU at once
};

using RingKernel = void (*)(std::uint32_t* gmem_out, std::uint32_t num_iterations);

// A kernel without a compile-time cluster size: how large its clusters may be, how many fit.
inline ClusterLimits query_cluster_limits(RingKernel kernel) {
  ClusterLimits limits;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  // The permission is an attribute of the kernel that stays set: ask without it first, and put it
  // back.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 0));
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_portable, kernel, &config));
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&limits.max_nonportable, kernel, &config));
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 0));
  cudaLaunchAttribute attribute = cluster_dimension(kClusterBlocks);
  config.attrs = &attribute;
  config.numAttrs = 1;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&limits.resident_clusters, kernel, &config));
  if (limits.resident_clusters < 1)
    throw std::runtime_error("no cluster of 8 blocks fits on this GPU");
  return limits;
}
/// [queries]
