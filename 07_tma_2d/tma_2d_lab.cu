// 07_tma_2d lab: where the map lives, the ring's depth and grid, and which tiles a block takes.
//
// Each row changes one thing against the lesson, and is verified bit for bit before it is timed:
//   where the map lives: constant_memory (one copy per module, cudaMemcpyToSymbol) and
//     global_memory (a cudaMalloc buffer, read after a fence.proxy.tensormap acquire), both the
//     lesson's minimal_tile, against the lesson's minimal row (the map as a parameter);
//   the ring's depth and grid: ring_2_stages (the lesson's ring_kernel<2>), ring_resident (the
//     lesson's ring on a persistent grid, each block striding over the tiles);
//   which tiles a block takes: in_order, a four-stage pipeline whose elected leader takes the
//     next tile from a global counter (tiles in the order of the matrix, whatever the blocks'
//     speeds), records it per stage, and frees stages with wait_group_read instead of an empty
//     barrier;
//   the ceiling: no_sync, the same bytes read and written with plain float4 loads and stores.
// Hardware: compute capability 9.0, as the lesson.
// Run: build/07_tma_2d/tma_2d_lab [--bench] [--variant=NAME] [--size=N]
// API: cuda::ptx::fence_proxy_tensormap_generic, PTX fence.proxy.tensormap:
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      cudaMemcpyToSymbol: https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html
#include "tma_2d.cu"  // the lesson: the model, minimal_tile, ring_kernel, the building blocks

#include <stdexcept>
#include <string>

namespace lab {

// ---- Where the map lives: __constant__ memory, global memory ---------------------------------

/// [constant_memory]
__constant__ CUtensorMap cmem_maps[2];  // [0] input, [1] output: written with cudaMemcpyToSymbol

__global__ void __launch_bounds__(kBlockThreads) constant_memory_kernel(TileGrid grid) {
  minimal_tile(&cmem_maps[0], &cmem_maps[1], grid);
}
/// [constant_memory]

/// [global_memory]
__global__ void __launch_bounds__(kBlockThreads)
    global_memory_kernel(const CUtensorMap* gmem_maps, TileGrid grid) {
  if (threadIdx.x == 0) {
    // The maps were written through the generic proxy (a copy from the host); TMA reads them
    // through the tensormap proxy. Acquire them for this thread, the only one that uses them;
    // .sys because the writer was the host.
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[0],
                                       ptx::n32_t<128>{});
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_sys, &gmem_maps[1],
                                       ptx::n32_t<128>{});
  }
  minimal_tile(&gmem_maps[0], &gmem_maps[1], grid);
}
/// [global_memory]

// ---- Tiles in order: a global counter instead of the static stride ---------------------------

/// [in_order]
// TUTORIAL: the ring deals the tiles out in advance (block b takes b, b + grid, ...). Here the
// leader takes the next untaken tile from a counter in global memory each time it fills a
// stage: whatever the blocks' speeds, the tiles in flight stay one compact window of the matrix,
// and a fast block takes more tiles. Only the leader knows which tile it took, so it records it
// per stage; past the last tile it completes the stage's phase with a plain arrival and no
// bytes, and every thread reads "none left" there. No empty barrier: the leader refills the
// stage of tile i - 1 after its own wait_group_read, one store late.
__global__ void __launch_bounds__(kBlockThreads)
    in_order_kernel(const __grid_constant__ CUtensorMap in_map,
                    const __grid_constant__ CUtensorMap out_map, TileGrid grid,
                    unsigned long long* next_tile) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_tiles = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kSmemAlign - 1) / kSmemAlign * kSmemAlign);
  __shared__ alignas(8) std::uint64_t full_bar[kStages];  // a complete tile, or the end
  __shared__ int stage_tile[kStages];  // the tile in stage s (>= num_tiles: none left)
  const bool is_leader = course::elect_tma_leader();
  // Load number n of this block goes to stage n % kStages and is consumed by iteration n.
  const auto take_and_load = [&](int n) {  // leader only
    const int stage = n % kStages;
    const int tile = static_cast<int>(atomicAdd(next_tile, 1ull));  // the next untaken tile
    stage_tile[stage] = tile;
    if (tile >= grid.num_tiles) {  // no bytes: the leader's arrival alone completes the phase
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                 &full_bar[stage]);
      return;
    }
    load_tile(&in_map, grid, tile, smem_tiles + stage * kTileElems, &full_bar[stage]);
  };
  if (is_leader) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full_bar[s], 1);  // the leader's
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
    for (int n = 0; n < kStages; ++n) take_and_load(n);
  }
  __syncthreads();  // barriers initialised and first tiles recorded before anyone waits

  course::StageCursor<kStages> cursor;
  for (int i = 0;; ++i, cursor.advance()) {
    float* smem_tile = smem_tiles + cursor.stage * kTileElems;
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});  // landed, or the end
    // A record is written after one iteration's block sync and read kStages - 1 later.
    const int tile = stage_tile[cursor.stage];
    if (tile >= grid.num_tiles) break;  // the same answer in every thread
    modify_tile(smem_tile, threadIdx.x, kBlockThreads);
    ptx::fence_proxy_async(ptx::space_shared);  // my writes, visible to the async proxy
    __syncthreads();  // all writes fenced before the store; nobody reads the stage after
    if (is_leader) {
      store_tile(&out_map, grid, tile, smem_tile);
      if (i >= 1) {
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{});  // tile i - 1's store has read
        take_and_load(i - 1 + kStages);                        // refill its stage
      }
    }
  }
  if (is_leader) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // smem outlives reads
}
/// [in_order]

// ---- Launchers and the table of rows ---------------------------------------------------------

// The maps of one problem in every place a kernel may look for them: the lesson's host copies
// (parameters), and [in, out] in global memory; the __constant__ copies have no pointer.
struct PublishedMaps : TileMaps {
  const CUtensorMap* gmem = nullptr;
  const float* gmem_in = nullptr;  // the matrices themselves, for the ceiling (no_sync)
  float* gmem_out = nullptr;
  MatrixView view{};
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

// A lesson variant's launcher as a row of the lab.
template <::Launch kLessonLaunch>
void launch_lesson(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  kLessonLaunch(maps, grid, max_blocks);
}
void launch_constant_memory(const PublishedMaps&, const TileGrid& grid, unsigned) {
  constant_memory_kernel<<<static_cast<unsigned>(grid.num_tiles), kBlockThreads>>>(grid);
  COURSE_CHECK_LAUNCH();
}
void launch_global_memory(const PublishedMaps& maps, const TileGrid& grid, unsigned) {
  global_memory_kernel<<<static_cast<unsigned>(grid.num_tiles), kBlockThreads>>>(maps.gmem,
                                                                                 grid);
  COURSE_CHECK_LAUNCH();
}

// A persistent grid: as many blocks as fit on the GPU at once, never more than tiles, and
// at most `max_blocks` when that is not 0 (tests send many tiles through a few blocks). Each
// block strides over the tiles, or takes them from a counter (in_order).
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, int threads, std::size_t smem_bytes, const TileGrid& grid,
                     unsigned max_blocks, const Args&... args) {
  // Over 48 KiB of shared memory per block the kernel is opted in first (chapter 11).
  std::size_t blocks = course::resident_blocks((const void*)kernel, threads, smem_bytes);
  if (blocks == 0) {
    throw course::CudaError("no block fits on an SM with " + std::to_string(smem_bytes) +
                            " bytes of shared memory");
  }
  if (max_blocks != 0 && max_blocks < blocks) blocks = max_blocks;
  if (static_cast<std::size_t>(grid.num_tiles) < blocks) blocks = grid.num_tiles;
  kernel<<<static_cast<unsigned>(blocks), threads, smem_bytes>>>(args...);
  COURSE_CHECK_LAUNCH();
}

/// [launch_in_order]
// The count of taken tiles. Zeroed before every launch, on the launch's stream; two launches
// running at once would share it, and would each need their own.
__device__ unsigned long long gmem_next_tile;

void launch_in_order(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  void* next_tile = nullptr;
  COURSE_CHECK(cudaGetSymbolAddress(&next_tile, gmem_next_tile));
  COURSE_CHECK(cudaMemsetAsync(next_tile, 0, sizeof(unsigned long long)));  // before the kernel
  launch_resident(in_order_kernel, kBlockThreads, ring_smem_bytes(kStages), grid, max_blocks,
                  maps.in, maps.out, grid, static_cast<unsigned long long*>(next_tile));
}
/// [launch_in_order]

/// [ring_resident]
// The lesson's ring, unchanged, on a persistent grid instead of a block per four tiles.
void launch_ring_resident(const PublishedMaps& maps, const TileGrid& grid, unsigned max_blocks) {
  launch_resident(ring_kernel<kStages>, kRingThreads, ring_smem_bytes(kStages), grid, max_blocks,
                  maps.in, maps.out, grid);
}
/// [ring_resident]

// ---- The ceiling: the same bytes with no TMA, no shared memory, no barrier -----------------
/// [no_sync]
// One thread per float4 of the matrix, doubled straight in global memory (rows of the whole pitch
// are one contiguous array); with fewer blocks (a test's cap) each thread strides over the grid.
__global__ void __launch_bounds__(kBlockThreads)
    no_sync_kernel(const float4* __restrict__ gmem_in, float4* __restrict__ gmem_out,
                   std::size_t num_vecs) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t v = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; v < num_vecs;
       v += stride) {
    const float4 x = gmem_in[v];
    gmem_out[v] = make_float4(modify(x.x), modify(x.y), modify(x.z), modify(x.w));
  }
}
/// [no_sync]
void launch_no_sync(const PublishedMaps& maps, const TileGrid&, unsigned max_blocks) {
  const MatrixView& m = maps.view;
  if (m.cols != m.pitch_elems) throw std::invalid_argument("no_sync: rows must fill the pitch");
  // A pitch is whole 16-byte units (the map's rule), so the matrix is whole float4s.
  const std::size_t num_vecs = std::size_t(m.rows) * m.pitch_elems / 4;
  std::size_t blocks = (num_vecs + kBlockThreads - 1) / kBlockThreads;
  if (max_blocks != 0 && max_blocks < blocks) blocks = max_blocks;
  no_sync_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(
      reinterpret_cast<const float4*>(maps.gmem_in), reinterpret_cast<float4*>(maps.gmem_out),
      num_vecs);
  COURSE_CHECK_LAUNCH();
}

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  bool padded = false;  // pitch - kPaddingCols columns per row: row bytes not a multiple of 16
};
const Variant kVariants[] = {
    {"constant_memory", "the lesson's minimal kernel, maps in __constant__ memory",
     &launch_constant_memory},
    {"global_memory", "the same, maps in global memory + fence.proxy.tensormap acquire",
     &launch_global_memory},
    {"ring_2_stages", "the lesson's ring with 2 stages of 32 KiB", &launch_lesson<&launch_ring<2>>},
    {"ring_resident", "the lesson's ring on a persistent grid, each block striding over tiles",
     &launch_ring_resident},
    {"in_order", "4 stages, tiles taken in order from a global counter, no empty barrier",
     &launch_in_order},
    {"no_sync", "the ceiling: the matrix doubled straight in global memory, no TMA or barrier",
     &launch_no_sync},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem, with room in global memory for the maps.
struct Problem : ::Problem {
  Problem(int rows, int pitch_elems) : ::Problem(rows, pitch_elems), gmem_maps(2) {}
  // Encodes the maps of both matrices for this view and publishes them.
  PublishedMaps maps(const MatrixView& m) {
    PublishedMaps published{::Problem::maps(m)};
    publish_maps(published, gmem_maps.data());
    published.gmem_in = gmem_in.data();
    published.gmem_out = gmem_out.data();
    published.view = m;
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
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, tile_grid(m, false), 0); },
        2 * std::size_t(m.rows) * m.cols * sizeof(float));  // each element read and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "tma_2d_lab";
  info.title = "07 tma_2d lab: map placement, ring depth, tiles in order";
  info.explanation =
      "The lesson's matrix (16384-float rows; --size sets the row count), doubled tile by tile\n"
      "with one thing changed per row: the map in __constant__ or global memory, the ring's\n"
      "depth, its grid, the tiles taken in order from a global counter.";
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
