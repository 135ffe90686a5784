// 07_tma_2d, second lesson: the tensor-map options that tma_2d.cu leaves at their defaults.
//
// What you learn: what one tensor load puts in shared memory, and so what its barrier must
// expect, for maps of 3 to 5 dimensions (cp.async.bulk.tensor.3d/.4d/.5d), with element strides
// (the guide's "stride 2 loads the real parts of a complex tensor": not in dimension 0 of a plain
// map, which lands whole; in dimension 1 ceil(boxDim / stride) rows land), and with interleaved
// layouts (NC/4HWC4, NC/8HWC8), where a box lands otherwise; then L2 promotion on the lesson's
// minimal kernel, timed. What changed from tma_2d.cu: the kernel writes out what landed in shared
// memory, and a host model predicts every element of it.
// Hardware: compute capability 9.0.
// Run: build/07_tma_2d/tensor_map_options [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//        (4.11.2.2)
// API: cuTensorMapEncodeTiled:
//        https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html
//      cuda::ptx::cp_async_bulk_tensor: https://nvidia.github.io/cccl/libcudacxx/ptx/
//      PTX tensors: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensors
#ifndef COURSE_NO_MAIN
#define COURSE_NO_MAIN           // the lesson's main() stays out of this program...
#define TENSOR_MAP_OPTIONS_MAIN  // ...and this file's comes in, at its end
#endif
#include "tma_2d.cu"  // the lesson: its model (TensorMapRequest, encode_tiled), its launchers
#include <array>

#include "tensor_map_options_model.hpp"  // what lands where, and its expect-tx: the host model

namespace options {  // the chapter's tests include both lessons

// --size counts 64 KiB slabs: a 5D slab, a row of complex floats, an image, a matrix row.
constexpr std::size_t kSlabBytes = 64 * 1024;
constexpr std::size_t kBoxAlign = 1024;  // TMA boxes: 128-byte aligned (1024: any swizzle too)

/// [walk]
// A tensor covered box by box: box b starts at origin + (its index per dimension) x boxDim, so the
// last box of a dimension may hang over the tensor's edge (a negative origin: the first too).
struct BoxWalk {
  int rank, num_boxes;
  std::int32_t boxes[5], step[5], origin[5];  // per dimension: boxes, boxDim, first box's start
  std::uint32_t box_elems;  // elements that land per box; the output holds them box after box
  std::uint32_t tx_bytes;   // the expect-tx of one load: box_tx_bytes() of the map
};
TMA_2D_HOST_DEVICE inline void box_start(const BoxWalk& w, int box, std::int32_t* start) {
  for (int i = 0; i < w.rank; ++i) {
    start[i] = w.origin[i] + (box % w.boxes[i]) * w.step[i];
    box /= w.boxes[i];
  }
}
inline BoxWalk box_walk(const TensorMapRequest& r, const std::array<std::int32_t, 5>& origin = {}) {
  BoxWalk w{static_cast<int>(r.rank), 1, {}, {}, {}, box_tx_bytes(r) / 4, box_tx_bytes(r)};
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    w.step[i] = static_cast<std::int32_t>(r.box_dim[i]);
    w.origin[i] = origin[i];
    w.boxes[i] = static_cast<std::int32_t>(
        (static_cast<std::int64_t>(r.global_dim[i]) - origin[i] + w.step[i] - 1) / w.step[i]);
    w.num_boxes *= w.boxes[i];
  }
  return w;
}
/// [walk]
inline std::vector<float> reference(const std::vector<float>& gmem, const TensorMapRequest& r,
                                    const BoxWalk& w) {
  std::vector<float> out(std::size_t(w.num_boxes) * w.box_elems);
  std::int32_t start[5];
  for (int box = 0; box < w.num_boxes; ++box) {
    box_start(w, box, start);
    load_box_model(gmem, r, start, &out[std::size_t(box) * w.box_elems]);
  }
  return out;
}

/// [boxes_kernel]
// Box after box, one at a time per block: the leader loads it, then every thread copies what
// landed to the output, in shared-memory order. kRank picks the instruction, .2d to .5d.
template <int kRank>
__global__ void __launch_bounds__(kBlockThreads)
    boxes_kernel(const __grid_constant__ CUtensorMap map, BoxWalk walk, float* gmem_out) {
  extern __shared__ unsigned char smem_raw[];  // the runtime promises 16-byte alignment only
  float* smem_box =
      reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(smem_raw) + kBoxAlign - 1) /
                               kBoxAlign * kBoxAlign);  // [walk.box_elems]
  __shared__ alignas(8) std::uint64_t full_bar;         // the box has landed
  const bool is_leader = course::elect_tma_leader();
  if (is_leader) {
    ptx::mbarrier_init(&full_bar, 1);  // one arrival per phase: the leader's arrive.expect_tx
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();                // ...and to every thread, before anyone waits on it
  course::StageCursor<1> cursor;  // one buffer: the phase flips every box
  for (int box = blockIdx.x; box < walk.num_boxes; box += gridDim.x, cursor.advance()) {
    if (is_leader) {
      std::int32_t start[kRank];  // innermost first, as the map's dimensions
      box_start(walk, box, start);
      // One arrival, plus the bytes that land: with element strides fewer than the box traverses.
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                           &full_bar, walk.tx_bytes);
      ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, &map, start,
                                &full_bar);
    }
    // The box is in shared memory.
    course::bounded_wait_parity(&full_bar, cursor.phase, {"full", 0, cursor.phase});
    float* gmem_box = gmem_out + std::size_t(box) * walk.box_elems;
    for (std::uint32_t i = threadIdx.x; i < walk.box_elems; i += kBlockThreads)
      gmem_box[i] = smem_box[i];
    __syncthreads();  // every thread has read the box before the next load overwrites it
  }
}
/// [boxes_kernel]
template <int kRank>  // the lesson's launcher, one "tile" per box
void launch_boxes(const CUtensorMap& map, const BoxWalk& walk, float* gmem_out,
                  unsigned max_blocks) {
  launch_tiles(boxes_kernel<kRank>, kBlockThreads, std::size_t{walk.tx_bytes} + kBoxAlign,
               walk.num_boxes, max_blocks, map, walk, gmem_out);
}
using BoxLaunch = void (*)(const CUtensorMap& map, const BoxWalk& walk, float* gmem_out,
                           unsigned max_blocks);
inline BoxLaunch box_launch(std::uint32_t rank) {
  constexpr BoxLaunch kByRank[] = {&launch_boxes<2>, &launch_boxes<3>, &launch_boxes<4>,
                                   &launch_boxes<5>};
  if (rank < 2 || rank > 5)
    throw std::invalid_argument("this lesson copies tensors of rank 2 to 5");
  return kByRank[rank - 2];
}
/// [tensors]
// A 5D array, dimension 0 innermost, and its box. As a map of rank 3 or 4 the outer dimensions
// (and the box's) merge into the last one: the same bytes, the same elements per box.
struct Array5 {
  std::uint64_t dim[5];
  std::uint32_t box[5];
};  // innermost first
inline TensorMapRequest array_request(const float* base, const Array5& a, std::uint32_t rank) {
  TensorMapRequest r;  // FLOAT32, element strides 1, no interleave, swizzle or promotion, zero fill
  r.rank = rank;
  r.global_address = base;
  std::uint64_t stride_bytes = sizeof(float);
  for (std::uint32_t i = 0; i < 5; ++i) {
    const std::uint32_t d = std::min(i, rank - 1);
    if (d == i) {
      r.global_dim[d] = r.box_dim[d] = 1;
      if (d > 0) r.global_strides[d - 1] = stride_bytes;  // bytes from index to index of d
    }
    r.global_dim[d] *= a.dim[i];
    r.box_dim[d] *= a.box[i];
    stride_bytes *= a.dim[i];
  }
  return r;
}
// Rows of complex floats (re, im) as floats, {2 cols, rows}: the guide's stride 2 for the real
// parts.
inline TensorMapRequest complex_request(const float* base, std::uint64_t rows, std::uint64_t cols) {
  TensorMapRequest r = array_request(base, {{2 * cols, rows, 1, 1, 1}, {64, 32, 1, 1, 1}}, 2);
  r.element_strides[0] = 2;  // every other float: the real parts? Dimension 0 lands whole anyway
  r.element_strides[1] = 2;  // every other row: 16 of the box's 32 land
  return r;
}
// N images of 16 channels x 16 rows x 64 pixels (64 KiB each) as NC/4HWC4 floats (16-byte slices
// of 4 channels, pixel after pixel, slice-plane after slice-plane) or NC/8HWC8 (32-byte slices,
// with the 32-byte swizzle it requires): a map {64 pixels, 16 rows, slices, N}; a box, 32 x 8
// pixels.
inline TensorMapRequest interleaved_request(const float* base, std::uint64_t images,
                                            CUtensorMapInterleave interleave) {
  const std::uint64_t slice_bytes = interleave_slice_bytes(interleave), slices = 64 / slice_bytes;
  TensorMapRequest r = array_request(base, {{64, 16, slices, images, 1}, {32, 8, 1, 1, 1}}, 4);
  r.interleave = interleave;
  r.swizzle = slice_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  // A pixel is a slice, not a float.
  for (int i = 0; i < 3; ++i) r.global_strides[i] *= slice_bytes / sizeof(float);
  return r;
}
// The same bytes as a plain map {4 channels, 64, 16, 4 slices, N}: its boxes land as the 16-byte
// ones.
inline TensorMapRequest interleaved_as_plain(const float* base, std::uint64_t images) {
  return array_request(base, {{4, 64, 16, 4, images}, {4, 32, 8, 1, 1}}, 5);
}
/// [tensors]
// Position-dependent values (course/pattern.hpp).
inline std::vector<float> patterned(std::size_t elems) {
  std::vector<float> host(elems);
  course::fill_pattern(host);
  return host;
}
struct Tensor {  // the host copy and the device copy
  explicit Tensor(std::vector<float> values) : host(std::move(values)), gmem(host.size()) {
    gmem.upload(host.data());
  }
  std::vector<float> host;
  course::DeviceBuffer<float> gmem;
};
inline Array5 slab_array(std::uint64_t slabs) { return {{256, 8, 4, 2, slabs}, {64, 4, 2, 2, 3}}; }

/// [l2_rows]
// The l2_promotion variant's rows: the lesson's minimal kernel with both maps' L2 promotion (the
// granularity at which L2 fetches from DRAM) left at none, then set to 256 bytes.
struct L2Row {
  const char* name;
  CUtensorMapL2promotion promotion;
};
const L2Row kL2Rows[] = {{"l2_promotion_none", CU_TENSOR_MAP_L2_PROMOTION_NONE},
                         {"l2_promotion_256B", CU_TENSOR_MAP_L2_PROMOTION_L2_256B}};
inline TileMaps promoted_maps(const ::Problem& p, CUtensorMapL2promotion promotion) {
  TensorMapRequest in = matrix_request(p.gmem_in.data(), p.view(false));
  TensorMapRequest out = matrix_request(p.gmem_out.data(), p.view(false));
  in.l2_promotion = out.l2_promotion = promotion;
  return {encode_tiled(in), encode_tiled(out)};
}
/// [l2_rows]
struct Variant {
  const char* name;
  const char* summary;
};
// Ranks 3-5 and element strides are checked element by element by the tests, not timed here.
inline constexpr Variant kVariants[] = {
    {"interleave", "NC/4HWC4 images (row interleave_16B), then as a plain map of the same bytes"},
    {"l2_promotion", "the lesson's minimal kernel with L2 promotion none, then 256B"},
};

// Poison, launch, synchronise, compare with the model bit for bit (guard bands included).
course::Comparison verify_boxes(const Tensor& t, const TensorMapRequest& r, const CUtensorMap& map,
                                const BoxWalk& walk, course::GuardedOutput<float>& out,
                                unsigned max_blocks = 0) {
  out.poison();
  box_launch(r.rank)(map, walk, out.data(), max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return out.check(reference(t.host, r, walk), walk.box_elems);
}
course::Comparison verify_l2(const L2Row& row, ::Problem& p, const std::vector<float>& expected,
                             unsigned max_blocks = 0) {
  p.gmem_out.poison();  // then as verify_boxes, with the lesson's reference
  launch_minimal(promoted_maps(p, row.promotion), tile_grid(p.view(false), false), max_blocks);
  COURSE_CHECK(cudaDeviceSynchronize());
  return p.gmem_out.check(expected, p.pitch_elems);
}
// One row of boxes, verified, then timed: each landed element counts as read once and written once.
void check_boxes(const course::Options& opts, course::Report& report, const std::string& name,
                 const Tensor& t, const TensorMapRequest& r) {
  const CUtensorMap map = encode_tiled(r);  // the rules first: a refusal throws its sentence
  const BoxWalk walk = box_walk(r);
  course::GuardedOutput<float> out(std::size_t(walk.num_boxes) * walk.box_elems);
  course::check_and_time(
      opts, report, name, [&] { return verify_boxes(t, r, map, walk, out); },
      [&] { box_launch(r.rank)(map, walk, out.data(), 0); }, 2 * out.size() * sizeof(float),
      t.host.size() * 4);
}
void run(const course::Options& opts, course::Report& report) {
  const std::uint64_t slabs = opts.size_bytes / kSlabBytes;
  course::Options rows = opts;
  rows.variant.clear();  // a variant may report several rows: each is checked, then timed
  if (course::selected(opts, "interleave")) {
    const Tensor t(patterned(slabs * kSlabBytes / sizeof(float)));  // `slabs` images
    check_boxes(rows, report, "interleave_16B", t,
                interleaved_request(t.gmem.data(), slabs, CU_TENSOR_MAP_INTERLEAVE_16B));
    check_boxes(rows, report, "interleave_16B_as_plain", t,
                interleaved_as_plain(t.gmem.data(), slabs));
  }
  if (course::selected(opts, "l2_promotion")) {
    ::Problem p(static_cast<int>(slabs), kMatrixCols);  // the lesson's matrix: a row per slab
    const std::vector<float> expected = ::reference(p.host_in, p.view(false), false);
    for (const L2Row& row : kL2Rows) {
      const TileMaps maps = promoted_maps(p, row.promotion);
      course::check_and_time(
          rows, report, row.name, [&] { return verify_l2(row, p, expected); },
          [&] { launch_minimal(maps, tile_grid(p.view(false), false), 0); },
          2 * slabs * kSlabBytes);
    }
  }
}

// A map in one line: what lands per dimension, and the expect-tx, or the rule it breaks.
inline std::string describe(const TensorMapRequest& r) {
  std::ostringstream s;
  for (std::uint32_t i = 0; i < r.rank; ++i)
    s << (i ? ", " : "lands {") << landed_elems(r, i) << " of " << r.box_dim[i];
  if (const std::optional<std::string> broken = broken_tensor_map_rule(r))
    return s.str() + "}: rejected: " + *broken;
  s << "}: expect-tx " << box_tx_bytes(r) << " bytes per load";
  return s.str();
}
course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tensor_map_options";
  info.title = "07 tensor_map_options: rank 3-5, element strides, L2 promotion, interleave";
  info.explanation =
      "Each map's boxes are loaded one at a time per block, written out as they landed in shared "
      "memory\n"
      "and compared with a host model of every element (fill included), which also gives the "
      "expect-tx.\n"
      "--size: each tensor's bytes, whole 64 KiB slabs (images, the lesson's matrix rows).";
  info.requirement = {9, 0, false, "cp.async.bulk.tensor (TMA)"};
  info.verify_bytes = 16u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes != 0 && bytes % kSlabBytes == 0 && bytes / kSlabBytes <= (1u << 16))
      return std::nullopt;
    return "--size must be a whole number of 64 KiB slabs, at most 4 GiB";
  };
  info.host_model = [](std::ostream& out) {  // the maps of one slab
    // The rules read the address's value only.
    const float* base = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);
    for (const auto& [name, r] :
         {std::pair{"rank5_3d", array_request(base, slab_array(1), 3)},
          {"rank5_4d", array_request(base, slab_array(1), 4)},
          {"rank5_5d", array_request(base, slab_array(1), 5)},
          {"element_strides", complex_request(base, 1, 8192)},
          {"interleave_16B", interleaved_request(base, 1, CU_TENSOR_MAP_INTERLEAVE_16B)},
          {"interleave_32B", interleaved_request(base, 1, CU_TENSOR_MAP_INTERLEAVE_32B)}}) {
      out << name << ": " << describe(r) << '\n';
    }
  };
  return info;
}

}  // namespace options

#ifdef TENSOR_MAP_OPTIONS_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, options::chapter_info(), options::kVariants,
                              options::run);
}
#endif
