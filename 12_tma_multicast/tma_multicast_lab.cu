// 12_tma_multicast lab: other cluster shapes, and rings of two to six stages.
//
// The lesson compares no multicast with 2 x 1 and 2 x 2 clusters at four stages. This program asks
// "what if", one change per row, each row verified bit for bit before it is timed:
//   multicast_4x2, multicast_2x4: 8-block clusters, the portable maximum; each block loads 6 KiB
//     of the 16 KiB that land in it per k-tile (37.5 %), in two different cuts;
//   multicast_1x2, multicast_1x4, multicast_4x1: only B or only A shared, the mirror images of the
//     lesson's multicast_2x1 (both tiles are 8 KiB, so 1x2 asks the L2 for what 2x1 asks);
//   no_multicast_s2 .. _s6, multicast_2x2_s2 .. _s6: the lesson's kernel, line for line, with the
//     number of stages a template parameter (the _s4 rows are the lesson's kernels). Fewer stages
//     leave less time to hide the round trip to the slowest block of a row and a column; more
//     stages take more shared memory, so fewer blocks fit on an SM.
// The shape rows are the lesson's gemm_kernel with another ClusterPlan: the cluster shape is what
// the lesson's template is about. Only the stage count needs the lab's own copy of the kernel.
// Hardware: compute capability 9.0 exactly, built for sm_90a, as the lesson.
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

// ---- The rows ----------------------------------------------------------------------------------

struct Variant {
  const char* name;
  const char* summary;
  ClusterShape cluster;  // the plan's shape, for the tensor maps' boxes
  int stages;            // the ring the row's kernel walks
  ::Launch launch;
};
template <class Plan>
constexpr Variant shape_row(const char* name, const char* summary) {  // the lesson's kernel, another plan
  return {name, summary, Plan::kShape, kStages, &launch_gemm<Plan>};
}
template <class Plan, int kRing>
constexpr Variant ring_row(const char* name, const char* summary) {
  return {name, summary, Plan::kShape, kRing, &launch_ring_gemm<Plan, kRing>};
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
    ring_row<NoMulticast, 2>("no_multicast_s2", "no_multicast with a ring of 2 stages (32 KiB of tiles per block)"),
    ring_row<NoMulticast, 4>("no_multicast_s4", "no_multicast at 4 stages: the lesson's kernel, the lab's copy"),
    ring_row<NoMulticast, 6>("no_multicast_s6", "no_multicast with a ring of 6 stages (96 KiB of tiles per block)"),
    ring_row<Multicast2x2, 2>("multicast_2x2_s2", "multicast_2x2 with a ring of 2 stages"),
    ring_row<Multicast2x2, 4>("multicast_2x2_s4", "multicast_2x2 at 4 stages: the lesson's kernel, the lab's copy"),
    ring_row<Multicast2x2, 6>("multicast_2x2_s6", "multicast_2x2 with a ring of 6 stages"),
};

// ---- run(): verify every row, then time the correct ones ------------------------------------------

// The lesson's check: poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  return ::verify({v.name, v.summary, v.cluster, v.launch}, p);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem({static_cast<int>(opts.size_bytes / kRowBytes), kDefaultN, kDefaultK});
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const GemmMaps maps = problem.maps(v.cluster);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, problem.gmem_c.data(), problem.shape); },
        problem.compulsory_bytes());  // A and B read once, C written once, as in the lesson
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
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "tma_multicast_lab";
  info.title = "12 tma_multicast lab: other cluster shapes, and rings of two to six stages";
  info.explanation =
      "The lesson's matrix product with one thing changed per row: 8-block clusters (4 x 2, 2 x 4), only B or\n"
      "only A shared (1 x 2, 1 x 4, 4 x 1), and the ring of stages at 2, 4 and 6 with and without multicast.\n"
      "N = K = 1024; --size is the bytes of C (M rows of 4 KiB).";
  info.host_model = print_lab_model;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
