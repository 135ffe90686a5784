// 09_device_tensormap: tensor maps edited on the device, one pair per tensor of a batch.
// What you learn: one field of a map replaced on the device (edit_address: tensormap.replace in
// global memory, the fence.proxy.tensormap release/acquire pair, a TMA load through the edited
// map); the guide's recipe for a batch (a template copied to shared memory, tensormap.replace,
// tensormap.cp_fenceproxy's release, fence.proxy.tensormap's acquire before TMA reads the map).
// What changed from 08: the maps (no swizzle) are data in global memory, one pair per tensor.
// Hardware: compute capability 9.0 exactly, built for sm_90a (tensormap.replace needs it).
// Run: build/09_device_tensormap/device_tensormap [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
// API: https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/tensormap_replace.html
#include <cuda.h>  // CUtensorMap and its enums (types only: the driver library is never linked)
#include <cuda/ptx>

#include <stdexcept>  // std::string, std::vector and std::min come with the model

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/stage_cursor.hpp"
#include "course/tensor_map.hpp"
#include "course/wait.cuh"
#include "device_tensormap_model.hpp"  // the batch, its rules and reference (no GPU needed)

namespace ptx = cuda::ptx;
constexpr int kBlockThreads = 256;
constexpr int kWarpThreads = 32;
constexpr std::size_t kVerifyBytes = 64u << 20;               // the default --size (1 GiB: --bench)
constexpr std::size_t kSmemAlign = 128;                       // TMA boxes in shared memory
constexpr int kStages = 3;  // the ring: 3 boxes of up to 32 KiB, 2 blocks per SM (see the page)
constexpr std::size_t kTileBytes = kTileElems * sizeof(float);  // a stage: the widest box
constexpr int kMapBytes = sizeof(CUtensorMap);                // what cp_fenceproxy copies
constexpr int kMapWords = kMapBytes / sizeof(std::uint64_t);  // a warp copies 8 bytes per lane
static_assert(kMapBytes == 128, "a tensor map is 1024 bits (.b1024): cp_fenceproxy's one size");
static_assert(alignof(CUtensorMap) == 128, "cuda.h aligns CUtensorMap to 128 bytes");
static_assert(kTileElems % (4 * kBlockThreads) == 0, "the widest box is whole float4 per thread");

// ---- The minimal edit: one field, in global memory --------------------------------------------
/// [edit_address]
// TUTORIAL: the host encoded tensor t's *output* map; its input has the same shape at another
// address, so one replaced field makes the input map. Each block (one per box) edits its own
// copy in global memory, loads its box through it, doubles it, stores it through the host's map.
__global__ void __launch_bounds__(kBlockThreads)
    edit_address_kernel(const __grid_constant__ CUtensorMap out_map, const float* gmem_matrix_in,
                        const __grid_constant__ TensorLayout t, CUtensorMap* gmem_maps) {
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];  // [kTileRows][t.box_cols]
  __shared__ alignas(8) std::uint64_t full_bar;                // the box has landed
  CUtensorMap* gmem_map = &gmem_maps[blockIdx.x];              // this block's copy of the map
  const TileCoords at = tile_origin(t, blockIdx.x);
  const std::int32_t coords[2] = {at.x, at.y};  // innermost first
  if (threadIdx.x == 0) {
    *gmem_map = out_map;  // 128 bytes written through the generic proxy
    ptx::tensormap_replace_global_address(ptx::space_global, gmem_map, gmem_matrix_in);  // generic
    // Release: the generic writes above come before later reads of the map through the
    // tensormap proxy, which is how TMA reads a map...
    ptx::fence_proxy_tensormap_generic(ptx::sem_release, ptx::scope_cta);
    // ...and acquire: this thread's TMA reads the edited 128 bytes, not a copy cached before.
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_cta, gmem_map,
                                       ptx::n32_t<kMapBytes>{});
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival: this thread's, with the bytes
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the init is visible to TMA
    const std::uint32_t box_bytes = t.box_cols * kTileRows * sizeof(float);  // zero fill counts
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                         &full_bar, box_bytes);
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, gmem_map, coords,
                              &full_bar);
  }
  __syncthreads();  // the barrier is initialised before any thread waits on it
  while (!ptx::mbarrier_try_wait_parity(&full_bar, 0)) {}  // phase 0 completes: the box landed
  modify_box(smem_box, t.box_cols * kTileRows);
  ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared, before TMA reads the box
  __syncthreads();  // every thread's writes are fenced before the store
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &out_map, coords, smem_box);
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the box is read before the block exits
  }
}
/// [edit_address]
// ---- Encoding a batch's maps on the device ---------------------------------------------------
/// [replace_tensor_fields]
// The fields that differ from one tensor of the batch to the next, with the values of
// tensor_request(), which the host checked: tensormap.replace itself checks nothing.
__device__ void replace_tensor_fields(CUtensorMap* smem_map, const float* gmem_matrix,
                                      const TensorLayout& t) {
  const auto smem = ptx::space_shared;
  ptx::tensormap_replace_global_address(smem, smem_map, gmem_matrix);
  ptx::tensormap_replace_global_dim(smem, smem_map, ptx::n32_t<0>{}, std::uint32_t(t.cols));
  ptx::tensormap_replace_global_dim(smem, smem_map, ptx::n32_t<1>{}, std::uint32_t(t.rows));
  ptx::tensormap_replace_global_stride(smem, smem_map, ptx::n32_t<0>{},  // row pitch, in bytes
                                       std::uint64_t(t.pitch_elems) * sizeof(float));
  ptx::tensormap_replace_box_dim(smem, smem_map, ptx::n32_t<0>{}, std::uint32_t(t.box_cols));
}
/// [replace_tensor_fields]

/// [build_map]
// One warp (every lane calls this) builds map m of the batch ([2t]: input of tensor t, [2t + 1]:
// its output) in smem_map, starting from `initial` (the driver's template).
__device__ void build_map(CUtensorMap* smem_map, const CUtensorMap& initial, const Batch& batch,
                          int m, const float* gmem_in, float* gmem_out) {
  const int lane = threadIdx.x % kWarpThreads;
  if (lane < kMapWords) smem_map->opaque[lane] = initial.opaque[lane];
  __syncwarp();  // the whole starting value is in shared memory before one lane modifies it
  if (course::elect_one_lane()) {
    // One lane does every replace: each one counts as a write of the whole 1024-bit map.
    const TensorLayout& t = batch.tensors[m / kMapsPerTensor];
    const float* gmem_base = m % kMapsPerTensor == 0 ? gmem_in : gmem_out;
    replace_tensor_fields(smem_map, gmem_base + t.offset_elems, t);
  }
  __syncwarp();  // the finished map is visible to every lane: all 32 take part in the copy out
}
/// [build_map]

// Where the batch's maps live. A __device__ array is device memory: host code reaches it only
// through the symbol API (cudaGetSymbolAddress, cudaMemcpyToSymbol), never as `&gmem_batch_maps`.
__device__ CUtensorMap gmem_batch_maps[kMaxMaps];

/// [encode_kernel]
// One warp (one block) per map. The template is a __grid_constant__ parameter, the guide's
// preferred way; it is only read as data here, so any memory space would do.
__global__ void __launch_bounds__(kWarpThreads)
    encode_from_template_kernel(const __grid_constant__ CUtensorMap template_map,
                                const __grid_constant__ Batch batch, const float* gmem_in,
                                float* gmem_out, CUtensorMap* gmem_maps) {
  __shared__ CUtensorMap smem_map;  // 128-byte aligned by its type
  build_map(&smem_map, template_map, batch, blockIdx.x, gmem_in, gmem_out);
  // The warp copies the 128 bytes to global memory and releases them to the tensormap proxy at
  // .gpu scope: a thread of this GPU that acquires the map at .gpu scope reads this version.
  ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_gpu, &gmem_maps[blockIdx.x],
                               &smem_map, ptx::n32_t<kMapBytes>{});
}
/// [encode_kernel]
// ---- Using the maps: every tile of every tensor, each through its tensor's maps -------------
/// [acquire]
// The batch's maps in global memory, by a writer inside kScope. acquire(m), the other half of the
// release: before this thread's TMA reads map m through the tensormap proxy, it acquires the
// map's 128 bytes at a scope that holds the writer.
template <ptx::dot_scope kScope>
struct GlobalMaps {
  const CUtensorMap* gmem_maps;  // [2t]: input of tensor t, [2t + 1]: its output
  __device__ const CUtensorMap* map(int m) const { return &gmem_maps[m]; }
  __device__ void acquire(int m) const {
    ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_t<kScope>{}, &gmem_maps[m],
                                       ptx::n32_t<kMapBytes>{});
  }
};
/// [acquire]
// Starts the load of the box at `at` into smem_box: bar's one arrival, with the whole box in
// transaction bytes (the zeros filled in outside the tensor count too).
__device__ void load_box(const CUtensorMap* map, TileCoords at, std::uint32_t box_bytes,
                         float* smem_box, std::uint64_t* bar) {
  const std::int32_t coords[2] = {at.x, at.y};  // innermost first
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                       box_bytes);
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, map, coords, bar);
}
// Starts the store of smem_box to the box at `at` and closes a bulk async-group around it.
__device__ void store_box(const CUtensorMap* map, TileCoords at, const float* smem_box) {
  const std::int32_t coords[2] = {at.x, at.y};  // past the tensor's edge: not written
  ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_box);
  ptx::cp_async_bulk_commit_group();  // wait_group counts these groups, per issuing thread
}
/// [tile_loop]
// TUTORIAL: chapter 06's counter ring, with boxes. The leader loads the next untaken tile of the
// batch (a global counter) into each free stage and writes its number in smem_tile; past the last
// tile a plain arrival completes the phase: "none left". A stage is free once its box's store has
// read it. Maps: where each tensor's pair is, how it is acquired (GlobalMaps<scope>, or the lab's).
template <int kRingStages, class Maps>
__device__ void double_batch_tiles(const Maps& maps, const Batch& batch,
                                   unsigned long long* next_tile, bool is_leader) {
  extern __shared__ __align__(kSmemAlign) float smem_boxes[];  // [kRingStages][kTileElems]
  __shared__ alignas(8) std::uint64_t full_bar[kRingStages];  // the box landed, or none is left
  __shared__ int smem_tile[kRingStages];  // the stage's tile (>= num_tiles: none left)
  int taken_tensor = 0, acquired = -1, tensor = 0;  // the leader's last take, its acquire; in use
  auto take_and_load = [&](int stage) {   // the leader, into a free stage
    const int taken = static_cast<int>(atomicAdd(next_tile, 1ull));  // the next untaken tile
    smem_tile[stage] = taken;  // every thread read the stage's last one before the last block sync
    if (taken >= batch.num_tiles) {  // no bytes: the arrival alone completes the phase
      (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                 &full_bar[stage]);
      return;
    }
    while (taken >= batch.first_tile[taken_tensor + 1]) ++taken_tensor;
    if (taken_tensor != acquired) {  // the copying thread acquires, once per map (see the page)
      maps.acquire(kMapsPerTensor * taken_tensor);
      maps.acquire(kMapsPerTensor * taken_tensor + 1);
      acquired = taken_tensor;
    }
    const TensorLayout& t = batch.tensors[taken_tensor];
    load_box(maps.map(kMapsPerTensor * taken_tensor),
             tile_origin(t, taken - batch.first_tile[taken_tensor]),
             std::uint32_t(t.box_cols * kTileRows * sizeof(float)),
             smem_boxes + stage * kTileElems, &full_bar[stage]);
  };
  if (is_leader) {
    for (int s = 0; s < kRingStages; ++s) ptx::mbarrier_init(&full_bar[s], std::uint32_t{1});
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the init is visible to TMA
    for (int s = 0; s < kRingStages; ++s) take_and_load(s);  // prime: one tile per stage
  }
  __syncthreads();  // barriers initialised (and visible to every thread) before anyone waits
  for (course::StageCursor<kRingStages> cursor;; cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                                {"full", cursor.stage, cursor.phase});
    const int tile = smem_tile[cursor.stage];
    if (tile >= batch.num_tiles) break;  // the same answer in every thread (tiles only grow)
    while (tile >= batch.first_tile[tensor + 1]) ++tensor;
    const TensorLayout& t = batch.tensors[tensor];
    float* smem_box = smem_boxes + cursor.stage * kTileElems;
    modify_box(smem_box, t.box_cols * kTileRows);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared, before TMA reads them
    __syncthreads();  // every thread's writes are fenced (and smem_tile read) before the store
    if (is_leader) {
      store_box(maps.map(kMapsPerTensor * tensor + 1),
                tile_origin(t, tile - batch.first_tile[tensor]), smem_box);
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the box is read: refill the stage
      take_and_load(cursor.stage);
    }
  }
}
/// [tile_loop]
/// [consumer]
// Maps written by an encode kernel on this GPU: .gpu suffices on both sides.
__global__ void __launch_bounds__(kBlockThreads)
    consume_device_maps_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                               unsigned long long* next_tile) {
  double_batch_tiles<kStages>(GlobalMaps<ptx::dot_scope::gpu>{gmem_maps}, batch, next_tile,
                              course::elect_tma_leader());
}
/// [consumer]
// ---- Launchers and the variant table -------------------------------------------------------
// What every launcher needs: the batch, its data, the places the maps go, the tile counter.
struct BatchBuffers {
  Batch batch{};
  const float* gmem_in = nullptr;
  float* gmem_out = nullptr;
  CUtensorMap template_map{};                    // made once by the driver; every map starts there
  CUtensorMap* gmem_maps = nullptr;              // gmem_batch_maps, by its device address
  CUtensorMap* gmem_edit_maps = nullptr;         // edit_address: one map per box
  unsigned long long* gmem_next_tile = nullptr;  // the consumers' count of taken tiles
};
/// [launch_edit]
// One launch per tensor, one block per box; the driver encodes the output map on the host.
void launch_edit_address(const BatchBuffers& b, unsigned /*max_blocks: no persistent grid*/) {
  for (int i = 0; i < b.batch.num_tensors; ++i) {
    const TensorLayout& t = b.batch.tensors[i];
    const CUtensorMap out_map =
        course::encode_tiled(tensor_request(b.gmem_out + t.offset_elems, t));
    const int num_boxes = b.batch.first_tile[i + 1] - b.batch.first_tile[i];
    edit_address_kernel<<<num_boxes, kBlockThreads>>>(out_map, b.gmem_in + t.offset_elems, t,
                                                      b.gmem_edit_maps);
    COURSE_CHECK_LAUNCH();
  }
}
/// [launch_edit]
// A persistent grid: as many blocks of `kernel` (kRingStages boxes of dynamic shared memory) as
// fit at once, never more than tiles, at most `max_blocks` if not 0 (tests use a few blocks).
template <int kRingStages = kStages, class Kernel, class... Args>
void launch_resident(Kernel kernel, const BatchBuffers& b, unsigned max_blocks, const Args&... a) {
  constexpr std::size_t smem_bytes = kRingStages * kTileBytes;
  unsigned blocks = course::resident_blocks((const void*)kernel, kBlockThreads, smem_bytes);
  blocks = std::min(blocks, unsigned(b.batch.num_tiles));
  if (max_blocks != 0) blocks = std::min(blocks, max_blocks);
  // No tile taken yet. On the launch's stream: done after the previous kernel, before this one.
  COURSE_CHECK(cudaMemsetAsync(b.gmem_next_tile, 0, sizeof(unsigned long long)));
  kernel<<<blocks, kBlockThreads, smem_bytes>>>(a...);
  COURSE_CHECK_LAUNCH();
}
/// [launch_device]
void launch_device_template(const BatchBuffers& b, unsigned max_blocks) {
  encode_from_template_kernel<<<kMapsPerTensor * b.batch.num_tensors, kWarpThreads>>>(
      b.template_map, b.batch, b.gmem_in, b.gmem_out, b.gmem_maps);
  COURSE_CHECK_LAUNCH();
  // Stream order runs the consumer after the encoder; its blocks still acquire every map.
  launch_resident(consume_device_maps_kernel, b, max_blocks, b.gmem_maps, b.batch,
                  b.gmem_next_tile);
}
/// [launch_device]
using Launch = void (*)(const BatchBuffers& buffers, unsigned max_blocks);
struct Variant { const char* name; const char* summary; Launch launch; };
const Variant kVariants[] = {
    {"edit_address", "the minimal edit: the host's output map, its address replaced in global "
                     "memory, .cta fences; a block per box", &launch_edit_address},
    {"device_template", "driver template, a warp per map replaces 5 fields; .gpu",
     &launch_device_template},
};
// The batch of `shapes` in one input and one (poisoned, guarded) output allocation.
struct Problem {
  explicit Problem(const std::vector<TensorShape>& shapes)
      : plan(plan_batch(shapes)), host_in(std::size_t(std::max<std::int64_t>(plan.total_elems, 0))),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    const std::vector<std::string> problems = batch_problems(plan, gmem_in.data(), gmem_out.data());
    if (!problems.empty()) throw std::invalid_argument("no tensor maps for:" + joined(problems));
    course::fill_pattern(host_in);
    gmem_in.upload(host_in.data());
    expected = reference(host_in, plan);
    gmem_edit_maps = course::DeviceBuffer<CUtensorMap>(std::size_t(batch_param(plan).num_tiles));
    buffers = {batch_param(plan), gmem_in.data(), gmem_out.data(),
               course::encode_tiled(template_request(gmem_in.data())), nullptr,
               gmem_edit_maps.data(), gmem_next_tile.data()};
    void** maps = reinterpret_cast<void**>(&buffers.gmem_maps);  // the device address, by symbol
    COURSE_CHECK(cudaGetSymbolAddress(maps, gmem_batch_maps));
  }
  BatchPlan plan;
  std::vector<float> host_in, expected;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
  course::DeviceBuffer<CUtensorMap> gmem_edit_maps;
  course::DeviceBuffer<unsigned long long> gmem_next_tile{1};
  BatchBuffers buffers;
};
// Poisons output and map slots (no variant passes on another's maps), launches, syncs, compares.
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  p.gmem_out.poison();
  COURSE_CHECK(cudaMemset(p.buffers.gmem_maps, course::kPoisonByte, kMaxMaps * kMapBytes));
  COURSE_CHECK(cudaMemset(p.gmem_edit_maps.data(), course::kPoisonByte, p.gmem_edit_maps.bytes()));
  v.launch(p.buffers, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected);
}
void run(const course::Options& opts, course::Report& report) {
  Problem problem(default_shapes(opts.size_bytes));
  for (const Variant& v : kVariants) {
    course::check_and_time(  // the maps are made again in every timed run, as for a new batch
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.buffers, 0); }, batch_bytes_moved(problem.plan));
  }
}
course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "device_tensormap";
  info.title = "09 device_tensormap: tensor maps encoded on the device (tensormap.replace)";
  info.explanation =
      "Eight float matrices of different shapes in one allocation are doubled, each box through\n"
      "its tensor's maps: an output map from the host edited in global memory per box, or every\n"
      "map made on the device from a template (tensormap.replace), released and acquired.";
  info.requirement = {9, 0, true, "tensormap.replace (sm_90a)"};
  info.verify_bytes = kVerifyBytes;
  info.bench_bytes = 1u << 30;
  info.size_rule = batch_size_problem;  // whole MiB, at most 16 GiB
  info.host_model = [](std::ostream& out) { print_batch_model(out, kVerifyBytes); };
  info.in_flight = course::InFlightLaunch{"ring", (const void*)consume_device_maps_kernel,
                                          kBlockThreads, kStages * kTileBytes, kStages, kTileBytes};
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
