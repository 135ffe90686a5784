// 09_device_tensormap: tensor maps encoded on the device, one pair per tensor of a batch.
//
// What you learn: why a kernel makes its own tensor maps (a batch of matrices of different shapes
// in one launch); the guide's recipe (a driver-made template copied to shared memory, changed with
// tensormap.replace, released by tensormap.cp_fenceproxy, acquired with fence.proxy.tensormap before
// TMA reads it); a map built from zeros; scopes by who wrote the map; the host check before encoding.
// What changed from 08: the maps (no swizzle) are data in global memory, one pair per tensor, made by a kernel.
// The one-box loop takes its tiles in order from a counter, as chapter 07's pipeline does.
// Hardware: compute capability 9.0 exactly, built for sm_90a (tensormap.replace is architecture-specific).
// Run: build/09_device_tensormap/device_tensormap [--bench] [--variant=NAME]; the lab: device_tensormap_lab
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#encoding-a-tensor-map-on-device (4.11.2.2.1-4)
// API: cuda::ptx::tensormap_replace_* https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/tensormap_replace.html
//      cuda::ptx::tensormap_cp_fenceproxy https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/tensormap_cp_fenceproxy.html
//      cuda::ptx::fence_proxy_tensormap_generic https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      PTX tensormap.replace https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-tensormap-replace
//      PTX tensormap.cp_fenceproxy https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-tensormap-cp-fenceproxy
//      PTX fence.proxy.tensormap https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-membar
//      cudaGetSymbolAddress, cudaMemcpyToSymbol https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html
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
#include "device_tensormap_model.hpp"  // the batch, its rules and reference, PTX field codes (no GPU needed)

namespace ptx = cuda::ptx;

constexpr int kBlockThreads = 256;
constexpr int kWarpThreads = 32;
constexpr std::size_t kVerifyBytes = 64u << 20;                 // the default --size (1 GiB with --bench)
constexpr std::size_t kSmemAlign = 128;                         // TMA shared-memory boxes: 128-byte aligned
constexpr int kMapBytes = sizeof(CUtensorMap);                  // tensormap.cp_fenceproxy copies exactly this
constexpr int kMapWords = kMapBytes / sizeof(std::uint64_t);    // a warp copies a map 8 bytes per lane
static_assert(kMapBytes == 128, "a tensor map is 1024 bits (.b1024), and cp_fenceproxy's only size is 128");
static_assert(alignof(CUtensorMap) == 128, "cuda.h aligns CUtensorMap to 128 bytes: shared and global copies inherit it");
static_assert(kTileElems % (4 * kBlockThreads) == 0, "the widest box splits into whole float4 per thread");

// ---- Encoding a map on the device ----------------------------------------------------------

/// [replace_tensor_fields]
// The fields that differ from one tensor of the batch to the next, with the values of
// tensor_request(), which the host checked: tensormap.replace itself checks nothing.
__device__ void replace_tensor_fields(CUtensorMap* smem_map, const float* gmem_matrix, const TensorLayout& t) {
  ptx::tensormap_replace_global_address(ptx::space_shared, smem_map, gmem_matrix);
  ptx::tensormap_replace_global_dim(ptx::space_shared, smem_map, ptx::n32_t<0>{}, static_cast<std::uint32_t>(t.cols));
  ptx::tensormap_replace_global_dim(ptx::space_shared, smem_map, ptx::n32_t<1>{}, static_cast<std::uint32_t>(t.rows));
  ptx::tensormap_replace_global_stride(ptx::space_shared, smem_map, ptx::n32_t<0>{},  // globalStrides[0], in bytes
                                       static_cast<std::uint64_t>(t.pitch_elems) * sizeof(float));
  ptx::tensormap_replace_box_dim(ptx::space_shared, smem_map, ptx::n32_t<0>{}, static_cast<std::uint32_t>(t.box_cols));
}
/// [replace_tensor_fields]
/// [replace_fixed_fields]
// What the driver's template already holds and a zeroed buffer does not: the rest of
// tensor_request(). The rank is zero-based; the last four take PTX's numbers (ptx_codes).
__device__ void replace_fixed_fields(CUtensorMap* smem_map) {
  ptx::tensormap_replace_rank(ptx::space_shared, smem_map, std::uint32_t{kRank - 1});
  ptx::tensormap_replace_box_dim(ptx::space_shared, smem_map, ptx::n32_t<1>{}, std::uint32_t{kTileRows});
  ptx::tensormap_replace_element_stride(ptx::space_shared, smem_map, ptx::n32_t<0>{}, std::uint32_t{1});
  ptx::tensormap_replace_element_stride(ptx::space_shared, smem_map, ptx::n32_t<1>{}, std::uint32_t{1});
  ptx::tensormap_replace_elemtype(ptx::space_shared, smem_map, ptx::n32_t<ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)>{});
  ptx::tensormap_replace_interleave_layout(ptx::space_shared, smem_map,
                                           ptx::n32_t<ptx_interleave(CU_TENSOR_MAP_INTERLEAVE_NONE)>{});
  ptx::tensormap_replace_swizzle_mode(ptx::space_shared, smem_map, ptx::n32_t<ptx_swizzle(CU_TENSOR_MAP_SWIZZLE_NONE)>{});
  ptx::tensormap_replace_fill_mode(ptx::space_shared, smem_map,
                                   ptx::n32_t<ptx_fill_mode(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)>{});
}
/// [replace_fixed_fields]

/// [build_map]
// One warp (every lane calls this) builds map m of the batch ([2t]: input of tensor t, [2t + 1]:
// its output) in smem_map, starting from `initial` (the driver's template) or, when null, from zeros.
__device__ void build_map(CUtensorMap* smem_map, const CUtensorMap* initial, const Batch& batch, int m,
                          const float* gmem_in, float* gmem_out) {
  const int lane = threadIdx.x % kWarpThreads;
  if (lane < kMapWords) smem_map->opaque[lane] = initial != nullptr ? initial->opaque[lane] : 0;
  __syncwarp();  // the whole starting value is in shared memory before one lane modifies it
  if (course::elect_one_lane()) {
    // One lane does every replace: each one counts as a write of the whole 1024-bit map.
    const TensorLayout& t = batch.tensors[m / kMapsPerTensor];
    const float* gmem_base = m % kMapsPerTensor == 0 ? gmem_in : gmem_out;
    if (initial == nullptr) replace_fixed_fields(smem_map);
    replace_tensor_fields(smem_map, gmem_base + t.offset_elems, t);
  }
  __syncwarp();  // the finished map is visible to every lane: all 32 take part in the copy out
}
/// [build_map]

// Where the batch's maps live. A __device__ array is device memory: host code reaches it only
// through the symbol API (cudaGetSymbolAddress, cudaMemcpyToSymbol), never as `&gmem_batch_maps`.
__device__ CUtensorMap gmem_batch_maps[kMaxMaps];

/// [encode_kernels]
// One warp (one block) per map. The template is a __grid_constant__ parameter, the guide's
// preferred way; it is only read as data here, so any memory space would do.
__global__ void __launch_bounds__(kWarpThreads)
    encode_from_template_kernel(const __grid_constant__ CUtensorMap template_map, const __grid_constant__ Batch batch,
                                const float* gmem_in, float* gmem_out, CUtensorMap* gmem_maps) {
  __shared__ CUtensorMap smem_map;  // 128-byte aligned by its type
  build_map(&smem_map, &template_map, batch, blockIdx.x, gmem_in, gmem_out);
  // The warp copies the 128 bytes to global memory and releases them to the tensormap proxy at
  // .gpu scope: a thread of this GPU that acquires the map at .gpu scope reads this version.
  ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_gpu, &gmem_maps[blockIdx.x], &smem_map,
                               ptx::n32_t<kMapBytes>{});
}
// sm_90a only: 128 zero bytes in shared memory are a valid start; no driver call at all.
__global__ void __launch_bounds__(kWarpThreads)
    encode_from_zero_kernel(const __grid_constant__ Batch batch, const float* gmem_in, float* gmem_out,
                            CUtensorMap* gmem_maps) {
  __shared__ CUtensorMap smem_map;
  build_map(&smem_map, nullptr, batch, blockIdx.x, gmem_in, gmem_out);
  ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_gpu, &gmem_maps[blockIdx.x], &smem_map,
                               ptx::n32_t<kMapBytes>{});  // as above: released at .gpu scope
}
/// [encode_kernels]

// ---- Using the maps: every tile of every tensor, each through its tensor's maps -------------
/// [acquire]
// The other half of the release: before this thread's TMA reads a map in global memory through
// the tensormap proxy, it acquires the map's 128 bytes at a scope that holds the writer.
template <ptx::dot_scope kScope>
__device__ void acquire_map(const CUtensorMap* gmem_map) {
  ptx::fence_proxy_tensormap_generic(ptx::sem_acquire, ptx::scope_t<kScope>{}, gmem_map, ptx::n32_t<kMapBytes>{});
}
/// [acquire]
// Starts the load of the box at `at` into smem_box, completing on `bar` with box_bytes.
__device__ void load_box(const CUtensorMap* map, TileCoords at, std::uint32_t box_bytes, float* smem_box,
                         std::uint64_t* bar) {
  const std::int32_t coords[2] = {at.x, at.y};  // innermost first; outside the tensor: zero fill
  // The barrier's one arrival, plus the whole box in transaction bytes (the zeros count too).
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, box_bytes);
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, map, coords, bar);
}
// Starts the store of smem_box to the box at `at` and closes a bulk async-group around it.
__device__ void store_box(const CUtensorMap* map, TileCoords at, const float* smem_box) {
  const std::int32_t coords[2] = {at.x, at.y};  // past the tensor's edge: not written
  ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_box);
  ptx::cp_async_bulk_commit_group();  // wait_group counts these groups, per issuing thread
}
// The computation, in place: each thread doubles float4 chunks of the box.
__device__ void modify_box(float* smem_box, int box_elems) {
  float4* chunks = reinterpret_cast<float4*>(smem_box);
  for (int c = threadIdx.x; c < box_elems / 4; c += kBlockThreads) {
    const float4 v = chunks[c];
    chunks[c] = make_float4(modify(v.x), modify(v.y), modify(v.z), modify(v.w));
  }
}

/// [tile_loop]
// TUTORIAL: tiles taken in order. Dealt tiles (block b takes b, b + grid, ...: the lab's
// tiles_dealt row) let the blocks drift apart, the faster as this batch's boxes differ in size;
// chapters 06 and 07 show what that costs. The leader takes the next untaken tile from a global
// counter whenever the box is free and records it in smem_tile; past the last tile a plain arrival
// completes the phase: "none left". gmem_maps: each tensor's pair; kScope: where their writer was.
template <ptx::dot_scope kScope>
__device__ void double_batch_tiles(const CUtensorMap* gmem_maps, const Batch& batch, unsigned long long* next_tile,
                                   bool is_leader) {
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];  // [kTileRows][box_cols] of the current tensor
  __shared__ alignas(8) std::uint64_t full_bar;                // the box has landed, or no tile is left
  __shared__ int smem_tile;                                    // the tile in smem_box (>= num_tiles: none left)
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival per phase: the leader's, with bytes or without
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // ...and to every thread, before anyone waits on it
  int tensor = 0, acquired = -1;  // the current tile's (a block's tiles only go up); the last the leader acquired
  for (course::StageCursor<1> cursor;; cursor.advance()) {  // a ring of one box: the parity flips every tile
    if (is_leader) {  // the box is free
      const int taken = static_cast<int>(atomicAdd(next_tile, 1ull));  // the next tile nobody has taken
      smem_tile = taken;  // every thread read the previous one before the last block sync
      if (taken >= batch.num_tiles) {
        // No bytes: the leader's arrival alone completes the phase, which then says "none left".
        (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar);
      } else {
        while (taken >= batch.first_tile[tensor + 1]) ++tensor;
        const TensorLayout& t = batch.tensors[tensor];
        if (tensor != acquired) {
          // First use of this tensor's maps by this thread. Stream order or a barrier is not
          // enough: the thread that issues the copies acquires, once per map while it is unchanged.
          acquire_map<kScope>(&gmem_maps[kMapsPerTensor * tensor]);
          acquire_map<kScope>(&gmem_maps[kMapsPerTensor * tensor + 1]);
          acquired = tensor;
        }
        load_box(&gmem_maps[kMapsPerTensor * tensor], tile_origin(t, taken - batch.first_tile[tensor]),
                 static_cast<std::uint32_t>(t.box_cols * kTileRows * sizeof(float)), smem_box, &full_bar);
      }
    }
    course::bounded_wait_parity(&full_bar, cursor.phase, {"full", cursor.stage, cursor.phase});  // landed, or the end
    const int tile = smem_tile;
    if (tile >= batch.num_tiles) break;  // the same answer in every thread
    while (tile >= batch.first_tile[tensor + 1]) ++tensor;
    const TensorLayout& t = batch.tensors[tensor];
    modify_box(smem_box, t.box_cols * kTileRows);
    ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
    __syncthreads();  // every thread's writes are fenced (and smem_tile read) before the store
    if (is_leader) {
      store_box(&gmem_maps[kMapsPerTensor * tensor + 1], tile_origin(t, tile - batch.first_tile[tensor]), smem_box);
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the store has read smem_box: it may be refilled
    }
  }
}
/// [tile_loop]

/// [consumers]
// Maps written from the host (cudaMemcpyToSymbol): the writer is outside the GPU, so .sys.
__global__ void __launch_bounds__(kBlockThreads)
    consume_host_maps_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                             unsigned long long* next_tile) {
  double_batch_tiles<ptx::dot_scope::sys>(gmem_maps, batch, next_tile, course::elect_tma_leader());
}
// Maps written by an encode kernel on this GPU: .gpu suffices on both sides.
__global__ void __launch_bounds__(kBlockThreads)
    consume_device_maps_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                               unsigned long long* next_tile) {
  double_batch_tiles<ptx::dot_scope::gpu>(gmem_maps, batch, next_tile, course::elect_tma_leader());
}
/// [consumers]

// ---- Launchers and the variant table -------------------------------------------------------
// What every launcher needs: the batch, its data, the places the maps go, the tile counter.
struct BatchBuffers {
  Batch batch{};
  const float* gmem_in = nullptr;
  float* gmem_out = nullptr;
  CUtensorMap template_map{};                    // made once by the driver; every tensor's map starts from it
  CUtensorMap* gmem_maps = nullptr;              // gmem_batch_maps, by its device address
  unsigned long long* gmem_next_tile = nullptr;  // the consumers' count of taken tiles
};

// A persistent grid: as many blocks of `kernel` as fit on the GPU at once, never more than there
// are tiles, at most `max_blocks` when that is not 0 (tests send many tiles through a few blocks).
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, const BatchBuffers& b, unsigned max_blocks, const Args&... args) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, 0));
  unsigned blocks = std::min(static_cast<unsigned>(num_sms * blocks_per_sm), static_cast<unsigned>(b.batch.num_tiles));
  if (max_blocks != 0) blocks = std::min(blocks, max_blocks);
  // No tile taken yet. On the launch's stream: done after the previous kernel, before this one.
  COURSE_CHECK(cudaMemsetAsync(b.gmem_next_tile, 0, sizeof(unsigned long long)));
  kernel<<<blocks, kBlockThreads>>>(args...);
  COURSE_CHECK_LAUNCH();
}
/// [launch_host]
void launch_host_encoded(const BatchBuffers& b, unsigned max_blocks) {
  CUtensorMap maps[kMaxMaps];
  for (int m = 0; m < kMapsPerTensor * b.batch.num_tensors; ++m) {  // as build_map: [2t] input, [2t + 1] output
    const TensorLayout& t = b.batch.tensors[m / kMapsPerTensor];
    maps[m] = course::encode_tiled(tensor_request((m % kMapsPerTensor == 0 ? b.gmem_in : b.gmem_out) + t.offset_elems, t));
  }
  // Host code names a __device__ variable through the symbol API, not through its address.
  COURSE_CHECK(cudaMemcpyToSymbol(gmem_batch_maps, maps, kMapsPerTensor * b.batch.num_tensors * sizeof(CUtensorMap)));
  launch_resident(consume_host_maps_kernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
/// [launch_host]
/// [launch_device]
void launch_device_template(const BatchBuffers& b, unsigned max_blocks) {
  encode_from_template_kernel<<<kMapsPerTensor * b.batch.num_tensors, kWarpThreads>>>(b.template_map, b.batch, b.gmem_in,
                                                                                      b.gmem_out, b.gmem_maps);
  COURSE_CHECK_LAUNCH();
  // Stream order runs the consumer after the encoder; its blocks still acquire every map.
  launch_resident(consume_device_maps_kernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
void launch_device_zero(const BatchBuffers& b, unsigned max_blocks) {
  encode_from_zero_kernel<<<kMapsPerTensor * b.batch.num_tensors, kWarpThreads>>>(b.batch, b.gmem_in, b.gmem_out,
                                                                                  b.gmem_maps);
  COURSE_CHECK_LAUNCH();
  launch_resident(consume_device_maps_kernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
/// [launch_device]

using Launch = void (*)(const BatchBuffers& buffers, unsigned max_blocks);
struct Variant { const char* name; const char* summary; Launch launch; };
const Variant kVariants[] = {
    {"host_encoded", "maps by the driver on the host, cudaMemcpyToSymbol; acquired at .sys", &launch_host_encoded},
    {"device_template", "driver template, a warp per map replaces 5 fields; .gpu", &launch_device_template},
    {"device_zero", "no driver: every field replaced in zeroed shared memory (sm_90a), .gpu", &launch_device_zero},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------
// The batch of `shapes` in one input and one (poisoned, guarded) output allocation.
struct Problem {
  explicit Problem(const std::vector<TensorShape>& shapes)
      : plan(plan_batch(shapes)), host_in(static_cast<std::size_t>(std::max<std::int64_t>(plan.total_elems, 0))),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    const std::vector<std::string> problems = batch_problems(plan, gmem_in.data(), gmem_out.data());
    if (!problems.empty()) throw std::invalid_argument("the batch cannot be described by tensor maps:" + joined(problems));
    course::fill_pattern(host_in);
    gmem_in.upload(host_in.data());
    expected = reference(host_in, plan);
    buffers.batch = batch_param(plan);
    buffers.gmem_in = gmem_in.data();
    buffers.gmem_out = gmem_out.data();
    buffers.gmem_next_tile = gmem_next_tile.data();
    buffers.template_map = course::encode_tiled(template_request(gmem_in.data()));
    COURSE_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&buffers.gmem_maps), gmem_batch_maps));
  }
  BatchPlan plan;
  std::vector<float> host_in, expected;
  course::DeviceBuffer<float> gmem_in;
  course::GuardedOutput<float> gmem_out;
  course::DeviceBuffer<unsigned long long> gmem_next_tile{1};
  BatchBuffers buffers;
};

// Poisons output and map slots (no variant passes on another's maps), launches, syncs, compares bit-exactly.
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  p.gmem_out.poison();
  COURSE_CHECK(cudaMemset(p.buffers.gmem_maps, course::kPoisonByte, sizeof(CUtensorMap) * kMaxMaps));
  v.launch(p.buffers, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(p.expected);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(default_shapes(opts.size_bytes));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(problem.buffers, 0); },
        batch_bytes_moved(problem.plan));  // maps are made again in every timed run, as for a new batch
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "device_tensormap";
  info.title = "09 device_tensormap: tensor maps encoded on the device (tensormap.replace)";
  info.explanation =
      "Eight float matrices of different shapes in one allocation are doubled in one launch, the tiles taken in\n"
      "order, each through its tensor's pair of maps: made by the driver on the host, or on the device from a\n"
      "driver-made template or from zeros (tensormap.replace, tensormap.cp_fenceproxy), acquired before use.";
  info.requirement = {9, 0, true, "tensormap.replace (sm_90a)"};
  info.verify_bytes = kVerifyBytes;
  info.bench_bytes = 1u << 30;
  info.size_rule = batch_size_problem;  // whole MiB, at most 16 GiB
  info.host_model = [](std::ostream& out) { print_batch_model(out, kVerifyBytes); };  // the batch, its host check
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
