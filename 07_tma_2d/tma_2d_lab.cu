// 07_tma_2d lab: where the map lives, how many tiles are in flight, which tiles a block takes,
// and what padded rows cost.
//
// Each row changes one thing against the lesson, and is verified bit for bit before it is timed:
//   where the map lives: grid_constant (the lesson's kernel, for comparison), constant_memory
//     (one copy per module, cudaMemcpyToSymbol), global_memory (a cudaMalloc buffer, read after a
//     fence.proxy.tensormap acquire);
//   how many tiles are in flight, and which: pipeline_1stage .. pipeline_4stage, the lesson's
//     pipeline with the stage count as a template parameter and the tiles dealt in advance (the
//     guide's way: block b takes b, b + grid, ...); pipeline_in_order, the lesson's pipeline
//     itself (four stages, tiles taken in order from a counter), in the same run;
//   what the edge costs without the shift: padded_rows, the lesson's pipeline on rows of pitch - 3
//     floats (the last box of every row of tiles hangs over the edge).
// Hardware: compute capability 9.0, as the lesson.
// Run: build/07_tma_2d/tma_2d_lab [--bench] [--variant=NAME] [--size=N]
// API: cuda::ptx::fence_proxy_tensormap_generic https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      PTX fence.proxy.tensormap https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-membar
//      cudaMemcpyToSymbol https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html
#include "tma_2d.cu"  // the lesson: the model, the device building blocks, one_stage_tiles, launch_resident

namespace lab {

// ---- Where the map lives: __constant__ memory, global memory ---------------------------------

/// [constant_memory]
__constant__ CUtensorMap cmem_maps[2];  // [0] input, [1] output: written with cudaMemcpyToSymbol

__global__ void __launch_bounds__(kBlockThreads) constant_memory_kernel(TileGrid grid) {
  one_stage_tiles(&cmem_maps[0], &cmem_maps[1], grid, course::elect_tma_leader());
}
/// [constant_memory]

/// [global_memory]
__global__ void __launch_bounds__(kBlockThreads) global_memory_kernel(const CUtensorMap* gmem_maps, TileGrid grid) {
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    // The maps were written through the generic proxy (a copy from the host); TMA reads them
    // through the tensormap proxy. Acquire them for this thread, the only one that uses them;
    // .sys because the writer was the host.
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[0], ptx::n32_t<128>{});
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[1], ptx::n32_t<128>{});
  }
  one_stage_tiles(&gmem_maps[0], &gmem_maps[1], grid, is_leader);
}
/// [global_memory]

// ---- How many stages, and which tiles: the lesson's pipeline with both as parameters ---------

/// [ring_kernel]
// The lesson's pipeline_kernel with the stage count and the source of the tiles as parameters.
// kInOrder = false (pipeline_1stage .. 4stage): the tiles are dealt, load n of block b is tile
// b + n * gridDim.x, and the counter is not used. The end still reaches the block through the
// stage's barrier, as in the lesson, so that dealt and in order differ in the tiles alone.
// ring_kernel<4, true> is the lesson's kernel: the test TheInOrderRingIsTheLessonsPipeline
// checks that they compile to the same instructions; the pipeline_in_order row runs the lesson's.
template <int kStages, bool kInOrder>
__global__ void __launch_bounds__(kBlockThreads)
    ring_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                TileGrid grid, unsigned long long* next_tile) {
  // The refill comes one tile late, as in the lesson (its TUTORIAL says why).
  constexpr int kRefillLag = kStages > 1 ? 1 : 0;
  // A recorded tile is written after the block sync of one iteration and read kStages - lag
  // iterations later; the block sync of an iteration in between orders the two.
  static_assert(!kInOrder || kStages - kRefillLag >= 2, "taking tiles in order needs at least 3 stages");
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_tiles = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kSmemAlign - 1) / kSmemAlign * kSmemAlign);  // [kStages][kTileElems]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // stage s holds a complete input tile, or the end
  __shared__ int stage_tile[kStages];                      // in order: the tile in stage s (>= num_tiles: none)
  const bool is_leader = course::elect_tma_leader();
  // Load number n of this block goes to stage n % kStages, and is consumed by iteration n.
  // Dealt: it is tile blockIdx.x + n * gridDim.x, which every thread can compute. In order: the
  // counter's next tile, which only the leader knows. Either way, with none left a plain arrival
  // completes the stage's phase, and the block sees the end there.
  const auto dealt_tile = [&](int n) { return static_cast<int>(blockIdx.x) + n * static_cast<int>(gridDim.x); };
  const auto take_and_load = [&](int n) {  // leader only
    const int stage = n % kStages;
    const int tile = kInOrder ? static_cast<int>(atomicAdd(next_tile, 1ull)) : dealt_tile(n);
    if constexpr (kInOrder) stage_tile[stage] = tile;
    if (tile >= grid.num_tiles) {
      // No bytes: the leader's arrival alone completes the phase, which then says "none left".
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar[stage]);
      return;
    }
    load_tile(&in_map, grid, tile, smem_tiles + stage * kTileElems, &full_bar[stage]);
  };
  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});  // the leader's arrival
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // initialised barriers visible to TMA
    for (int n = 0; n < kStages; ++n) take_and_load(n);
  }
  __syncthreads();  // the barriers are initialised (and the first tiles recorded) before anyone waits

  course::StageCursor<kStages> cursor;
  for (int i = 0;; ++i, cursor.advance()) {
    float* smem_tile = smem_tiles + cursor.stage * kTileElems;
    // The stage's phase completed: its tile has landed, or the leader signalled the end.
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const int tile = kInOrder ? stage_tile[cursor.stage] : dealt_tile(i);
    if (tile >= grid.num_tiles) break;  // the same answer in every thread; a block's tiles only increase
    modify_tile(smem_tile);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
    __syncthreads();                            // all writes fenced before the store; nobody reads the stage after
    if (is_leader) {
      store_tile(&out_map, grid, tile, smem_tile);
      if (i >= kRefillLag) {
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<kRefillLag>{});  // the store of tile i - lag has read its stage
        take_and_load(i - kRefillLag + kStages);                        // refill that stage
      }
    }
  }
  // Shared memory must outlive every read of it: the block may not exit while a store reads.
  if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
}
/// [ring_kernel]

// No row launches the in-order ring (pipeline_in_order runs the lesson's kernel itself): it is
// compiled for the test that compares its instructions with the lesson's pipeline_kernel.
template __global__ void ring_kernel<4, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                                              TileGrid, unsigned long long*);

// ---- Launchers and the table of rows ---------------------------------------------------------

// The maps of one problem in every place a kernel may look for them: the lesson's host copies
// (parameters), and [in, out] in global memory; the __constant__ copies have no pointer.
struct PublishedMaps : TileMaps {
  const CUtensorMap* gmem = nullptr;
};

/// [publish]
// Copies the maps to __constant__ and to global memory. Done once per problem, not per launch:
// the map is a description of the matrix, and it only changes when the matrix does.
void publish_maps(PublishedMaps& maps, CUtensorMap* gmem_maps) {
  const CUtensorMap both[2] = {maps.in, maps.out};
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, both, sizeof(both)));
  COURSE_CHECK(cudaMemcpy(gmem_maps, both, sizeof(both), cudaMemcpyHostToDevice));
  maps.gmem = gmem_maps;
}
/// [publish]

using Launch = void (*)(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks);

// A lesson variant's launcher as a row of the lab (same-run comparisons).
template <::Launch kLessonLaunch>
void launch_lesson(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  kLessonLaunch(maps, grid, max_blocks);
}
void launch_constant_memory(const PublishedMaps&, const TileGrid& grid, unsigned max_blocks) {
  launch_resident(constant_memory_kernel, 0, grid, max_blocks, grid);
}
void launch_global_memory(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_resident(global_memory_kernel, 0, grid, max_blocks, maps.gmem, grid);
}

template <int kStages>
constexpr std::size_t ring_smem_bytes() {
  return kStages * std::size_t{kTileBytes} + kSmemAlign;  // + room to align the first stage
}
template <int kStages>
void launch_ring(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  unsigned long long* no_counter = nullptr;  // dealt tiles: the kernel never reads a counter
  launch_resident(ring_kernel<kStages, false>, ring_smem_bytes<kStages>(), grid, max_blocks, maps.in, maps.out, grid,
                  no_counter);
}

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  bool padded = false;  // pitch - kPaddingCols columns per row: row bytes not a multiple of 16
};
const Variant kVariants[] = {
    {"grid_constant", "the lesson's one-stage kernel, maps as const __grid_constant__ parameters",
     &launch_lesson<&launch_grid_constant>},
    {"constant_memory", "the same, maps in __constant__ memory (cudaMemcpyToSymbol)", &launch_constant_memory},
    {"global_memory", "the same, maps in global memory + fence.proxy.tensormap acquire", &launch_global_memory},
    {"pipeline_1stage", "persistent TMA pipeline, 1 stage of 32 KiB, tiles dealt to the blocks", &launch_ring<1>},
    {"pipeline_2stage", "the same, 2 stages, tiles dealt", &launch_ring<2>},
    {"pipeline_3stage", "the same, 3 stages, tiles dealt", &launch_ring<3>},
    {"pipeline_4stage", "the same, 4 stages (the lesson's depth), tiles dealt", &launch_ring<4>},
    {"pipeline_in_order", "the lesson's pipeline: 4 stages, tiles taken in order from a counter",
     &launch_lesson<&launch_pipeline>},
    {"padded_rows", "the lesson's pipeline on rows of pitch-3 floats: edge boxes, clipped stores",
     &launch_lesson<&launch_pipeline>, true},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem, with room in global memory for the maps.
struct Problem : ::Problem {
  Problem(int rows, int pitch_elems) : ::Problem(rows, pitch_elems), gmem_maps(2) {}
  // Encodes the maps of both matrices for this view and publishes them.
  PublishedMaps maps(const MatrixView& m) {
    PublishedMaps published{::Problem::maps(m)};
    publish_maps(published, gmem_maps.data());
    return published;
  }
  course::DeviceBuffer<CUtensorMap> gmem_maps;
};

// Poison, launch, synchronise, compare bit-exactly (padding and guard bands included).
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  const MatrixView m = p.view(v.padded);
  const PublishedMaps maps = p.maps(m);
  p.gmem_out.poison();
  v.launch(maps, tile_grid(m, false), max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(reference(p.host_in, m, false), p.pitch_elems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(static_cast<int>(opts.size_bytes / kRowBytes), kMatrixCols);
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    const MatrixView m = problem.view(v.padded);
    const PublishedMaps maps = problem.maps(m);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(maps, tile_grid(m, false), 0); },
        2 * std::size_t(m.rows) * m.cols * sizeof(float));  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "tma_2d_lab";
  info.title = "07 tma_2d lab: map placement, stage sweep, dealt tiles, padded rows";
  info.explanation =
      "The lesson's matrix (16384-float rows; --size sets the row count), doubled tile by tile with\n"
      "one thing changed per row: the map in __constant__ or global memory, 1-4 stages in flight with\n"
      "the tiles dealt instead of taken in order from the counter, rows padded to the pitch.";
  info.host_model = [](std::ostream& out) {
    out << kBlockThreads << " threads per block; pipelines of 1-4 stages, " << ring_smem_bytes<1>() / 1024 << " to "
        << ring_smem_bytes<4>() / 1024 << " KiB of shared memory per block\n";
    print_map_model(out);
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
