// 12_tma_multicast lab: other cluster shapes, rings of two to six stages, and a broadcast stream.
//
// The lesson compares no multicast with 2 x 1 and 2 x 2 clusters at four stages. This program asks
// "what if", one change per row, each row verified bit for bit before it is timed:
//   multicast_4x2, multicast_2x4: 8-block clusters, the portable maximum; each block loads 6 KiB
//     of the 16 KiB that land in it per k-tile (37.5 %), in two different cuts;
//   multicast_1x2, multicast_1x4, multicast_4x1: only B or only A shared, the mirror images of the
//     lesson's multicast_2x1 (both tiles are 8 KiB, so 1x2 asks the L2 for what 2x1 asks);
//   no_multicast_1x1, no_multicast_4x2: no multicast in clusters of 1 and of 8 blocks: what the
//     cluster alone costs the product, without a single byte shared;
//   no_multicast_s2 .. _s6, multicast_2x2_s2 .. _s6: the lesson's kernel with the number of stages
//     a template parameter (the _s4 rows are the lesson's kernels);
//   broadcast_*: not a matrix product. Every block streams the same 2 MiB panel from the L2 and
//     only adds it up, so the L2, not the arithmetic, is the limit; clusters of 2, 4 and 8 share
//     each tile by multicast (4 also without), the _s4 rows with a deeper ring and fewer blocks per
//     SM. --size is then the bytes of their output, 4 KiB per block.
// The shape rows are the lesson's gemm_kernel with another ClusterPlan; the ring rows need the lab's
// own copy of the kernel; the broadcast rows have their own kernel, the lesson's protocol with one
// shared operand. Hardware: compute capability 9.0 exactly, built for sm_90a, as the lesson.
// Run: build/12_tma_multicast/tma_multicast_lab [--bench] [--variant=NAME] [--size=BYTES_OF_C]
#include "tma_multicast.cu"  // the lesson: the kernel, its launcher, Problem, verify

namespace lab {

// ---- The lesson's kernel with the number of stages as a template parameter --------------------
// Line for line the lesson's produce, consume and gemm_kernel, with kRing instead of kStages.

template <int kRing>
struct SharedRing {
  StageTiles stage[kRing];
};
template <int kRing>
constexpr std::size_t kRingSmemBytes = sizeof(SharedRing<kRing>) + kSmemAlign;  // + room to align

template <class Plan, int kRing>
__device__ void produce(const CUtensorMap* a_map, const CUtensorMap* b_map, SharedRing<kRing>& smem,
                        std::uint64_t* full_bar, std::uint64_t* empty_bar, int x, int y, int num_k_tiles) {
  constexpr ClusterShape kShape = Plan::kShape;
  const int a_row = static_cast<int>(blockIdx.y) * kTileM + a_slice_first_row(kShape, x);  // our slice of A
  const int b_col = static_cast<int>(blockIdx.x) * kTileN;
  const std::uint16_t a_mask = a_multicast_mask(kShape, x, y), b_mask = b_multicast_mask(kShape, x, y);
  course::StageCursor<kRing> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    // The stage is free in every block we write into (their warps arrived on OUR barrier): cluster-scope acquire.
    course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u, {"empty", cursor.stage, cursor.phase ^ 1u},
                                ptx::scope_cluster);
    // Our one arrival, announcing every byte that lands in OUR stage this round, ours and our peers'.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[cursor.stage],
                                         std::uint32_t{Plan::kFullTxBytes});
    StageTiles& tiles = smem.stage[cursor.stage];
    float* smem_a_slice = tiles.a + a_slice_offset_elems(kShape, x);  // the same offset in every receiver
    float* smem_b_slice = tiles.b + b_slice_offset_elems(kShape, y);
    const std::int32_t a_coords[2] = {kt * kTileK, a_row};  // innermost first: column, row
    const std::int32_t b_coords[2] = {b_col, kt * kTileK + b_slice_first_row(kShape, y)};
    if constexpr (kShape.multicast) {  // to every block in the mask, completing on each one's full_bar
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_a_slice, a_map, a_coords,
                                &full_bar[cursor.stage], a_mask);
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_b_slice, b_map, b_coords,
                                &full_bar[cursor.stage], b_mask);
    } else {
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_a_slice, a_map, a_coords,
                                &full_bar[cursor.stage]);
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_b_slice, b_map, b_coords,
                                &full_bar[cursor.stage]);
    }
  }
}

template <class Plan, int kRing>
__device__ void consume(const SharedRing<kRing>& smem, std::uint64_t* full_bar, std::uint64_t* empty_bar,
                        cg::cluster_group& cluster, int x, int y, int num_k_tiles, int warp_idx, int lane,
                        float (&acc)[kRowsPerWarp][kColsPerLane]) {
  constexpr ClusterShape kShape = Plan::kShape;
  // Lane i of every consumer warp releases the stage to the i-th block that writes into us.
  const bool is_signalling_lane = lane < num_release_targets(kShape);
  const int target = is_signalling_lane ? release_target(kShape, x, y, lane) : static_cast<int>(cluster.block_rank());
  std::uint64_t* dsmem_target_empty = cluster.map_shared_rank(empty_bar, target);  // mapa: its empty_bar[0]
  course::StageCursor<kRing> cursor;
  for (int kt = 0; kt < num_k_tiles; ++kt, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase},
                                ptx::scope_cluster);  // all slices landed
    multiply_tile(smem.stage[cursor.stage], warp_idx, lane, acc);
    __syncwarp();  // every lane of this warp has finished reading the stage...
    if (is_signalling_lane) {
      // ...so its signalling lanes tell each writer, with release at cluster scope, that it may refill.
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, dsmem_target_empty + cursor.stage);
    }
  }
}

/// [ring_kernel]
template <class Plan, int kRing>
__global__ void __cluster_dims__(Plan::kShape.x, Plan::kShape.y, 1) __launch_bounds__(kThreads)
    ring_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     float* gmem_c, GemmShape shape) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  // The same padding in every block: multicast writes to the same offset in each destination.
  const auto misalign = static_cast<std::size_t>(__cvta_generic_to_shared(smem_raw) % kSmemAlign);
  auto& smem = *reinterpret_cast<SharedRing<kRing>*>(smem_raw + (kSmemAlign - misalign) % kSmemAlign);
  __shared__ alignas(8) std::uint64_t full_bar[kRing];   // phase r: round r's k-tile has landed here, all slices
  __shared__ alignas(8) std::uint64_t empty_bar[kRing];  // phase r: every block we write into has read round r
  cg::cluster_group cluster = cg::this_cluster();
  const int x = static_cast<int>(cluster.block_index().x), y = static_cast<int>(cluster.block_index().y);
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);  // warp-uniform
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int num_k_tiles = (shape.k + kTileK - 1) / kTileK;

  if (warp_idx == kProducerWarp && course::elect_one_lane()) {
    for (int s = 0; s < kRing; ++s) {
      ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // one arrival: our producer's arrive.expect_tx
      ptx::mbarrier_init(&empty_bar[s], std::uint32_t{Plan::kEmptyArrivals});  // every warp of every block we feed
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the inits are visible cluster-wide...
  }
  cluster.sync();  // ...before any block multicasts into or arrives on another: all have initialised

  if (warp_idx == kProducerWarp) {
    if (course::elect_one_lane()) produce<Plan, kRing>(&a_map, &b_map, smem, full_bar, empty_bar, x, y, num_k_tiles);
  } else {
    float acc[kRowsPerWarp][kColsPerLane] = {};
    consume<Plan, kRing>(smem, full_bar, empty_bar, cluster, x, y, num_k_tiles, warp_idx, lane, acc);
    store_tile(gmem_c, shape, warp_idx, lane, acc);
  }
  cluster.sync();  // nobody exits while a peer's arrival or multicast can still reach it (see the lesson)
}
/// [ring_kernel]

template <class Plan, int kRing>
void launch_ring_gemm(const GemmMaps& maps, float* gmem_c, const GemmShape& shape) {
  constexpr std::size_t kSmemBytes = kRingSmemBytes<kRing>;
  static_assert(kSmemBytes <= 227 * 1024, "a block has at most 227 KiB of shared memory on 9.0");
  // Above 48 KiB a kernel must opt in to the dynamic shared memory it asks for.
  COURSE_CHECK(cudaFuncSetAttribute(ring_gemm_kernel<Plan, kRing>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSmemBytes)));
  ring_gemm_kernel<Plan, kRing><<<gemm_grid(shape, Plan::kShape), kThreads, kSmemBytes>>>(maps.a, maps.b, gmem_c, shape);
  COURSE_CHECK_LAUNCH();
}

// ---- A broadcast stream: every block reads the same panel ----------------------------------------
// The lesson's ring and protocol with one shared operand: the panel's tiles, each cut into one slice
// per block of the cluster (Part 5 of the model). The consumers only add the tiles up.

template <int kRing>
struct PanelRing {
  std::uint32_t tile[kRing][kPanelTileWords];  // [stage][kPanelTileRows][kPanelCols]
};
template <int kRing>
constexpr std::size_t kPanelRingSmemBytes = sizeof(PanelRing<kRing>) + kSmemAlign;  // + room to align
static_assert(kFoldWords * sizeof(std::uint32_t) == kRowBytes, "a block's output is one 4 KiB row, as a row of C");

// The panel, rank 2: kPanelCols words per row, one box is one slice (panel_slice_rows rows).
course::TensorMapRequest panel_request(const std::uint32_t* gmem_panel, const BroadcastShape& s, const ClusterShape& c) {
  course::TensorMapRequest r;  // no swizzle, zeros outside the panel
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
  r.global_address = gmem_panel;
  r.global_dim[0] = kPanelCols;
  r.global_dim[1] = static_cast<std::uint64_t>(s.panel_rows);
  r.global_strides[0] = kPanelCols * sizeof(std::uint32_t);
  r.box_dim[0] = kPanelCols;
  r.box_dim[1] = static_cast<std::uint32_t>(panel_slice_rows(c));
  return r;
}

/// [broadcast_producer]
template <class Plan, int kRing>
__device__ void produce_panel(const CUtensorMap* panel_map, PanelRing<kRing>& smem, std::uint64_t* full_bar,
                              std::uint64_t* empty_bar, int x, int first_tile, int num_tiles) {
  constexpr ClusterShape kShape = Plan::kShape;
  const std::uint16_t mask = Plan::multicast_mask(x);
  course::StageCursor<kRing> cursor;
  for (int i = 0; i < num_tiles; ++i, cursor.advance()) {
    const int tile = (first_tile + i) % num_tiles;
    // The stage is free in every block of the cluster: all their consumer warps arrived on OUR barrier.
    course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u, {"empty", cursor.stage, cursor.phase ^ 1u},
                                ptx::scope_cluster);
    // Our one arrival, announcing the whole tile: every slice lands in our stage, ours and our peers'.
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[cursor.stage],
                                         std::uint32_t{Plan::kFullTxBytes});
    std::uint32_t* smem_slice = smem.tile[cursor.stage] + panel_slice_offset_elems(kShape, x);  // same offset everywhere
    const std::int32_t coords[2] = {0, tile * kPanelTileRows + panel_slice_first_row(kShape, x)};  // column, row
    if constexpr (kShape.multicast) {  // to every block in the mask, completing on each one's full_bar
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_slice, panel_map, coords,
                                &full_bar[cursor.stage], mask);
    } else {
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_slice, panel_map, coords,
                                &full_bar[cursor.stage]);
    }
  }
}
/// [broadcast_producer]

// Consumer thread t adds uint4 number t, t + 256, t + 512, t + 768 of every tile: 16-byte reads,
// a warp's 32 consecutive (no bank conflict), words 4t .. 4t+3 of each 4 KiB of the panel.
template <class Plan, int kRing>
__device__ uint4 consume_panel(const PanelRing<kRing>& smem, std::uint64_t* full_bar, std::uint64_t* empty_bar,
                               cg::cluster_group& cluster, int x, int num_tiles, int warp_idx, int lane) {
  constexpr ClusterShape kShape = Plan::kShape;
  // Lane i of every consumer warp releases the stage to block i of the cluster (or only to us).
  const bool is_signalling_lane = lane < num_release_targets(kShape);
  const int target = is_signalling_lane ? release_target(kShape, x, 0, lane) : static_cast<int>(cluster.block_rank());
  std::uint64_t* dsmem_target_empty = cluster.map_shared_rank(empty_bar, target);  // mapa: its empty_bar[0]
  const int thread = warp_idx * 32 + lane;
  uint4 sum = make_uint4(0u, 0u, 0u, 0u);
  course::StageCursor<kRing> cursor;
  for (int i = 0; i < num_tiles; ++i, cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase},
                                ptx::scope_cluster);  // every slice of the tile landed
    const uint4* chunks = reinterpret_cast<const uint4*>(smem.tile[cursor.stage]);
#pragma unroll
    for (int j = 0; j < kChunksPerThread; ++j) {
      const uint4 v = chunks[thread + j * kConsumerThreads];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    __syncwarp();  // every lane of this warp has finished reading the stage...
    if (is_signalling_lane) {
      // ...so its signalling lanes tell each writer, with release at cluster scope, that it may refill.
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, dsmem_target_empty + cursor.stage);
    }
  }
  return sum;
}

/// [broadcast_kernel]
template <class Plan, int kRing>
__global__ void __cluster_dims__(Plan::kShape.x, 1, 1) __launch_bounds__(kThreads)
    broadcast_kernel(const __grid_constant__ CUtensorMap panel_map, std::uint32_t* gmem_out, BroadcastShape shape) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  // The same padding in every block: multicast writes to the same offset in each destination.
  const auto misalign = static_cast<std::size_t>(__cvta_generic_to_shared(smem_raw) % kSmemAlign);
  auto& smem = *reinterpret_cast<PanelRing<kRing>*>(smem_raw + (kSmemAlign - misalign) % kSmemAlign);
  __shared__ alignas(8) std::uint64_t full_bar[kRing];   // phase r: round r's tile has landed here, all slices
  __shared__ alignas(8) std::uint64_t empty_bar[kRing];  // phase r: every block of the cluster has read round r
  cg::cluster_group cluster = cg::this_cluster();
  const int x = static_cast<int>(cluster.block_index().x);
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);  // warp-uniform
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int num_tiles = panel_tiles(shape);
  const int first_tile = first_panel_tile(static_cast<int>(blockIdx.x) / Plan::kShape.x, num_tiles);

  if (warp_idx == kProducerWarp && course::elect_one_lane()) {
    for (int s = 0; s < kRing; ++s) {
      ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // one arrival: our producer's arrive.expect_tx
      ptx::mbarrier_init(&empty_bar[s], std::uint32_t{Plan::kEmptyArrivals});  // every warp of every block we feed
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the inits are visible cluster-wide...
  }
  cluster.sync();  // ...before any block multicasts into or arrives on another: all have initialised

  if (warp_idx == kProducerWarp) {
    if (course::elect_one_lane()) produce_panel<Plan, kRing>(&panel_map, smem, full_bar, empty_bar, x, first_tile, num_tiles);
  } else {
    const uint4 sum = consume_panel<Plan, kRing>(smem, full_bar, empty_bar, cluster, x, num_tiles, warp_idx, lane);
    const auto block = static_cast<std::uint32_t>(blockIdx.x);
    if (block < static_cast<std::uint32_t>(shape.blocks)) {  // the grid overhangs the output by up to a cluster
      const int thread = warp_idx * 32 + lane;
      reinterpret_cast<uint4*>(gmem_out + std::size_t(block) * kFoldWords)[thread] =
          make_uint4(mix_with_block(sum.x, block), mix_with_block(sum.y, block), mix_with_block(sum.z, block),
                     mix_with_block(sum.w, block));
    }
  }
  cluster.sync();  // nobody exits while a peer's arrival or multicast can still reach it (see the lesson)
}
/// [broadcast_kernel]

inline dim3 broadcast_grid(const BroadcastShape& s, const ClusterShape& c) {
  return dim3(static_cast<unsigned>(broadcast_grid_blocks(c, s)));
}

template <class Plan, int kRing = kBroadcastRing>
void launch_broadcast(const CUtensorMap& panel_map, std::uint32_t* gmem_out, const BroadcastShape& shape) {
  constexpr std::size_t kSmemBytes = kPanelRingSmemBytes<kRing>;
  static_assert(kSmemBytes <= 227 * 1024, "a block has at most 227 KiB of shared memory on 9.0");
  // Above 48 KiB a kernel must opt in to the dynamic shared memory it asks for.
  COURSE_CHECK(cudaFuncSetAttribute(broadcast_kernel<Plan, kRing>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSmemBytes)));
  broadcast_kernel<Plan, kRing><<<broadcast_grid(shape, Plan::kShape), kThreads, kSmemBytes>>>(panel_map, gmem_out,
                                                                                                shape);
  COURSE_CHECK_LAUNCH();
}

// How many clusters of a kernel fit on the GPU at once (its shared memory, threads and cluster shape).
template <class Kernel>
int resident_clusters(Kernel* kernel, const ClusterShape& c, std::size_t smem_bytes) {
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  cudaLaunchConfig_t config = {};
  // One cluster's worth of blocks: the kernel's __cluster_dims__ gives the shape.
  config.gridDim = dim3(static_cast<unsigned>(c.x), static_cast<unsigned>(c.y));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem_bytes;
  int clusters = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  return clusters;
}
template <class Plan>
int gemm_resident_clusters() { return resident_clusters(gemm_kernel<Plan>, Plan::kShape, kDynamicSmemBytes); }
template <class Plan, int kRing>
int ring_resident_clusters() {
  return resident_clusters(ring_gemm_kernel<Plan, kRing>, Plan::kShape, kRingSmemBytes<kRing>);
}
template <class Plan, int kRing = kBroadcastRing>
int broadcast_resident_clusters() {
  return resident_clusters(broadcast_kernel<Plan, kRing>, Plan::kShape, kPanelRingSmemBytes<kRing>);
}

// ---- The rows ----------------------------------------------------------------------------------

// The matrix-product rows.
struct Variant {
  const char* name;
  const char* summary;
  ClusterShape cluster;  // the plan's shape, for the tensor maps' boxes
  int stages;            // the ring the row's kernel walks
  ::Launch launch;
  int (*resident_clusters)();  // clusters of the row's kernel that fit on the GPU at once
};
template <class Plan>
constexpr Variant shape_row(const char* name, const char* summary) {  // the lesson's kernel, another plan
  return {name, summary, Plan::kShape, kStages, &launch_gemm<Plan>, &gemm_resident_clusters<Plan>};
}
template <class Plan, int kRing>
constexpr Variant ring_row(const char* name, const char* summary) {
  return {name, summary, Plan::kShape, kRing, &launch_ring_gemm<Plan, kRing>, &ring_resident_clusters<Plan, kRing>};
}
const Variant kVariants[] = {
    shape_row<ClusterPlan<4, 2, true>>("multicast_4x2",
                                       "8-block clusters: a quarter of each A tile, half of each B tile"),
    shape_row<ClusterPlan<2, 4, true>>("multicast_2x4",
                                       "8-block clusters: half of each A tile, a quarter of each B tile"),
    shape_row<ClusterPlan<1, 2, true>>("multicast_1x2",
                                       "B shared by the 2 blocks of a cluster column (half each); A not shared"),
    shape_row<ClusterPlan<1, 4, true>>("multicast_1x4",
                                       "B shared down 4-block cluster columns (a quarter each); A not shared"),
    shape_row<ClusterPlan<4, 1, true>>("multicast_4x1",
                                       "A shared along 4-block cluster rows (a quarter each); B not shared"),
    shape_row<ClusterPlan<1, 1, false>>("no_multicast_1x1",
                                        "no multicast and no cluster to speak of: clusters of 1 block"),
    shape_row<ClusterPlan<4, 2, false>>("no_multicast_4x2",
                                        "8-block clusters without multicast: what the cluster alone costs"),
    ring_row<NoMulticast, 2>("no_multicast_s2", "no_multicast with a ring of 2 stages (32 KiB of tiles per block)"),
    ring_row<NoMulticast, 4>("no_multicast_s4", "no_multicast at 4 stages: the lesson's kernel, the lab's copy"),
    ring_row<NoMulticast, 6>("no_multicast_s6", "no_multicast with a ring of 6 stages (96 KiB of tiles per block)"),
    ring_row<Multicast2x2, 2>("multicast_2x2_s2", "multicast_2x2 with a ring of 2 stages"),
    ring_row<Multicast2x2, 4>("multicast_2x2_s4", "multicast_2x2 at 4 stages: the lesson's kernel, the lab's copy"),
    ring_row<Multicast2x2, 6>("multicast_2x2_s6", "multicast_2x2 with a ring of 6 stages"),
};

// The broadcast rows.
using BroadcastLaunch = void (*)(const CUtensorMap& panel_map, std::uint32_t* gmem_out, const BroadcastShape& shape);
struct BroadcastRow {
  const char* name;
  const char* summary;
  ClusterShape cluster;  // the plan's shape, for the panel map's box
  int stages;            // the ring the row's kernel walks
  BroadcastLaunch launch;
  int (*resident_clusters)();
};
template <class Plan, int kRing = kBroadcastRing>
constexpr BroadcastRow broadcast_row(const char* name, const char* summary) {
  return {name, summary, Plan::kShape, kRing, &launch_broadcast<Plan, kRing>, &broadcast_resident_clusters<Plan, kRing>};
}
const BroadcastRow kBroadcastRows[] = {
    broadcast_row<BroadcastPlan<1, false>>("broadcast_no_multicast",
                                           "every block streams the whole 2 MiB panel from the L2 and adds it up"),
    broadcast_row<BroadcastPlan<2, true>>("broadcast_multicast_2",
                                          "clusters of 2: each block loads half of every tile, multicast to both"),
    broadcast_row<BroadcastPlan<4, true>>("broadcast_multicast_4",
                                          "clusters of 4: a quarter of every tile each, multicast to all four"),
    broadcast_row<BroadcastPlan<8, true>>("broadcast_multicast_8",
                                          "clusters of 8: an eighth of every tile each, multicast to all eight"),
    broadcast_row<BroadcastPlan<4, false>>("broadcast_unicast_4",
                                           "clusters of 4 without multicast: every block loads every tile itself"),
    broadcast_row<BroadcastPlan<1, false>, 4>("broadcast_no_multicast_s4",
                                              "broadcast_no_multicast with a ring of 4 stages: 3 blocks per SM, not 6"),
    broadcast_row<BroadcastPlan<4, true>, 4>("broadcast_multicast_4_s4",
                                             "broadcast_multicast_4 with a ring of 4 stages: 3 blocks per SM, not 6"),
};

// What --help lists and --variant accepts: the matrix-product rows, then the broadcast rows.
inline std::vector<course::VariantInfo> all_rows() {
  std::vector<course::VariantInfo> rows = course::variant_infos(kVariants);
  for (const BroadcastRow& row : kBroadcastRows) rows.push_back({row.name, row.summary});
  return rows;
}

// ---- run(): verify every row, then time the correct ones ------------------------------------------

// The lesson's check: poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  return ::verify({v.name, v.summary, v.cluster, v.launch}, p);
}

// The broadcast's problem: the panel, its reference, the output with guard bands.
struct BroadcastProblem {
  explicit BroadcastProblem(const BroadcastShape& s)
      : shape(checked(s)), host_panel(std::size_t(shape.panel_rows) * kPanelCols), gmem_panel(host_panel.size()),
        gmem_out(std::size_t(shape.blocks) * kFoldWords) {
    for (std::size_t i = 0; i < host_panel.size(); ++i) host_panel[i] = panel_value(i);
    expected = broadcast_reference(host_panel, shape.blocks);
    gmem_panel.upload(host_panel.data());
  }
  CUtensorMap map(const ClusterShape& c) const {
    return course::encode_tiled(panel_request(gmem_panel.data(), shape, c));
  }
  // What one run moves: every tile into every block's shared memory, and the output written once.
  std::size_t moved_bytes(const ClusterShape& c) const {
    return broadcast_landed_bytes(c, shape) + expected.size() * sizeof(std::uint32_t);
  }
  BroadcastShape shape;
  std::vector<std::uint32_t> host_panel, expected;
  course::DeviceBuffer<std::uint32_t> gmem_panel;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

course::Comparison verify(const BroadcastRow& row, BroadcastProblem& p) {
  const CUtensorMap map = p.map(row.cluster);
  p.gmem_out.poison();
  row.launch(map, p.gmem_out.data(), p.shape);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected, kFoldWords);
}

// The --size of the programs, for the broadcast rows: one 4 KiB row of output per block.
inline BroadcastShape broadcast_shape(std::size_t size_bytes) {
  return {static_cast<int>(size_bytes / kRowBytes), kPanelTiles * kPanelTileRows};
}

// One line per selected row: how many of its clusters the GPU holds at once (a limit of the
// cluster launch that neither the timings nor the L2 counters show).
void print_residency(std::ostream& log, const char* name, const ClusterShape& c, int clusters, int sms) {
  char line[160];
  std::snprintf(line, sizeof line, "  %s: %d clusters of %d fit at once: %d blocks, %.2f per SM\n", name, clusters,
                c.x * c.y, clusters * c.x * c.y, double(clusters) * c.x * c.y / sms);
  log << line;
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  int sms = 0, device = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  log << "resident at once (cudaOccupancyMaxActiveClusters, " << sms << " SMs):\n";
  std::optional<Problem> problem;  // built only when a matrix-product row is selected (its reference takes a while)
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    if (!problem) problem.emplace(GemmShape{static_cast<int>(opts.size_bytes / kRowBytes), kDefaultN, kDefaultK});
    print_residency(log, v.name, v.cluster, v.resident_clusters(), sms);
    const GemmMaps maps = problem->maps(v.cluster);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, *problem); },
        [&] { v.launch(maps, problem->gmem_c.data(), problem->shape); },
        problem->compulsory_bytes());  // A and B read once, C written once, as in the lesson
  }
  std::optional<BroadcastProblem> broadcast;
  for (const BroadcastRow& row : kBroadcastRows) {
    if (!course::selected(opts, row.name)) continue;
    if (!broadcast) broadcast.emplace(broadcast_shape(opts.size_bytes));
    print_residency(log, row.name, row.cluster, row.resident_clusters(), sms);
    const CUtensorMap map = broadcast->map(row.cluster);
    course::check_and_time(
        opts, report, row.name, [&] { return verify(row, *broadcast); },
        [&] { row.launch(map, broadcast->gmem_out.data(), broadcast->shape); },
        broadcast->moved_bytes(row.cluster));  // the bytes that land in the blocks, not the panel once
  }
}

// What runs without a GPU: every row's masks, counts and share of the L2 traffic, and its ring.
void print_lab_model(std::ostream& out) {
  print_tile_summary(out, kStages);
  for (const Variant& v : kVariants) {
    print_cluster_plan(out, v.name, v.cluster);
    out << "    " << v.stages << " stages: " << v.stages * sizeof(StageTiles) / 1024
        << " KiB of tiles per block, barriers of " << v.stages * 2 * sizeof(std::uint64_t) << " bytes\n";
  }
  out << "broadcast: a panel of " << kPanelTiles << " tiles of " << kPanelTileBytes / 1024 << " KiB ("
      << kPanelTiles * kPanelTileBytes / (1024 * 1024) << " MiB) read by every block; each block adds it up into one "
      << kRowBytes / 1024 << " KiB row\n";
  for (const BroadcastRow& row : kBroadcastRows) {
    print_broadcast_plan(out, row.name, row.cluster);
    out << "    " << row.stages << " stages: " << row.stages * kPanelTileBytes / 1024 << " KiB of tiles per block\n";
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "tma_multicast_lab";
  info.title = "12 tma_multicast lab: other cluster shapes, rings of two to six stages, a broadcast stream";
  info.explanation =
      "The lesson's matrix product with one thing changed per row: 8-block clusters (4 x 2, 2 x 4), only B or\n"
      "only A shared (1 x 2, 1 x 4, 4 x 1), clusters without multicast (1 x 1, 4 x 2), and the ring of stages\n"
      "at 2, 4 and 6 with and without multicast. N = K = 1024; --size is the bytes of C (M rows of 4 KiB).\n"
      "The broadcast rows stream one fixed 2 MiB panel (L2-resident) through every block, which adds it up:\n"
      "for them --size is the bytes of their output, one 4 KiB row per block (16M: 4096 blocks), and GB/s\n"
      "counts the bytes that land in the blocks' shared memory (blocks x 2 MiB) plus the output.";
  info.size_rule = [lesson_rule = info.size_rule](std::size_t bytes) -> std::optional<std::string> {
    if (std::optional<std::string> broken = lesson_rule(bytes)) {
      return *broken + "; for the broadcast rows, the bytes of their output: 4 KiB per block";
    }
    return std::nullopt;
  };
  info.host_model = print_lab_model;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::all_rows(), lab::run);
}
#endif
