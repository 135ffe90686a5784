// 09_device_tensormap lab: what the batch's maps and tiles cost, one change at a time.
//
// The lesson's variants run within a few hundredths of each other, below cudaMemcpy. This program
// asks where the rest goes. Each row changes one thing against the lesson's device_template (tiles
// taken in order from a counter) and is verified bit for bit before it is timed:
//   who makes the maps and at which scope: in_block (one launch, .cta), acquire_sys (the guide's
//     .sys for maps a kernel wrote), acquire_every_tile (a fence before every copy);
//   what making them costs: consume_only (maps made once, outside the timing), constant_maps
//     (the driver's maps in __constant__ memory, made once, no acquire at all);
//   how the tiles are walked: tiles_dealt (block b takes b, b + grid, ...: the lesson's loop
//     before it took tiles in order), and tiles_in_order, the lesson's loop built from this
//     lab's template (it must time as device_template does);
//   the ceiling of these boxes: tma_copy and tma_copy_in_order (no arithmetic, no block sync:
//     one thread loads and stores every box);
//   the batch itself: one_tensor and uniform_batch (chapter 07's 8192-float rows), uniform_dealt
//     and uniform_copy_in_order (the same rows dealt, and copied), batch_of_32.
// Hardware: compute capability 9.0 exactly, built for sm_90a, as the lesson.
// Run: build/09_device_tensormap/device_tensormap_lab [--bench] [--variant=NAME] [--size=N]
#include "device_tensormap.cu"  // the lesson: the batch, the encoders, the consumers and their launchers

#include <memory>

namespace lab {

constexpr int kBlockWarps = kBlockThreads / kWarpThreads;

// The driver's maps for the constant_maps and tma_copy rows: written once per batch with
// cudaMemcpyToSymbol, read by TMA straight from constant memory (no acquire; chapter 07).
__constant__ CUtensorMap cmem_maps[kMaxMaps];

// ---- in_block: the maps made inside the consuming blocks, at .cta scope ----------------------

/// [in_block]
// One launch: each block first encodes every map of the batch into its own slots of
// gmem_block_maps, one map per warp at a time, then uses them. Writer and user are in the same
// block, so the release and the acquire need only .cta scope.
__global__ void __launch_bounds__(kBlockThreads)
    in_block_kernel(const __grid_constant__ CUtensorMap template_map, const __grid_constant__ Batch batch,
                    const float* gmem_in, float* gmem_out, CUtensorMap* gmem_block_maps,
                    unsigned long long* next_tile) {
  __shared__ CUtensorMap smem_maps[kBlockWarps];  // one map under construction per warp
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / kWarpThreads), 0);
  const int num_maps = kMapsPerTensor * batch.num_tensors;
  CUtensorMap* block_maps = gmem_block_maps + static_cast<std::size_t>(blockIdx.x) * num_maps;
  for (int m = warp_idx; m < num_maps; m += kBlockWarps) {
    build_map(&smem_maps[warp_idx], &template_map, batch, m, gmem_in, gmem_out);
    ptx::tensormap_cp_fenceproxy(ptx::sem_release, ptx::scope_cta, &block_maps[m], &smem_maps[warp_idx],
                                 ptx::n32_t<kMapBytes>{});  // released to this block's tensormap proxy
    __syncwarp();  // every lane is done with smem_maps[warp_idx] before the next map is built in it
  }
  __syncthreads();  // every release happens before the leader's acquires
  double_batch_tiles<ptx::dot_scope::cta>(block_maps, batch, next_tile, course::elect_tma_leader());
}
/// [in_block]

// ---- The lesson's tile loop with one thing changed ------------------------------------------

enum class MapSource { constant_memory, global_once, global_every_tile };  // global: written by an encode kernel
enum class TileOrder { dealt, taken };  // dealt: block b takes b, b + grid, ...; taken: the lesson's counter
enum class BoxWork { doubled, copied };  // copied: no arithmetic; the leader alone loads and stores

/// [lab_tiles]
// The lesson's double_batch_tiles, with the three choices above as template parameters. Dealt
// tiles come in the same way as taken ones (recorded in smem_tile, the end through the barrier),
// so that the two orders differ in where the leader gets its next tile alone. The lesson's
// consumer is lab_batch_tiles<global_once, taken, doubled> (the tiles_in_order row): the test
// TheLabsInOrderTilesAreTheLessonsConsumer checks that both compile to the same instructions.
template <MapSource kMaps, TileOrder kOrder, BoxWork kWork>
__device__ void lab_batch_tiles(const CUtensorMap* gmem_maps, const Batch& batch, unsigned long long* next_tile,
                                bool is_leader) {
  __shared__ alignas(kSmemAlign) float smem_box[kTileElems];  // [kTileRows][box_cols] of the current tensor
  __shared__ alignas(8) std::uint64_t full_bar;                // the box has landed, or no tile is left
  __shared__ int smem_tile;                                    // the tile in smem_box (>= num_tiles: none left)
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, std::uint32_t{1});  // one arrival per phase: the leader's, with bytes or without
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the initialised barrier is visible to TMA
  }
  __syncthreads();  // ...and to every thread, before anyone waits on it
  constexpr bool kLeaderOnly = kWork == BoxWork::copied;
  if (kLeaderOnly && !is_leader) return;  // nobody else touches a copied box
  const CUtensorMap* maps = gmem_maps;
  if constexpr (kMaps == MapSource::constant_memory) maps = cmem_maps;
  int tensor = 0, acquired = -1;  // the current tile's (a block's tiles only go up); the last the leader acquired
  int loads = 0;                  // dealt: the leader's loads so far
  for (course::StageCursor<1> cursor;; cursor.advance()) {  // a ring of one box: the parity flips every tile
    if (is_leader) {  // the box is free
      const int taken = kOrder == TileOrder::taken ? static_cast<int>(atomicAdd(next_tile, 1ull))
                                                   : static_cast<int>(blockIdx.x + loads++ * gridDim.x);
      smem_tile = taken;  // every thread read the previous one before the last block sync
      if (taken >= batch.num_tiles) {
        // No bytes: the leader's arrival alone completes the phase, which then says "none left".
        (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full_bar);
      } else {
        while (taken >= batch.first_tile[tensor + 1]) ++tensor;
        const TensorLayout& t = batch.tensors[tensor];
        if (kMaps == MapSource::global_every_tile || (kMaps == MapSource::global_once && tensor != acquired)) {
          // The maps' writer is an encode kernel on this GPU: .gpu, as in the lesson.
          acquire_map<ptx::dot_scope::gpu>(&maps[kMapsPerTensor * tensor]);
          acquire_map<ptx::dot_scope::gpu>(&maps[kMapsPerTensor * tensor + 1]);
          acquired = tensor;
        }
        load_box(&maps[kMapsPerTensor * tensor], tile_origin(t, taken - batch.first_tile[tensor]),
                 static_cast<std::uint32_t>(t.box_cols * kTileRows * sizeof(float)), smem_box, &full_bar);
      }
    }
    course::bounded_wait_parity(&full_bar, cursor.phase, {"full", cursor.stage, cursor.phase});  // landed, or the end
    const int tile = smem_tile;
    if (tile >= batch.num_tiles) break;  // the same answer in every thread
    while (tile >= batch.first_tile[tensor + 1]) ++tensor;
    const TensorLayout& t = batch.tensors[tensor];
    if constexpr (kWork == BoxWork::doubled) {
      modify_box(smem_box, t.box_cols * kTileRows);
      ptx::fence_proxy_async(ptx::space_shared);  // this thread's st.shared become visible to the async proxy
      __syncthreads();  // every thread's writes are fenced (and smem_tile read) before the store
    } else {
      // No thread wrote the box; the leader still fences, as in the lesson, so that the rows
      // differ by the arithmetic and the block sync alone (one instruction per tile).
      ptx::fence_proxy_async(ptx::space_shared);
    }
    if (is_leader) {
      store_box(&maps[kMapsPerTensor * tensor + 1], tile_origin(t, tile - batch.first_tile[tensor]), smem_box);
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the store has read smem_box: it may be refilled
    }
  }
}
/// [lab_tiles]

// One kernel per row, named, so that the PTX tests can find each.
__global__ void __launch_bounds__(kBlockThreads)
    acquire_every_tile_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                              unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::global_every_tile, TileOrder::taken, BoxWork::doubled>(gmem_maps, batch, next_tile,
                                                                                    course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    constant_maps_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                         unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::constant_memory, TileOrder::taken, BoxWork::doubled>(gmem_maps, batch, next_tile,
                                                                                  course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    tiles_in_order_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                          unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::global_once, TileOrder::taken, BoxWork::doubled>(gmem_maps, batch, next_tile,
                                                                              course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    tiles_dealt_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                       unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::global_once, TileOrder::dealt, BoxWork::doubled>(gmem_maps, batch, next_tile,
                                                                              course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    tma_copy_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                    unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::constant_memory, TileOrder::dealt, BoxWork::copied>(gmem_maps, batch, next_tile,
                                                                                 course::elect_tma_leader());
}
__global__ void __launch_bounds__(kBlockThreads)
    tma_copy_in_order_kernel(const CUtensorMap* gmem_maps, const __grid_constant__ Batch batch,
                             unsigned long long* next_tile) {
  lab_batch_tiles<MapSource::constant_memory, TileOrder::taken, BoxWork::copied>(gmem_maps, batch, next_tile,
                                                                                 course::elect_tma_leader());
}

// ---- Launchers: the lesson's signature, with the lab's extra places --------------------------

struct Buffers : BatchBuffers {
  CUtensorMap* gmem_block_maps = nullptr;  // in_block: 2 x num_tensors maps per block
  unsigned block_maps_blocks = 0;          // how many blocks' maps gmem_block_maps holds
};
using Launch = void (*)(const Buffers& buffers, unsigned max_blocks);

// A lesson variant, unchanged, for a same-run comparison.
template <::Launch kLesson>
void lesson(const Buffers& b, unsigned max_blocks) {
  kLesson(b, max_blocks);
}

template <class Kernel>
unsigned resident_blocks(Kernel kernel) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, 0));
  return static_cast<unsigned>(num_sms * blocks_per_sm);
}

// Every launch goes through the lesson's launch_resident, which zeroes the tile counter first:
// the dealt rows pay for that memset too, so that the orders differ in the tiles alone.
void launch_in_block(const Buffers& b, unsigned max_blocks) {
  const unsigned blocks = max_blocks != 0 && max_blocks < b.block_maps_blocks ? max_blocks : b.block_maps_blocks;
  launch_resident(in_block_kernel, b, blocks, b.template_map, b.batch, b.gmem_in, b.gmem_out, b.gmem_block_maps,
                  b.gmem_next_tile);
}

// The lesson's device_template encoder: one warp per map, released at .gpu.
void encode_on_device(const BatchBuffers& b) {
  const unsigned num_maps = kMapsPerTensor * b.batch.num_tensors;
  encode_from_template_kernel<<<num_maps, kWarpThreads>>>(b.template_map, b.batch, b.gmem_in, b.gmem_out, b.gmem_maps);
  COURSE_CHECK_LAUNCH();
}

// The maps of the batch from the driver, in slot order ([2t] input, [2t + 1] output of tensor t).
std::vector<CUtensorMap> driver_maps(const BatchBuffers& b) {
  std::vector<CUtensorMap> maps;
  for (int t = 0; t < b.batch.num_tensors; ++t) {
    const TensorLayout& layout = b.batch.tensors[t];
    maps.push_back(course::encode_tiled(tensor_request(b.gmem_in + layout.offset_elems, layout)));
    maps.push_back(course::encode_tiled(tensor_request(b.gmem_out + layout.offset_elems, layout)));
  }
  return maps;
}

// Untimed preparations, run once per batch after the poison and before the check and the timing.
void prepare_device_maps(const Buffers& b) { encode_on_device(b); }
void prepare_constant_maps(const Buffers& b) {
  const std::vector<CUtensorMap> maps = driver_maps(b);
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, maps.data(), maps.size() * sizeof(CUtensorMap)));
}

// A row's consumer on the batch's maps and counter, the maps encoded on the device first or not.
template <auto kKernel, bool kEncode>
void launch_row(const Buffers& b, unsigned max_blocks) {
  if (kEncode) encode_on_device(b);
  launch_resident(kKernel, b, max_blocks, b.gmem_maps, b.batch, b.gmem_next_tile);
}
constexpr Launch launch_acquire_sys = &launch_row<consume_host_maps_kernel, true>;  // .sys: wider than needed
constexpr Launch launch_acquire_every_tile = &launch_row<acquire_every_tile_kernel, true>;
constexpr Launch launch_consume_only = &launch_row<consume_device_maps_kernel, false>;
constexpr Launch launch_constant_maps = &launch_row<constant_maps_kernel, false>;
constexpr Launch launch_tiles_in_order = &launch_row<tiles_in_order_kernel, true>;
constexpr Launch launch_tiles_dealt = &launch_row<tiles_dealt_kernel, true>;
constexpr Launch launch_tma_copy = &launch_row<tma_copy_kernel, false>;
constexpr Launch launch_tma_copy_in_order = &launch_row<tma_copy_in_order_kernel, false>;

// ---- The rows ----------------------------------------------------------------------------

using Shapes = std::vector<TensorShape> (*)(std::size_t total_bytes);
std::vector<TensorShape> lesson_batch(std::size_t bytes) { return default_shapes(bytes); }
std::vector<TensorShape> one_tensor(std::size_t bytes) { return uniform_shapes(bytes, 1); }
std::vector<TensorShape> uniform_batch(std::size_t bytes) { return uniform_shapes(bytes, kBatchTensors); }
std::vector<TensorShape> batch_of_32(std::size_t bytes) { return default_shapes(bytes, kMaxTensors); }

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;                                // the timed run
  void (*prepare)(const Buffers&) = nullptr;    // once, untimed, before the check: maps made ahead
  BoxWork work = BoxWork::doubled;              // what the output must hold
  Shapes shapes = &lesson_batch;                // the batch the row runs on
};
const Variant kVariants[] = {
    {"host_encoded", "the lesson's: driver maps, cudaMemcpyToSymbol, .sys acquire", &lesson<&::launch_host_encoded>},
    {"device_template", "the lesson's: encode kernel from the template, .gpu", &lesson<&::launch_device_template>},
    {"in_block", "one launch: each block encodes every map into its own slots, .cta", &launch_in_block},
    {"acquire_sys", "device_template, the consumer acquiring at .sys (the guide's choice)", launch_acquire_sys},
    {"acquire_every_tile", "device_template, acquiring both maps before every tile", launch_acquire_every_tile},
    {"consume_only", "device_template's consumer alone: maps encoded once, untimed", launch_consume_only,
     &prepare_device_maps},
    {"constant_maps", "driver maps in __constant__ memory, made once; no acquire", launch_constant_maps,
     &prepare_constant_maps},
    {"tiles_in_order", "device_template's loop built from the lab's template (same instructions)",
     launch_tiles_in_order},
    {"tiles_dealt", "device_template with the tiles dealt (b, b + grid, ...): the earlier lesson",
     launch_tiles_dealt},
    {"tma_copy", "constant maps, tiles dealt, every box loaded and stored unchanged by one thread", launch_tma_copy,
     &prepare_constant_maps, BoxWork::copied},
    {"tma_copy_in_order", "tma_copy with tiles taken in order: this batch's ceiling", launch_tma_copy_in_order,
     &prepare_constant_maps, BoxWork::copied},
    {"one_tensor", "device_template on one 8192-float-wide matrix (chapter 07's shape)",
     &lesson<&::launch_device_template>, nullptr, BoxWork::doubled, &one_tensor},
    {"uniform_batch", "device_template on eight 8192-float-wide matrices", &lesson<&::launch_device_template>,
     nullptr, BoxWork::doubled, &uniform_batch},
    {"uniform_dealt", "tiles_dealt on eight 8192-float-wide matrices", launch_tiles_dealt, nullptr, BoxWork::doubled,
     &uniform_batch},
    {"uniform_copy_in_order", "tma_copy_in_order on eight 8192-float-wide matrices", launch_tma_copy_in_order,
     &prepare_constant_maps, BoxWork::copied, &uniform_batch},
    {"batch_of_32", "device_template on 32 tensors, the lesson's widths four times",
     &lesson<&::launch_device_template>, nullptr, BoxWork::doubled, &batch_of_32},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem, with the lab's places and the output a plain copy must leave.
struct Problem {
  explicit Problem(const std::vector<TensorShape>& shapes) : lesson(shapes) {
    static_cast<BatchBuffers&>(buffers) = lesson.buffers;
    buffers.block_maps_blocks = resident_blocks(in_block_kernel);
    gmem_block_maps = course::DeviceBuffer<CUtensorMap>(std::size_t{buffers.block_maps_blocks} * kMapsPerTensor *
                                                        lesson.plan.tensors.size());
    buffers.gmem_block_maps = gmem_block_maps.data();
  }
  const std::vector<float>& expected(BoxWork work) {
    if (work == BoxWork::doubled) return lesson.expected;
    if (copied.empty()) copied = reference_with(lesson.host_in, lesson.plan, [](float x) { return x; });
    return copied;
  }
  ::Problem lesson;
  course::DeviceBuffer<CUtensorMap> gmem_block_maps;
  std::vector<float> copied;
  Buffers buffers;
};

// Poisons the output and every map slot, global and constant (no row may pass on maps another
// left behind), prepares, launches, synchronises, compares bit-exactly.
course::Comparison verify(const Variant& v, Problem& p, unsigned max_blocks = 0) {
  p.lesson.gmem_out.poison();
  COURSE_CHECK(cudaMemset(p.buffers.gmem_maps, course::kPoisonByte, sizeof(CUtensorMap) * kMaxMaps));
  COURSE_CHECK(cudaMemset(p.gmem_block_maps.data(), course::kPoisonByte, p.gmem_block_maps.bytes()));
  const std::vector<CUtensorMap> poison(kMaxMaps, course::poison_value<CUtensorMap>());
  COURSE_CHECK(cudaMemcpyToSymbol(cmem_maps, poison.data(), poison.size() * sizeof(CUtensorMap)));
  if (v.prepare != nullptr) v.prepare(p.buffers);
  v.launch(p.buffers, max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.lesson.gmem_out.check(p.expected(v.work));
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
        opts, report, v.name, [&] { return verify(v, *problem); }, [&] { v.launch(problem->buffers, 0); },
        batch_bytes_moved(problem->lesson.plan));
  }
}

// What runs without a GPU: the lesson's batch, then the batches of the last three rows.
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
  info.title = "09 device_tensormap lab: what the batch's maps and tiles cost";
  info.explanation =
      "The lesson's batch with one thing changed per row: who makes the maps and at which scope, whether\n"
      "making them is timed, where they live, the order of the tiles, no arithmetic (a plain TMA copy of the\n"
      "same boxes), and the shapes and number of tensors in the batch.";
  info.host_model = print_lab_model;
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
