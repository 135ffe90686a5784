// 09_device_tensormap lab: who makes the batch's maps, where they live, how they are acquired.
//
// Each row changes one thing against the lesson's device_template and is verified bit for bit
// before it is timed; every row runs the lesson's tile loop (double_batch_tiles), instantiated
// with another source of maps or another batch:
//   who makes the maps: host_encoded (the driver on the host, cudaMemcpyToSymbol, acquired at
//     .sys), device_zero (the device from 128 zero bytes, every field replaced: no driver at all),
//     in_block (each consuming block makes them itself: one launch, .cta release and acquire);
//   the ring: one_box (the lesson's loop with one stage: nothing in flight during a store);
//   the acquire: acquire_sys (the guide's .sys for maps a kernel wrote), acquire_every_tile (a
//     fence before every copy instead of once per map);
//   where they live: constant_maps (the driver's maps in __constant__ memory: no acquire at all);
//   the batch: uniform_batch (eight 8192-float-wide matrices, chapter 07's shape), batch_of_32;
//   the ceiling: no_sync (the same bytes read and written by plain loads and stores, no TMA).
// Hardware: compute capability 9.0 exactly, built for sm_90a, as the lesson.
// Run: build/09_device_tensormap/device_tensormap_lab [--bench] [--variant=NAME] [--size=N]
#include "device_tensormap.cu"  // the lesson: the batch, the encoder, the tile loop, the launchers

#include <memory>

namespace lab {

constexpr int kBlockWarps = kBlockThreads / kWarpThreads;

// ---- host_encoded: the driver's maps, written from the host ----------------------------------
/// [consume_host_maps]
// Maps written from the host (cudaMemcpyToSymbol): the writer is outside the GPU, so .sys.
__global__ void __launch_bounds__(kBlockThreads)
    consume_host_maps_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                             unsigned long long* next_tile) {
  double_batch_tiles<kStages>(GlobalMaps<ptx::dot_scope::sys>{gmem_maps}, batch, next_tile,
                              course::elect_tma_leader());
}
/// [consume_host_maps]
/// [launch_host]
void launch_host_encoded(const BatchBuffers& b, unsigned max_blocks) {
  CUtensorMap maps[kMaxMaps];
  for (int m = 0; m < kMapsPerTensor * b.batch.num_tensors; ++m) {  // [2t] input, [2t + 1] output
    const TensorLayout& t = b.batch.tensors[m / kMapsPerTensor];
    const float* gmem_base = m % kMapsPerTensor == 0 ? b.gmem_in : b.gmem_out;
    maps[m] = course::encode_tiled(tensor_request(gmem_base + t.offset_elems, t));
  }
  // Host code names a __device__ variable through the symbol API, not through its address.
  const std::size_t bytes = kMapsPerTensor * b.batch.num_tensors * sizeof(CUtensorMap);
  COURSE_CHECK(cudaMemcpyToSymbol(gmem_batch_maps, maps, bytes));
  launch_resident(consume_host_maps_kernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
/// [launch_host]

// ---- device_zero: no driver at all -----------------------------------------------------------
/// [replace_fixed_fields]
// What the driver's template already holds and a zeroed buffer does not: the rest of
// tensor_request(). The rank is zero-based; the last four take PTX's numbers (ptx_codes).
__device__ void replace_fixed_fields(CUtensorMap* smem_map) {
  const auto smem = ptx::space_shared;
  ptx::tensormap_replace_rank(smem, smem_map, std::uint32_t{kRank - 1});
  ptx::tensormap_replace_box_dim(smem, smem_map, ptx::n32_t<1>{}, std::uint32_t{kTileRows});
  ptx::tensormap_replace_element_stride(smem, smem_map, ptx::n32_t<0>{}, std::uint32_t{1});
  ptx::tensormap_replace_element_stride(smem, smem_map, ptx::n32_t<1>{}, std::uint32_t{1});
  ptx::tensormap_replace_elemtype(smem, smem_map,
                                  ptx::n32_t<ptx_elemtype(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)>{});
  ptx::tensormap_replace_interleave_layout(
      smem, smem_map, ptx::n32_t<ptx_interleave(CU_TENSOR_MAP_INTERLEAVE_NONE)>{});
  ptx::tensormap_replace_swizzle_mode(smem, smem_map,
                                      ptx::n32_t<ptx_swizzle(CU_TENSOR_MAP_SWIZZLE_NONE)>{});
  ptx::tensormap_replace_fill_mode(
      smem, smem_map, ptx::n32_t<ptx_fill_mode(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)>{});
}
/// [replace_fixed_fields]
/// [encode_from_zero]
// sm_90a only: 128 zero bytes in shared memory are a valid start. The lesson's build_map copies
// them in and replaces the tensor's fields; one lane then writes the fields a template holds.
__global__ void __launch_bounds__(kWarpThreads)
    encode_from_zero_kernel(const __grid_constant__ Batch batch, const float* gmem_in,
                            float* gmem_out, CUtensorMap* gmem_maps) {
  __shared__ CUtensorMap smem_map;
  build_map(&smem_map, CUtensorMap{}, batch, blockIdx.x, gmem_in, gmem_out);
  if (course::elect_one_lane()) replace_fixed_fields(&smem_map);  // one writer, as in build_map
  __syncwarp();  // the finished map is visible to every lane before the warp copies it out
  ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_gpu, &gmem_maps[blockIdx.x],
                               &smem_map, ptx::n32_t<kMapBytes>{});  // as the lesson: .gpu
}
/// [encode_from_zero]

// ---- in_block: the maps made inside the consuming blocks, at .cta scope ----------------------
/// [in_block]
// One launch: each block first encodes every map of the batch into its own slots of
// gmem_block_maps, one map per warp at a time, then uses them. Writer and user are in the same
// block, so the release and the acquire need only .cta scope.
__global__ void __launch_bounds__(kBlockThreads)
    in_block_kernel(const __grid_constant__ CUtensorMap template_map,
                    const __grid_constant__ Batch batch, const float* gmem_in, float* gmem_out,
                    CUtensorMap* gmem_block_maps, unsigned long long* next_tile) {
  __shared__ CUtensorMap smem_maps[kBlockWarps];  // one map under construction per warp
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / kWarpThreads), 0);
  const int num_maps = kMapsPerTensor * batch.num_tensors;
  CUtensorMap* block_maps = gmem_block_maps + std::size_t(blockIdx.x) * num_maps;
  for (int m = warp_idx; m < num_maps; m += kBlockWarps) {
    build_map(&smem_maps[warp_idx], template_map, batch, m, gmem_in, gmem_out);
    ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_cta, &block_maps[m],
                                 &smem_maps[warp_idx], ptx::n32_t<kMapBytes>{});  // to this block
    __syncwarp();  // every lane is done with smem_maps[warp_idx] before the next map is built
  }
  __syncthreads();  // every release happens before the leader's acquires
  double_batch_tiles<kStages>(GlobalMaps<ptx::dot_scope::cta>{block_maps}, batch, next_tile,
                              course::elect_tma_leader());
}
/// [in_block]

// ---- The lesson's tile loop on other sources of maps -----------------------------------------
/// [map_sources]
// The driver's maps for constant_maps: written once per batch with cudaMemcpyToSymbol, read by
// TMA straight from constant memory, which no kernel writes: nothing to acquire (chapter 07).
__constant__ CUtensorMap cmem_maps[kMaxMaps];
struct ConstantMaps {
  __device__ const CUtensorMap* map(int m) const { return &cmem_maps[m]; }
  __device__ void acquire(int) const {}
};
// Maps from an encode kernel on this GPU, acquired at .gpu before every copy, not once per map.
struct EveryCopyAcquires {
  GlobalMaps<ptx::dot_scope::gpu> maps;
  __device__ const CUtensorMap* map(int m) const {
    maps.acquire(m);
    return maps.map(m);
  }
  __device__ void acquire(int) const {}
};
/// [map_sources]
__global__ void __launch_bounds__(kBlockThreads)
    constant_maps_kernel(const CUtensorMap*, const __grid_constant__ Batch batch,
                         unsigned long long* next_tile) {
  double_batch_tiles<kStages>(ConstantMaps{}, batch, next_tile, course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    acquire_every_tile_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                              unsigned long long* next_tile) {
  double_batch_tiles<kStages>(EveryCopyAcquires{{gmem_maps}}, batch, next_tile,
                              course::elect_tma_leader());
}
// The lesson's consumer with a ring of one box: a block has nothing in flight from the store's
// read of its box to the next load's last byte.
__global__ void __launch_bounds__(kBlockThreads)
    one_box_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                   unsigned long long* next_tile) {
  double_batch_tiles<1>(GlobalMaps<ptx::dot_scope::gpu>{gmem_maps}, batch, next_tile,
                        course::elect_tma_leader());
}

// ---- The ceiling: the batch's own bytes, with no TMA, no shared memory, no barrier ----------
/// [no_sync]
// One thread per 16 bytes of what the ring moves. A row is whole float4s up to the 16-byte granule
// after its last element (pitches and offsets are multiples of 16 bytes), and a TMA store writes
// that whole granule: zeros past the last element, which the load's fill brought. Each thread
// finds its tensor (the host counted the float4s before each), its row (one division) and float4,
// loads, doubles and stores it: nothing to wait for but its load.
__host__ __device__ inline unsigned row_vecs(const TensorLayout& t) { return (t.cols + 3) / 4; }
struct VecPlan {
  unsigned long long first_vec[kMaxTensors + 1];  // float4s of the tensors before tensor i
};
__global__ void __launch_bounds__(kBlockThreads)
    no_sync_kernel(const __grid_constant__ Batch batch, const __grid_constant__ VecPlan plan,
                   const float* __restrict__ gmem_in, float* __restrict__ gmem_out) {
  const unsigned long long stride = std::size_t{gridDim.x} * blockDim.x;
  const unsigned long long end = plan.first_vec[batch.num_tensors];
  for (unsigned long long k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < end;
       k += stride) {
    int i = 0;
    while (k >= plan.first_vec[i + 1]) ++i;
    const TensorLayout& t = batch.tensors[i];
    const unsigned local = static_cast<unsigned>(k - plan.first_vec[i]);  // < 2^32 per tensor
    const unsigned row = local / row_vecs(t);
    const int col = static_cast<int>(local - row * row_vecs(t)) * 4;
    const std::size_t at = t.offset_elems + std::size_t{row} * t.pitch_elems + col;
    const float4 x = *reinterpret_cast<const float4*>(gmem_in + at);
    const float4 y = {modify(col + 0 < t.cols ? x.x : 0.0f), modify(col + 1 < t.cols ? x.y : 0.0f),
                      modify(col + 2 < t.cols ? x.z : 0.0f), modify(col + 3 < t.cols ? x.w : 0.0f)};
    *reinterpret_cast<float4*>(gmem_out + at) = y;
  }
}
/// [no_sync]

// ---- Launchers: the lesson's signature, with the lab's extra places --------------------------
struct Buffers : BatchBuffers {
  CUtensorMap* gmem_block_maps = nullptr;  // in_block: 2 x num_tensors maps per block
  unsigned block_maps_blocks = 0;          // how many blocks' maps gmem_block_maps holds
};
using Launch = void (*)(const Buffers& buffers, unsigned max_blocks);

// A lesson launcher, unchanged (the lab's other batches run the lesson's device_template).
template <::Launch kLesson>
void lesson(const Buffers& b, unsigned max_blocks) {
  kLesson(b, max_blocks);
}
void launch_host(const Buffers& b, unsigned max_blocks) { launch_host_encoded(b, max_blocks); }

void launch_in_block(const Buffers& b, unsigned max_blocks) {
  const unsigned blocks =
      max_blocks != 0 && max_blocks < b.block_maps_blocks ? max_blocks : b.block_maps_blocks;
  launch_resident(in_block_kernel, b, blocks, b.template_map, b.batch, b.gmem_in, b.gmem_out,
                  b.gmem_block_maps, b.gmem_next_tile);
}

// The ceiling: a thread per float4 of the batch (max_blocks, when not 0, caps the grid).
void launch_no_sync(const Buffers& b, unsigned max_blocks) {
  VecPlan plan{};
  for (int i = 0; i < b.batch.num_tensors; ++i) {
    const TensorLayout& t = b.batch.tensors[i];
    plan.first_vec[i + 1] = plan.first_vec[i] + std::size_t(t.rows) * row_vecs(t);
  }
  std::size_t blocks = (plan.first_vec[b.batch.num_tensors] + kBlockThreads - 1) / kBlockThreads;
  if (max_blocks != 0 && max_blocks < blocks) blocks = max_blocks;
  if (blocks == 0) return;
  no_sync_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(b.batch, plan, b.gmem_in,
                                                                   b.gmem_out);
  COURSE_CHECK_LAUNCH();
}

// The lesson's device_template encoder, or the zero encoder: one warp per map, released at .gpu.
template <bool kFromZero>
void encode_on_device(const BatchBuffers& b) {
  const unsigned num_maps = kMapsPerTensor * b.batch.num_tensors;
  if (kFromZero) {
    encode_from_zero_kernel<<<num_maps, kWarpThreads>>>(b.batch, b.gmem_in, b.gmem_out,
                                                        b.gmem_maps);
  } else {
    encode_from_template_kernel<<<num_maps, kWarpThreads>>>(b.template_map, b.batch, b.gmem_in,
                                                            b.gmem_out, b.gmem_maps);
  }
  COURSE_CHECK_LAUNCH();
}

// Untimed, once per batch after the poison and before the check and the timing.
void prepare_constant_maps(const Buffers& b) {
  std::vector<CUtensorMap> maps;
  for (int t = 0; t < b.batch.num_tensors; ++t) {  // slot order: [2t] input, [2t + 1] output
    const TensorLayout& layout = b.batch.tensors[t];
    maps.push_back(course::encode_tiled(tensor_request(b.gmem_in + layout.offset_elems, layout)));
    maps.push_back(course::encode_tiled(tensor_request(b.gmem_out + layout.offset_elems, layout)));
  }
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, maps.data(), maps.size() * sizeof(CUtensorMap)));
}

// A row's consumer on the batch's maps and counter, after an encoder on the device or none.
enum class Encode { none, from_template, from_zero };
template <auto kKernel, Encode kEncode, int kRingStages = kStages>
void launch_row(const Buffers& b, unsigned max_blocks) {
  if (kEncode == Encode::from_template) encode_on_device<false>(b);
  if (kEncode == Encode::from_zero) encode_on_device<true>(b);
  launch_resident<kRingStages>(kKernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
constexpr Launch launch_device_zero = &launch_row<consume_device_maps_kernel, Encode::from_zero>;
constexpr Launch launch_acquire_sys =
    &launch_row<consume_host_maps_kernel, Encode::from_template>;  // .sys: wider than needed
constexpr Launch launch_acquire_every_tile =
    &launch_row<acquire_every_tile_kernel, Encode::from_template>;
constexpr Launch launch_constant_maps = &launch_row<constant_maps_kernel, Encode::none>;
constexpr Launch launch_one_box = &launch_row<one_box_kernel, Encode::from_template, 1>;

// ---- The rows ----------------------------------------------------------------------------
using Shapes = std::vector<TensorShape> (*)(std::size_t total_bytes);
std::vector<TensorShape> lesson_batch(std::size_t bytes) { return default_shapes(bytes); }
std::vector<TensorShape> uniform_batch(std::size_t bytes) {
  return uniform_shapes(bytes, kBatchTensors);
}
std::vector<TensorShape> batch_of_32(std::size_t bytes) {
  return default_shapes(bytes, kMaxTensors);
}

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;                              // the timed run
  void (*prepare)(const Buffers&) = nullptr;  // once, untimed, before the check: maps made ahead
  Shapes shapes = &lesson_batch;              // the batch the row runs on
};
const Variant kVariants[] = {
    {"host_encoded", "driver maps on the host, cudaMemcpyToSymbol, acquired at .sys",
     &launch_host},
    {"device_zero", "device_template from 128 zero bytes: every field replaced, no driver",
     launch_device_zero},
    {"in_block", "one launch: each block encodes every map into its own slots, .cta",
     &launch_in_block},
    {"one_box", "device_template with a ring of one box: nothing in flight while it is stored",
     launch_one_box},
    {"acquire_sys", "device_template, the consumer acquiring at .sys (the guide's choice)",
     launch_acquire_sys},
    {"acquire_every_tile", "device_template, acquiring a map before every copy",
     launch_acquire_every_tile},
    {"constant_maps", "driver maps in __constant__ memory, made once; no acquire",
     launch_constant_maps, &prepare_constant_maps},
    {"uniform_batch", "device_template on eight 8192-float-wide matrices",
     &lesson<&::launch_device_template>, nullptr, &uniform_batch},
    {"batch_of_32", "device_template on 32 tensors, the lesson's widths four times",
     &lesson<&::launch_device_template>, nullptr, &batch_of_32},
    {"no_sync", "the ceiling: the batch doubled straight in global memory, no TMA, no barrier",
     &launch_no_sync},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem, with the lab's places.
struct Problem {
  explicit Problem(const std::vector<TensorShape>& shapes) : lesson(shapes) {
    static_cast<BatchBuffers&>(buffers) = lesson.buffers;
    buffers.block_maps_blocks = course::resident_blocks((const void*)in_block_kernel,
                                                        kBlockThreads, kStages * kTileBytes);
    gmem_block_maps = course::DeviceBuffer<CUtensorMap>(
        std::size_t{buffers.block_maps_blocks} * kMapsPerTensor * lesson.plan.tensors.size());
    buffers.gmem_block_maps = gmem_block_maps.data();
  }
  ::Problem lesson;
  course::DeviceBuffer<CUtensorMap> gmem_block_maps;
  Buffers buffers;
};

// Poisons the output and every map slot, global and constant (no row may pass on maps another
// left behind), prepares, launches, synchronises, compares bit-exactly.
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  p.lesson.gmem_out.poison();
  COURSE_CHECK(cudaMemset(p.buffers.gmem_maps, course::kPoisonByte, kMaxMaps * kMapBytes));
  course::DeviceBuffer<CUtensorMap>& block_maps = p.gmem_block_maps;
  COURSE_CHECK(cudaMemset(block_maps.data(), course::kPoisonByte, block_maps.bytes()));
  const std::vector<CUtensorMap> poison(kMaxMaps, course::poison_value<CUtensorMap>());
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, poison.data(), poison.size() * sizeof(CUtensorMap)));
  if (v.prepare != nullptr) v.prepare(p.buffers);
  v.launch(p.buffers, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.lesson.gmem_out.check(p.lesson.expected);
}

void run(const course::Options& opts, course::Report& report) {
  std::unique_ptr<Problem> problem;  // one batch at a time; neighbouring rows of one batch share it
  Shapes made = nullptr;
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    if (v.shapes != made) {
      problem.reset();
      problem = std::make_unique<Problem>(v.shapes(opts.size_bytes));
      made = v.shapes;
    }
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, *problem); },
        [&] { v.launch(problem->buffers, 0); }, batch_bytes_moved(problem->lesson.plan));
  }
}

// What runs without a GPU: the lesson's batch, then the batches of the last two rows.
void print_lab_model(std::ostream& out) {
  print_batch_model(out, kVerifyBytes);
  out << "the other batches of the lab at the default --size:\n";
  for (const Variant& v : kVariants) {
    if (v.shapes == &lesson_batch) continue;
    out << "  " << v.name << ": " << batch_summary(plan_batch(v.shapes(kVerifyBytes))) << '\n';
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "device_tensormap_lab";
  info.title = "09 device_tensormap lab: who makes the maps, where, and how they are acquired";
  info.explanation =
      "The lesson's batch with one thing changed per row: who makes the maps (the driver on the\n"
      "host, the device from zeros, each consuming block), the acquire's scope and how often,\n"
      "maps in __constant__ memory, and the shapes and number of tensors in the batch.";
  info.host_model = print_lab_model;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
