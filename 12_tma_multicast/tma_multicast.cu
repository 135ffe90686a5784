// 12_tma_multicast: one TMA load lands in the shared memory of several blocks of a cluster.
//
// What you learn: cp.async.bulk.tensor with .multicast::cluster and a 16-bit ctaMask, in a tiled
// matrix product whose cluster rows share A tiles and columns B tiles (one slice per block); the
// stage counts when other blocks write into yours; why no block exits early. New since 10: TMA
// loads into several blocks at once (07's tensor copies); remote arrivals release stages.
// Hardware: compute capability 9.0 exactly, built for sm_90a; elsewhere it reports skipped.
// Run: build/12_tma_multicast/tma_multicast [--bench] [--variant=NAME] [--size=BYTES_OF_C]
// Guide (TMA, clusters), API (cuda::ptx::cp_async_bulk_tensor, ctaMask), PTX cp.async.bulk.tensor:
//   https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//   https://docs.nvidia.com/cuda/cuda-programming-guide/01-introduction/programming-model.html
//   https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk_tensor.html
//   https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cooperative_groups.h>
#include <cuda.h>  // CUtensorMap (types only: the driver library is never linked)
#include <cuda/ptx>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"  // {stage, phase} of a ring: taught in chapter 03
#include "course/tensor_map.hpp"    // TensorMapRequest, encode_tiled(): taught in chapter 07
#include "course/wait.cuh"
#include "tma_multicast_model.hpp"  // the problem; tiles, slices, masks, counts, ClusterPlan

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int kStages = 4;                             // k-tiles in flight per block
constexpr int kProducerWarp = kConsumerWarps;          // the last warp issues the loads
constexpr int kThreads = (kConsumerWarps + 1) * 32;    // 288
constexpr int kRowsPerWarp = kTileM / kConsumerWarps;  // 8 rows of C per consumer warp
constexpr int kColsPerLane = kTileN / 32;              // 2 columns per lane: lane and lane + 32
constexpr int kDefaultN = 1024, kDefaultK = 1024;      // --size sets M (bytes of C = M x 4 KiB)
constexpr std::size_t kRowBytes = kDefaultN * sizeof(float);
static_assert(kTileK * sizeof(float) % 16 == 0 && kTileN * sizeof(float) % 16 == 0,
              "TMA box rows (boxDim[0] x element size) are multiples of 16 bytes");
static_assert(kTileM % kConsumerWarps == 0 && kTileN == 32 * kColsPerLane && kTileK % 4 == 0,
              "every consumer lane owns whole rows and columns; A is read as float4 along k");

/// [maps]
// A (M x K), B (K x N), row-major; one box is one slice (a_slice_rows, b_slice_rows rows).
course::TensorMapRequest a_request(const float* gmem_a, const GemmShape& s,
                                   const ClusterShape& c) {
  course::TensorMapRequest r;  // float32, rank 2, no swizzle, zeros outside the matrix
  r.global_address = gmem_a;
  r.global_dim[0] = static_cast<std::uint64_t>(s.k);
  r.global_dim[1] = static_cast<std::uint64_t>(s.m);
  r.global_strides[0] = static_cast<std::uint64_t>(s.k) * sizeof(float);
  r.box_dim[0] = kTileK;
  r.box_dim[1] = static_cast<std::uint32_t>(a_slice_rows(c));
  return r;
}
course::TensorMapRequest b_request(const float* gmem_b, const GemmShape& s,
                                   const ClusterShape& c) {
  course::TensorMapRequest r;
  r.global_address = gmem_b;
  r.global_dim[0] = static_cast<std::uint64_t>(s.n);
  r.global_dim[1] = static_cast<std::uint64_t>(s.k);
  r.global_strides[0] = static_cast<std::uint64_t>(s.n) * sizeof(float);
  r.box_dim[0] = kTileN;
  r.box_dim[1] = static_cast<std::uint32_t>(b_slice_rows(c));
  return r;
}
/// [maps]

// One k-tile's operands; a slice lands at a_slice_offset_elems / b_slice_offset_elems.
struct StageTiles {
  float a[kTileM * kTileK];  // [kTileM][kTileK]
  float b[kTileK * kTileN];  // [kTileK][kTileN]
};
struct SharedTiles { StageTiles stage[kStages]; };
constexpr std::size_t kDynamicSmemBytes = sizeof(SharedTiles) + kSmemAlign;  // + room to align

/// [producer]
template <class Plan>
__device__ void produce(const CUtensorMap* a_map, const CUtensorMap* b_map, SharedTiles& smem,
                        std::uint64_t* full_bar, std::uint64_t* empty_bar, int x, int y,
                        int num_k_tiles) {
  constexpr ClusterShape kShape = Plan::kShape;
  const int a_row = static_cast<int>(blockIdx.y) * kTileM + a_slice_first_row(kShape, x);
  const int b_col = static_cast<int>(blockIdx.x) * kTileN;
  const std::uint16_t a_mask = a_multicast_mask(kShape, x, y);  // our cluster row
  const std::uint16_t b_mask = b_multicast_mask(kShape, x, y);  // our cluster column
  course::StageCursor<kStages> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    // The stage is free in every block we write into: their consumer warps arrived on OUR
    // barrier, from other blocks, so the wait acquires at cluster scope.
    course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u,
                                {"empty", cursor.stage, cursor.phase ^ 1u}, ptx::scope_cluster);
    // Our one arrival, announcing every byte that lands in OUR stage: ours and our peers'.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                         &full_bar[cursor.stage],
                                         std::uint32_t{Plan::kFullTxBytes});
    StageTiles& tiles = smem.stage[cursor.stage];
    float* smem_a_slice = tiles.a + a_slice_offset_elems(kShape, x);  // same offset everywhere
    float* smem_b_slice = tiles.b + b_slice_offset_elems(kShape, y);
    const std::int32_t a_coords[2] = {kt * kTileK, a_row};  // innermost first: column, row
    const std::int32_t b_coords[2] = {b_col, kt * kTileK + b_slice_first_row(kShape, y)};
    if constexpr (kShape.multicast) {
      // TUTORIAL: one load, written to the same offset of every block in the mask; each of
      // their barriers at full_bar's offset receives complete-tx for the bytes landing there.
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_a_slice, a_map,
                                a_coords, &full_bar[cursor.stage], a_mask);
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_b_slice, b_map,
                                b_coords, &full_bar[cursor.stage], b_mask);
    } else {
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_a_slice, a_map,
                                a_coords, &full_bar[cursor.stage]);
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_b_slice, b_map,
                                b_coords, &full_bar[cursor.stage]);
    }
  }
}
/// [producer]

// acc[i][j] += A[row0 + i][k] * B[k][lane + 32 j] over the k-tile. A is read as float4 along k
// (one address for the whole warp: a broadcast), B as 32 consecutive floats (no bank conflict).
__device__ void multiply_tile(const StageTiles& tiles, int warp_idx, int lane,
                              float (&acc)[kRowsPerWarp][kColsPerLane]) {
  const int row0 = warp_idx * kRowsPerWarp;
#pragma unroll 2
  for (int k = 0; k < kTileK; k += 4) {
    float4 a[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i)
      a[i] = *reinterpret_cast<const float4*>(&tiles.a[(row0 + i) * kTileK + k]);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float b[kColsPerLane];
#pragma unroll
      for (int j = 0; j < kColsPerLane; ++j) b[j] = tiles.b[(k + kk) * kTileN + lane + 32 * j];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const float a_ik = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
        for (int j = 0; j < kColsPerLane; ++j) acc[i][j] += a_ik * b[j];
      }
    }
  }
}

/// [consumer]
template <class Plan>
__device__ void consume(const SharedTiles& smem, std::uint64_t* full_bar, std::uint64_t* empty_bar,
                        cg::cluster_group& cluster, int x, int y, int num_k_tiles, int warp_idx,
                        int lane, float (&acc)[kRowsPerWarp][kColsPerLane]) {
  constexpr ClusterShape kShape = Plan::kShape;
  // Lane i of every consumer warp releases the stage to the i-th block that writes into us.
  const bool is_signalling_lane = lane < num_release_targets(kShape);
  const int target = is_signalling_lane ? release_target(kShape, x, y, lane)
                                        : static_cast<int>(cluster.block_rank());
  std::uint64_t* dsmem_target_empty = cluster.map_shared_rank(empty_bar, target);  // PTX mapa
  course::StageCursor<kStages> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,  // all slices landed
                                {"full", cursor.stage, cursor.phase}, ptx::scope_cluster);
    multiply_tile(smem.stage[cursor.stage], warp_idx, lane, acc);
    __syncwarp();  // every lane of this warp has finished reading the stage...
    if (is_signalling_lane) {
      // ...so its signalling lanes tell each writer, with release at cluster scope, to refill.
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster,
                           dsmem_target_empty + cursor.stage);
    }
  }
}
/// [consumer]

__device__ void store_tile(float* gmem_c, const GemmShape& s, int warp_idx, int lane,
                           const float (&acc)[kRowsPerWarp][kColsPerLane]) {
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int row = static_cast<int>(blockIdx.y) * kTileM + warp_idx * kRowsPerWarp + i;
    for (int j = 0; j < kColsPerLane; ++j) {
      const int col = static_cast<int>(blockIdx.x) * kTileN + lane + 32 * j;  // may overhang C
      if (row < s.m && col < s.n) gmem_c[std::size_t(row) * s.n + col] = acc[i][j];
    }
  }
}

/// [kernel]
template <class Plan>
__global__ void __cluster_dims__(Plan::kShape.x, Plan::kShape.y, 1) __launch_bounds__(kThreads)
    gemm_kernel(const __grid_constant__ CUtensorMap a_map,
                const __grid_constant__ CUtensorMap b_map, float* gmem_c, GemmShape shape) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  // The same padding in every block: multicast writes to the same offset in each destination.
  const auto misalign = static_cast<std::size_t>(__cvta_generic_to_shared(smem_raw) % kSmemAlign);
  SharedTiles& smem =
      *reinterpret_cast<SharedTiles*>(smem_raw + (kSmemAlign - misalign) % kSmemAlign);
  __shared__ alignas(8) std::uint64_t full_bar[kStages];   // phase r: round r's slices all landed
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];  // phase r: our receivers read round r
  cg::cluster_group cluster = cg::this_cluster();
  const int x = static_cast<int>(cluster.block_index().x);
  const int y = static_cast<int>(cluster.block_index().y);
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int num_k_tiles = (shape.k + kTileK - 1) / kTileK;

  if (warp_idx == kProducerWarp && course::elect_one_lane()) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // our producer's arrive.expect_tx
      ptx::mbarrier_init(&empty_bar[s], std::uint32_t{Plan::kEmptyArrivals});  // warps we feed
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible cluster-wide...
  }
  cluster.sync();  // ...before any block multicasts into or arrives on another

  if (warp_idx == kProducerWarp) {
    if (course::elect_one_lane()) {
      produce<Plan>(&a_map, &b_map, smem, full_bar, empty_bar, x, y, num_k_tiles);
    }
  } else {
    float acc[kRowsPerWarp][kColsPerLane] = {};
    consume<Plan>(smem, full_bar, empty_bar, cluster, x, y, num_k_tiles, warp_idx, lane, acc);
    store_tile(gmem_c, shape, warp_idx, lane, acc);
  }
  // Peers' arrivals on our empty barriers, and our last multicasts into them, may still be in
  // flight: nobody leaves before all have arrived (barrier.cluster.arrive releases ours).
  cluster.sync();
}
/// [kernel]

// ---- Launchers and the variant table ------------------------------------------------------------

struct GemmMaps { CUtensorMap a, b; };  // host copies, passed by value as __grid_constant__

/// [launch]
// Enough blocks to cover C, in whole clusters: blocks past the edge load zeros, store nothing.
inline dim3 gemm_grid(const GemmShape& s, const ClusterShape& c) {
  auto whole_clusters = [](int tiles, int side) {
    return static_cast<unsigned>((tiles + side - 1) / side * side);
  };
  return dim3(whole_clusters((s.n + kTileN - 1) / kTileN, c.x),
              whole_clusters((s.m + kTileM - 1) / kTileM, c.y));
}

template <class Plan>
void launch_gemm(const GemmMaps& maps, float* gmem_c, const GemmShape& shape) {
  // Above 48 KiB a kernel must opt in to the dynamic shared memory it asks for.
  COURSE_CHECK(cudaFuncSetAttribute(gemm_kernel<Plan>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kDynamicSmemBytes)));
  // __cluster_dims__ makes clusters of an ordinary launch; the grid counts blocks.
  gemm_kernel<Plan><<<gemm_grid(shape, Plan::kShape), kThreads, kDynamicSmemBytes>>>(
      maps.a, maps.b, gmem_c, shape);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using NoMulticast = ClusterPlan<2, 2, false>;  // 2 x 2 clusters, each block loading its own tiles
using Multicast2x1 = ClusterPlan<2, 1, true>;
using Multicast2x2 = ClusterPlan<2, 2, true>;
using Launch = void (*)(const GemmMaps& maps, float* gmem_c, const GemmShape& shape);
struct Variant { const char* name; const char* summary; ClusterShape cluster; Launch launch; };
const Variant kVariants[] = {
    {"no_multicast", "2x2 clusters; every block loads its whole A and B tiles itself",
     NoMulticast::kShape, &launch_gemm<NoMulticast>},
    {"multicast_2x1", "A shared by the 2 blocks of a cluster row (half each); B not shared",
     Multicast2x1::kShape, &launch_gemm<Multicast2x1>},
    {"multicast_2x2", "A shared along cluster rows, B along columns: half of each per block",
     Multicast2x2::kShape, &launch_gemm<Multicast2x2>},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------------

struct Problem {
  explicit Problem(const GemmShape& s)
      : shape(checked(s)), host_a(std::size_t(shape.m) * shape.k),
        host_b(std::size_t(shape.k) * shape.n), gmem_a(host_a.size()), gmem_b(host_b.size()),
        gmem_c(std::size_t(shape.m) * shape.n) {
    for (std::size_t i = 0; i < host_a.size(); ++i) host_a[i] = operand_value(i, 1);
    for (std::size_t i = 0; i < host_b.size(); ++i) host_b[i] = operand_value(i, 2);
    expected = reference(host_a, host_b, shape);
    gmem_a.upload(host_a.data());
    gmem_b.upload(host_b.data());
  }
  GemmMaps maps(const ClusterShape& c) const {
    return {course::encode_tiled(a_request(gmem_a.data(), shape, c)),
            course::encode_tiled(b_request(gmem_b.data(), shape, c))};
  }
  std::size_t compulsory_bytes() const {
    return (host_a.size() + host_b.size() + expected.size()) * sizeof(float);
  }
  GemmShape shape;
  std::vector<float> host_a, host_b, expected;
  course::DeviceBuffer<float> gmem_a, gmem_b;
  course::GuardedOutput<float> gmem_c;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  const GemmMaps maps = p.maps(v.cluster);
  p.gmem_c.poison();
  v.launch(maps, p.gmem_c.data(), p.shape);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_c.check(p.expected, static_cast<std::size_t>(p.shape.n));
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem({static_cast<int>(opts.size_bytes / kRowBytes), kDefaultN, kDefaultK});
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const GemmMaps maps = problem.maps(v.cluster);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, problem.gmem_c.data(), problem.shape); },
        problem.compulsory_bytes());  // A and B read once, C written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_multicast";
  info.title = "12 tma_multicast: one TMA load into the shared memory of several blocks";
  info.explanation =
      "C = A x B (float, small integers: exact) with 64 x 64 tiles of C per block and a 4-stage\n"
      "TMA pipeline. In a cluster, the blocks of a row share their A tile and the blocks of a\n"
      "column their B tile: each block loads one slice of each and multicasts it (ctaMask) to\n"
      "the blocks that share it. Compared with the same kernel without multicast. N = K = 1024;\n"
      "--size is the bytes of C (M rows of 4 KiB).";
  info.requirement = {9, 0, true, "TMA multicast (sm_90a)"};
  info.verify_bytes = 1u << 20;
  info.bench_bytes = 16u << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes % kRowBytes != 0 || bytes / kRowBytes > (1u << 14)) {
      return "--size is the bytes of C: a whole number of 4 KiB rows (1024 floats), at most 64 MiB "
             "(the reference is computed on the CPU)";
    }
    return std::nullopt;
  };
  info.host_model = [](std::ostream& out) {  // what runs without a GPU
    print_tile_summary(out, kStages);
    for (const Variant& v : kVariants) print_cluster_plan(out, v.name, v.cluster);
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
