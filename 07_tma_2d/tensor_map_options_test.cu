// Tests for 07_tma_2d's second lesson, tensor_map_options.cu. On the CPU: the model of what one
// tensor load lands in shared memory (ceil(boxDim / stride) per dimension, dimension 0 unstrided on
// a plain map, zero fill, against a direct formula and by hand), the walk of boxes (which refuses
// an interleaved map: the model does not cover one), the rank-3/4/5 views of one array, the
// expect-tx of every map, the rules on the lesson's maps, on interleaved requests and on broken
// ones, the command line, and the emitted PTX (.2d-.5d tensor loads, tiled mode). On the GPU: every map bit-exact on awkward
// shapes (partial boxes at both edges, one block walking every phase), the expect-tx measured exact
// with a probe that waits without trapping, a wrong expect-tx diagnosed by the bounded wait, the L2
// rows, and a refused request ending the program with its rule.
#include "tensor_map_options.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

namespace {

using options::Array5;
using options::box_launch;
using options::box_start;
using options::box_tx_bytes;
using options::box_walk;
using options::BoxWalk;
using options::kBoxAlign;
using options::landed_elems;
using options::load_box_model;
using options::Tensor;

// The rules look at the address's value only; this one is 256-byte aligned.
const float* const kAligned = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every element a load lands, computed one element at a time from its index in shared memory:
// an independent statement of the model (the model walks box rows like an odometer). With
// interleave an index of dimension 0 is a slice of 4 or 8 floats, dimension rank - 2 lands one
// index, and dimension 0's stride counts; a swizzle moves 16-byte chunk c of 128-byte line l to
// chunk c xor (l mod chunks per span).
std::vector<float> direct_box(const std::vector<float>& gmem, const TensorMapRequest& r, const std::int32_t* start) {
  const bool interleaved = r.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  const std::size_t unit = r.interleave == CU_TENSOR_MAP_INTERLEAVE_16B   ? 4
                           : r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 8
                                                                           : element_bytes(r.data_type) / sizeof(float);
  std::uint32_t landed[5], stride[5];
  std::size_t total = unit;
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    stride[i] = i == 0 && !interleaved ? 1 : r.element_strides[i];
    landed[i] = interleaved && i + 2 == r.rank ? 1 : (r.box_dim[i] + stride[i] - 1) / stride[i];
    total *= landed[i];
  }
  const std::size_t span_chunks = r.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 1 : std::size_t{1} << r.swizzle;  // 2, 4, 8
  std::vector<float> box(total);
  for (std::size_t e = 0; e < total; ++e) {
    std::size_t rest = e / unit;
    std::int64_t offset = static_cast<std::int64_t>(e % unit);
    bool inside = true;
    for (std::uint32_t i = 0; i < r.rank; ++i) {
      const std::int64_t at = start[i] + static_cast<std::int64_t>(rest % landed[i]) * stride[i];
      rest /= landed[i];
      inside = inside && at >= 0 && at < static_cast<std::int64_t>(r.global_dim[i]);
      offset += at * (i == 0 ? static_cast<std::int64_t>(unit) : static_cast<std::int64_t>(r.global_strides[i - 1] / sizeof(float)));
    }
    const std::size_t line = e / 32, chunk = e / 4 % 8, to = line * 32 + (chunk ^ (line % span_chunks)) * 4 + e % 4;
    box[to] = inside ? gmem[static_cast<std::size_t>(offset)] : 0.0f;
  }
  return box;
}

std::vector<float> model_box(const std::vector<float>& gmem, const TensorMapRequest& r, const std::int32_t* start) {
  std::vector<float> box(box_tx_bytes(r) / sizeof(float));
  load_box_model(gmem, r, start, box.data());
  return box;
}

// A packed float tensor of the given dimensions whose element i holds i + 1 (0 is the fill).
std::vector<float> counting(std::size_t elems) {
  std::vector<float> values(elems);
  for (std::size_t i = 0; i < elems; ++i) values[i] = static_cast<float>(i + 1);
  return values;
}

// ---- The model -----------------------------------------------------------------------------------

TEST(HostOptionsModel, LandedElementsAreCeilOfBoxOverStrideExceptDimensionZero) {
  TensorMapRequest r = options::array_request(kAligned, {{64, 100, 1, 1, 1}, {16, 32, 1, 1, 1}}, 2);
  const std::uint32_t expected[] = {0, 32, 16, 11, 8, 7, 6, 5, 4};  // ceil(32 / s), s = 1..8
  for (std::uint32_t s = 1; s <= 8; ++s) {
    r.element_strides[1] = s;
    EXPECT_EQ(landed_elems(r, 1), expected[s]) << "stride " << s;
    EXPECT_EQ(box_tx_bytes(r), 16 * expected[s] * sizeof(float)) << "stride " << s;
  }
  r.element_strides[0] = 2;
  EXPECT_EQ(landed_elems(r, 0), 16u) << "without interleave the driver ignores dimension 0's stride";
}

// An interleaved box: an index of dimension 0 is a whole slice whatever the data type, dimension
// 0's stride counts, and dimension rank - 2 lands one index whatever its boxDim (measured on an H100).
TEST(HostOptionsModel, AnInterleavedIndexOfDimensionZeroIsASlice) {
  TensorMapRequest r = options::interleaved_request(kAligned, 2, CU_TENSOR_MAP_INTERLEAVE_16B);
  EXPECT_EQ(options::unit_bytes(r), 16u);
  EXPECT_EQ(box_tx_bytes(r), 32u * 8 * 16) << "32 pixels x 8 rows of one 16-byte slice";
  EXPECT_EQ(box_walk(r).num_boxes, 2 * 2 * 4 * 2) << "2 x 2 boxes per slice-plane, 4 planes, 2 images";
  r.box_dim[2] = 3;
  EXPECT_EQ(landed_elems(r, 2), 1u) << "the slices: one per load, whatever boxDim";
  r.element_strides[0] = 3;
  EXPECT_EQ(landed_elems(r, 0), 11u) << "ceil(32 / 3) pixels: dimension 0's stride counts with interleave";
  const TensorMapRequest wide = options::interleaved_request(kAligned, 2, CU_TENSOR_MAP_INTERLEAVE_32B);
  EXPECT_EQ(options::unit_bytes(wide), 32u);
  EXPECT_EQ(box_tx_bytes(wide), 32u * 8 * 32);
  TensorMapRequest three = options::interleaved_request(kAligned, 2, CU_TENSOR_MAP_INTERLEAVE_16B);
  three.rank = 3;  // {pixels, rows, slices}: now dimension 1 is rank - 2
  three.box_dim[1] = 8;
  EXPECT_EQ(landed_elems(three, 1), 1u);
}

// The 16-byte interleave of NC/4HWC4 images lands what a plain map of the same bytes lands,
// {4 channels, pixels, rows, slices, images} with a box of 4 channels: 16 bytes per pixel either way.
TEST(HostOptionsModel, TheSixteenByteInterleaveLandsAsAPlainMapOfTheSameBytes) {
  const std::vector<float> gmem = options::patterned(3 * options::kSlabBytes / sizeof(float));
  const TensorMapRequest interleaved = options::interleaved_request(kAligned, 3, CU_TENSOR_MAP_INTERLEAVE_16B);
  const TensorMapRequest plain = options::interleaved_as_plain(kAligned, 3);
  EXPECT_EQ(box_tx_bytes(interleaved), box_tx_bytes(plain));
  EXPECT_EQ(options::reference(gmem, interleaved, box_walk(interleaved)), options::reference(gmem, plain, box_walk(plain)));
}

// The 32-byte interleave with its 32-byte swizzle: in every other 128-byte line of shared memory
// the two 16-byte halves of each slice trade places.
TEST(HostOptionsModel, TheThirtyTwoByteSwizzleSwapsHalvesInOddLines) {
  const std::vector<float> gmem = counting(options::kSlabBytes / sizeof(float));
  TensorMapRequest r = options::interleaved_request(kAligned, 1, CU_TENSOR_MAP_INTERLEAVE_32B);
  const std::int32_t start[4] = {0, 0, 0, 0};
  const std::vector<float> swizzled = model_box(gmem, r, start);
  r.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  const std::vector<float> plain = model_box(gmem, r, start);
  ASSERT_EQ(swizzled.size(), plain.size());
  EXPECT_EQ(std::vector<float>(swizzled.begin(), swizzled.begin() + 32), std::vector<float>(plain.begin(), plain.begin() + 32))
      << "line 0 keeps its order";
  EXPECT_EQ(swizzled[32], plain[36]) << "line 1 starts with the second half of pixel 4's slice";
  EXPECT_EQ(swizzled[36], plain[32]);
  EXPECT_EQ(plain[8], 9.0f) << "pixel 1's slice: floats 8..15 of the image";
}

TEST(HostOptionsModel, ExpectTxOfTheLessonsMaps) {
  for (std::uint32_t rank : {3u, 4u, 5u}) {
    const TensorMapRequest r = options::array_request(kAligned, options::slab_array(16), rank);
    EXPECT_EQ(box_tx_bytes(r), 64u * 4 * 2 * 2 * 3 * 4) << "rank " << rank << ": the same elements per box";
    EXPECT_EQ(box_walk(r).box_elems * 4, box_tx_bytes(r));
  }
  EXPECT_EQ(box_tx_bytes(options::complex_request(kAligned, 16, 8192)), 64u * 16 * 4) << "64 floats of 16 rows";
}

// A 3 x 8 matrix (row r, column c holds 1000 r + c + 1), loaded by hand.
TEST(HostOptionsModel, LandsWhatAHandCountSays) {
  std::vector<float> gmem(3 * 8);
  for (int row = 0; row < 3; ++row) {
    for (int c = 0; c < 8; ++c) gmem[row * 8 + c] = float(1000 * row + c + 1);
  }
  TensorMapRequest r = options::array_request(kAligned, {{8, 3, 1, 1, 1}, {4, 4, 1, 1, 1}}, 2);
  r.element_strides[1] = 2;  // rows start, start + 2: two of the box's four
  const std::int32_t above[2] = {4, -1};
  EXPECT_EQ(model_box(gmem, r, above), (std::vector<float>{0, 0, 0, 0, 1005, 1006, 1007, 1008}));
  r.element_strides[0] = 3;  // ignored: dimension 0 of a plain map
  const std::int32_t right[2] = {4, 0};
  EXPECT_EQ(model_box(gmem, r, right), (std::vector<float>{5, 6, 7, 8, 2005, 2006, 2007, 2008}));
  r.element_strides[1] = 1;
  const std::int32_t corner[2] = {-4, 2};
  EXPECT_EQ(model_box(gmem, r, corner), std::vector<float>(16, 0.0f)) << "rows 2..5, columns -4..-1: column -1 is outside";
  const std::int32_t last[2] = {4, 2};
  EXPECT_EQ(model_box(gmem, r, last), (std::vector<float>{2005, 2006, 2007, 2008, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

// 3000 random boxes over random tensors (dimensions 1..7, boxes 1..9, element strides 1..8, padded
// rows): the model against the direct formula. Interleaved: ranks 3 to 5, either interleave (slices
// of 4 or 8 floats), any swizzle whose whole pattern the box fills (most swizzled boxes get rows
// of one pattern); plain: ranks 1 to 5, 4- or 8-byte elements.
void expect_model_matches_direct_formula(unsigned seed, bool interleaved, int& swizzled_boxes) {
  std::mt19937 rng(seed);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n = 0; n < 3000; ++n) {
    TensorMapRequest r;
    r.rank = static_cast<std::uint32_t>(uniform(interleaved ? 3 : 1, 5));
    if (interleaved) {
      r.interleave = uniform(0, 1) ? CU_TENSOR_MAP_INTERLEAVE_16B : CU_TENSOR_MAP_INTERLEAVE_32B;
      r.swizzle = static_cast<CUtensorMapSwizzle>(uniform(0, 3));
    } else {
      r.data_type = uniform(0, 1) ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    }
    std::uint64_t stride_elems = options::unit_bytes(r) / sizeof(float);  // floats per index of dimension 0
    const std::size_t pattern_bytes = r.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 16 : 128u << r.swizzle;  // 256, 512, 1024
    // A swizzled box gets rows of one whole pattern (8 to 64 slices) over about as many pixels.
    const int pattern_slices = static_cast<int>(pattern_bytes / options::unit_bytes(r));
    for (std::uint32_t i = 0; i < r.rank; ++i) {
      const bool pattern_row = i == 0 && r.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && uniform(0, 3) != 0;
      r.global_dim[i] = static_cast<std::uint64_t>(pattern_row ? uniform(pattern_slices - 3, pattern_slices + 3) : uniform(1, 7));
      r.box_dim[i] = static_cast<std::uint32_t>(pattern_row ? pattern_slices : uniform(1, 9));
      r.element_strides[i] = static_cast<std::uint32_t>(pattern_row ? 1 : uniform(1, 8));
      if (i > 0) r.global_strides[i - 1] = stride_elems * sizeof(float);
      stride_elems *= r.global_dim[i] + static_cast<std::uint64_t>(uniform(0, 2));  // padding
    }
    if (box_tx_bytes(r) % pattern_bytes != 0) r.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;  // the model's own limit
    swizzled_boxes += r.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE;
    const std::vector<float> gmem = counting(stride_elems);
    std::int32_t start[5];
    for (std::uint32_t i = 0; i < r.rank; ++i) start[i] = uniform(-int(r.box_dim[i]), int(r.global_dim[i]));
    ASSERT_EQ(model_box(gmem, r, start), direct_box(gmem, r, start))
        << (interleaved ? "interleaved " : "") << "random box " << n << ", rank " << r.rank;
  }
}

TEST(HostOptionsModel, AgreesWithTheDirectFormulaOnRandomBoxes) {
  int swizzled_boxes = 0;
  expect_model_matches_direct_formula(7, false, swizzled_boxes);
}

TEST(HostOptionsModel, AgreesWithTheDirectFormulaOnRandomInterleavedBoxes) {
  int swizzled_boxes = 0;
  expect_model_matches_direct_formula(11, true, swizzled_boxes);
  EXPECT_GE(swizzled_boxes, 100) << "too few random boxes filled a whole swizzle pattern to test the swizzle";
}

// The model holds what lands as floats: 1- and 2-byte elements of a plain map it refuses.
TEST(HostOptionsModel, RefusesElementsNarrowerThanAFloat) {
  TensorMapRequest r = options::array_request(kAligned, {{64, 4, 1, 1, 1}, {16, 2, 1, 1, 1}}, 2);
  r.data_type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
  const std::vector<float> gmem(64 * 4);
  const std::int32_t start[2] = {0, 0};
  std::vector<float> box(64);
  EXPECT_THROW(load_box_model(gmem, r, start, box.data()), std::invalid_argument);
}

// With element strides 1, the boxes of a walk land every element of the tensor once, and the rest
// of every box is fill; also with the first boxes starting before the tensor.
TEST(HostOptionsWalk, BoxesLandEveryElementOnce) {
  const Array5 a{{20, 7, 3, 5, 3}, {8, 4, 2, 2, 2}};
  const std::vector<float> gmem = counting(20 * 7 * 3 * 5 * 3);
  for (std::uint32_t rank : {3u, 4u, 5u}) {
    const TensorMapRequest r = options::array_request(kAligned, a, rank);
    for (const std::array<std::int32_t, 5> origin : {std::array<std::int32_t, 5>{}, {-4, -1, -1, -1, -1}}) {
      const BoxWalk w = box_walk(r, origin);
      std::vector<int> seen(gmem.size(), 0);
      for (float v : options::reference(gmem, r, w)) {
        if (v != 0.0f) ++seen.at(static_cast<std::size_t>(v) - 1);
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(gmem.size()))
          << "rank " << rank << ", origin " << origin[0] << ": every element lands exactly once";
      for (std::uint32_t i = 0; i < rank; ++i) {
        EXPECT_EQ(std::int64_t(w.boxes[i]) * r.box_dim[i] + origin[i] >= std::int64_t(r.global_dim[i]), true);
        EXPECT_LT(std::int64_t(w.boxes[i] - 1) * r.box_dim[i] + origin[i], std::int64_t(r.global_dim[i])) << "no empty box";
      }
    }
  }
}

TEST(HostOptionsWalk, BoxStartsFollowTheDimensionsInnermostFirst) {
  const TensorMapRequest r = options::array_request(kAligned, {{20, 7, 3, 1, 1}, {8, 4, 2, 1, 1}}, 3);
  const BoxWalk w = box_walk(r, {-4, 0, -1, 0, 0});
  EXPECT_EQ(w.boxes[0], 3);
  EXPECT_EQ(w.boxes[1], 2);
  EXPECT_EQ(w.boxes[2], 2);
  EXPECT_EQ(w.num_boxes, 12);
  std::int32_t start[3];
  box_start(w, 7, start);  // 7 = 1 + 3 * (0 + 2 * 1)
  EXPECT_EQ(start[0], 4);
  EXPECT_EQ(start[1], 0);
  EXPECT_EQ(start[2], 1);
}

// ---- The tensors: merged views, complex rows ----------------------------------------------------

TEST(HostOptionsRanks, MergedViewsAddressTheSameBytes) {
  const Array5 a{{20, 7, 3, 5, 3}, {8, 4, 2, 2, 2}};
  const TensorMapRequest r5 = options::array_request(kAligned, a, 5), r4 = options::array_request(kAligned, a, 4),
                         r3 = options::array_request(kAligned, a, 3);
  EXPECT_EQ(r4.global_dim[3], 15u);
  EXPECT_EQ(r4.box_dim[3], 4u);
  EXPECT_EQ(r3.global_dim[2], 45u);
  EXPECT_EQ(r3.box_dim[2], 8u);
  EXPECT_EQ(box_tx_bytes(r5), box_tx_bytes(r4));
  EXPECT_EQ(box_tx_bytes(r5), box_tx_bytes(r3));
  auto offset = [](const TensorMapRequest& r, const std::uint64_t* at) {
    std::uint64_t bytes = at[0] * sizeof(float);
    for (std::uint32_t i = 1; i < r.rank; ++i) bytes += at[i] * r.global_strides[i - 1];
    return bytes;
  };
  for (std::uint64_t e = 0, n = 20 * 7 * 3 * 5 * 3; e < n; ++e) {
    const std::uint64_t i0 = e % 20, i1 = e / 20 % 7, i2 = e / 140 % 3, i3 = e / 420 % 5, i4 = e / 2100;
    const std::uint64_t at5[] = {i0, i1, i2, i3, i4}, at4[] = {i0, i1, i2, i3 + 5 * i4}, at3[] = {i0, i1, i2 + 3 * (i3 + 5 * i4)};
    ASSERT_EQ(offset(r5, at5), e * sizeof(float));
    ASSERT_EQ(offset(r4, at4), e * sizeof(float));
    ASSERT_EQ(offset(r3, at3), e * sizeof(float));
  }
}

TEST(HostOptionsComplex, RowsOfComplexFloatsAreTwiceAsManyFloats) {
  const TensorMapRequest r = options::complex_request(kAligned, 37, 100);
  EXPECT_EQ(r.rank, 2u);
  EXPECT_EQ(r.global_dim[0], 200u);
  EXPECT_EQ(r.global_strides[0], 800u);
  EXPECT_EQ(r.element_strides[0], 2u);
  EXPECT_EQ(landed_elems(r, 0), 64u) << "real and imaginary parts: the stride of dimension 0 is ignored";
  EXPECT_EQ(landed_elems(r, 1), 16u);
  // Box rows start, start + 2, ...: with boxes at multiples of 32 rows, the even rows.
  std::vector<float> gmem = counting(200 * 37);
  const std::int32_t start[2] = {64, 32};
  const std::vector<float> box = model_box(gmem, r, start);
  EXPECT_EQ(box[0], float(32 * 200 + 64 + 1)) << "re of element 32 of row 32";
  EXPECT_EQ(box[1], float(32 * 200 + 65 + 1)) << "im of element 32 of row 32";
  EXPECT_EQ(box[64], float(34 * 200 + 64 + 1)) << "the next landed row is row 34";
  EXPECT_EQ(box[3 * 64], 0.0f) << "row 38 is past the last of 37";
}

// ---- The rules ---------------------------------------------------------------------------------

TEST(HostOptionsRules, TheLessonsMapsPassAtEverySize) {
  for (std::uint64_t slabs : {1ull, 3ull, 256ull, 16384ull, 65536ull}) {
    for (std::uint32_t rank : {3u, 4u, 5u}) {
      const std::optional<std::string> broken = broken_tensor_map_rule(options::array_request(kAligned, options::slab_array(slabs), rank));
      EXPECT_FALSE(broken) << slabs << " slabs, rank " << rank << ": " << broken.value_or("");
    }
    EXPECT_FALSE(broken_tensor_map_rule(options::complex_request(kAligned, slabs, 8192))) << slabs;
  }
  EXPECT_FALSE(broken_tensor_map_rule(options::complex_request(kAligned, 37, 100)));
}

// The lesson's interleaved maps pass at every size; a 16-byte interleave takes any swizzle, and
// dimension 0's stride; with interleave a row of pixels spans pixels x slice bytes, not x elements.
TEST(HostOptionsRules, InterleavedRequestsTheRulesAccept) {
  for (std::uint64_t images : {1ull, 3ull, 65536ull}) {
    for (CUtensorMapInterleave i : {CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B}) {
      const TensorMapRequest r = options::interleaved_request(kAligned, images, i);
      EXPECT_FALSE(broken_tensor_map_rule(r)) << images << ": " << broken_tensor_map_rule(r).value_or("");
    }
  }
  TensorMapRequest any = options::interleaved_request(kAligned, 2, CU_TENSOR_MAP_INTERLEAVE_16B);
  any.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  any.element_strides[0] = 2;  // allowed by the PTX ISA on an interleaved map
  EXPECT_FALSE(broken_tensor_map_rule(any)) << broken_tensor_map_rule(any).value_or("");
  TensorMapRequest overlapping = any;
  overlapping.global_strides[0] = 64 * 4;  // 64 pixels of 4 bytes: but a pixel is a 16-byte slice
  EXPECT_TRUE(contains(broken_tensor_map_rule(overlapping).value_or(""), "is less than the 1024 bytes"));
}

struct BrokenCase {
  const char* name;
  TensorMapRequest request;
  const char* says;
};

std::vector<BrokenCase> broken_cases() {
  TensorMapRequest wide = options::interleaved_request(kAligned, 2, CU_TENSOR_MAP_INTERLEAVE_32B);
  wide.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;  // NC/8HWC8 floats: 32-byte slices, but no swizzle
  TensorMapRequest flat = options::complex_request(kAligned, 37, 100);
  flat.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  TensorMapRequest nine = options::array_request(kAligned, options::slab_array(4), 5);
  nine.element_strides[3] = 9;
  TensorMapRequest narrow = options::array_request(kAligned, {{8, 5, 3, 2, 2}, {6, 4, 2, 1, 1}}, 5);
  TensorMapRequest merged = options::array_request(kAligned, {{64, 8, 8, 8, 8}, {64, 4, 8, 8, 8}}, 3);
  TensorMapRequest huge = options::array_request(kAligned, {{256, 8, 4, 2, 64}, {256, 8, 4, 2, 4}}, 5);
  return {{"interleave 32B without its swizzle", wide, "a 32-byte interleave needs the 32-byte swizzle"},
          {"interleave in rank 2", flat, "an interleaved layout needs rank 3 or more, not 2"},
          {"element stride 9", nine, "elementStrides[3] = 9 is outside 1..8"},
          {"box rows of 24 bytes", narrow, "boxDim[0] x element size = 24 bytes is not a multiple of 16"},
          {"merged box of 512", merged, "boxDim[2] = 512 is outside 1..256"},
          {"box of 256 KiB", huge, "one copy of this box moves 262144 bytes"}};
}

TEST(HostOptionsRules, BrokenRequestsAreRefusedWithTheirRuleBeforeTheDriver) {
  for (const BrokenCase& c : broken_cases()) {
    const std::optional<std::string> broken = broken_tensor_map_rule(c.request);
    ASSERT_TRUE(broken) << c.name;
    EXPECT_TRUE(contains(*broken, c.says)) << c.name << ": " << *broken;
    try {
      encode_tiled(c.request);
      ADD_FAILURE() << c.name << ": encode_tiled called the driver";
    } catch (const std::invalid_argument& error) {
      EXPECT_TRUE(contains(error.what(), std::string("tensor map rejected on the host: ") + c.says)) << error.what();
    }
  }
}

// ---- The program ---------------------------------------------------------------------------------

TEST(HostOptionsChapter, SizeIsWholeSlabs) {
  const course::ChapterInfo info = options::chapter_info();
  EXPECT_FALSE(info.size_rule(64 << 10));
  EXPECT_FALSE(info.size_rule(std::size_t{4} << 30));
  EXPECT_TRUE(info.size_rule(0));
  EXPECT_TRUE(info.size_rule(100 << 10));
  EXPECT_TRUE(info.size_rule((std::size_t{4} << 30) + (64 << 10)));
}

TEST(HostOptionsChapter, BadSizeGivesItsRuleAndTheUsageCode) {
  std::vector<std::string> args = {"tensor_map_options", "--size=100K"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const int code = course::chapter_main(static_cast<int>(argv.size()), argv.data(), options::chapter_info(),
                                        options::kVariants, options::run);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, course::kExitUsage);
  EXPECT_TRUE(contains(err, "--size must be a whole number of 64 KiB slabs")) << err;
}

TEST(HostOptionsChapter, HostModelGivesEachMapsExpectTx) {
  std::ostringstream text;
  options::chapter_info().host_model(text);
  for (const char* line : {"rank5_3d: lands {64 of 64, 4 of 4, 12 of 12}: expect-tx 12288 bytes per load",
                           "rank5_5d: lands {64 of 64, 4 of 4, 2 of 2, 2 of 2, 3 of 3}: expect-tx 12288 bytes per load",
                           "element_strides: lands {64 of 64, 16 of 32}: expect-tx 4096 bytes per load",
                           "interleave_16B: lands {32 of 32, 8 of 8, 1 of 1, 1 of 1}: expect-tx 4096 bytes per load",
                           "interleave_32B: lands {32 of 32, 8 of 8, 1 of 1, 1 of 1}: expect-tx 8192 bytes per load"}) {
    EXPECT_TRUE(contains(text.str(), line)) << line << "\n" << text.str();
  }
}

// ---- What the compiler emits ---------------------------------------------------------------------

class HostOptionsCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("tensor_map_options", "90"); }
  static std::string kernel(const char* name) {
    const std::string body = course::ptx_kernel_body(ptx_, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static inline std::string ptx_;
};

// boxes_kernel<N> loads with the N-dimensional tensor copy, one per box, completing on the barrier
// by bytes, and stores what landed with plain st.global: no tensor store, no other copy.
TEST_F(HostOptionsCodegen, EachRankLoadsWithItsOwnTensorCopy) {
  for (int rank = 2; rank <= 5; ++rank) {
    const std::string name = "boxes_kernelILi" + std::to_string(rank) + "EE";
    const std::string k = kernel(name.c_str());
    const std::string load = "cp.async.bulk.tensor." + std::to_string(rank) +
                             "d.shared::cta.global.tile.mbarrier::complete_tx::bytes";
    EXPECT_EQ(course::count_matches(k, "cp\\.async\\.bulk\\.tensor\\." + std::to_string(rank) + "d\\.shared::cta\\.global\\.tile\\.mbarrier"), 1)
        << name << ": " << load;
    EXPECT_EQ(course::count_matches(k, R"(cp\.async\.bulk\.tensor\.\dd\.global)"), 0) << name << ": no tensor store";
    EXPECT_EQ(course::count_matches(k, R"(cp\.async\.bulk\.tensor)"), 1) << name;
    EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx")) << name;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
    EXPECT_TRUE(contains(k, "st.global")) << name << ": what landed is written out by the threads";
    EXPECT_FALSE(contains(k, "ld.global")) << name << ": nothing read from global memory but by TMA";
    EXPECT_TRUE(contains(k, "cvta.param.u64")) << name << ": the map is the parameter itself";
  }
}

TEST_F(HostOptionsCodegen, TiledModeOnly) {
  EXPECT_EQ(course::count_matches(ptx_, R"(\.im2col)"), 0) << "tiled mode only";
}

TEST_F(HostOptionsCodegen, MachineCodeUsesTheTmaUnit) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  for (int rank = 2; rank <= 5; ++rank) {
    const std::string k = course::sass_kernel_body(sass, "boxes_kernelILi" + std::to_string(rank) + "EE");
    ASSERT_FALSE(k.empty()) << "rank " << rank;
    EXPECT_TRUE(contains(k, "UTMALDG")) << "rank " << rank;
    EXPECT_FALSE(contains(k, "UTMASTG")) << "rank " << rank;
  }
}

// ---- On the GPU: every map bit-exact ----------------------------------------------------------

class Sm90_Options : public course::GpuTest {
 protected:
  Sm90_Options() : GpuTest(options::chapter_info().requirement) {}
  // Loads every box of the walk and compares what landed with the model (guard bands included).
  static course::Comparison boxes(const Tensor& t, const TensorMapRequest& r, const std::array<std::int32_t, 5>& origin = {},
                                  unsigned max_blocks = 0) {
    const BoxWalk walk = box_walk(r, origin);
    course::GuardedOutput<float> out(std::size_t(walk.num_boxes) * walk.box_elems);
    return options::verify_boxes(t, r, encode_tiled(r), walk, out, max_blocks);
  }
  // What landed, box after box, as the device wrote it.
  static std::vector<float> landed(const TensorMapRequest& r, const std::array<std::int32_t, 5>& origin = {}) {
    const BoxWalk walk = box_walk(r, origin);
    course::DeviceBuffer<float> out(std::size_t(walk.num_boxes) * walk.box_elems);
    box_launch(r.rank)(encode_tiled(r), walk, out.data(), 0);
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<float> host(out.size());
    out.download(host.data());
    return host;
  }
};

#define EXPECT_MATCHES(comparison, what)                                                      \
  do {                                                                                        \
    const course::Comparison result_ = (comparison);                                          \
    EXPECT_TRUE(result_.ok()) << what << ": " << result_.summary() << '\n' << result_.first; \
  } while (0)

TEST_F(Sm90_Options, RanksThreeToFiveOnAnAwkwardArray) {
  const Array5 a{{20, 7, 3, 5, 3}, {8, 4, 2, 2, 2}};  // a partial box at the end of every dimension
  const Tensor t(options::patterned(20 * 7 * 3 * 5 * 3));
  for (std::uint32_t rank : {3u, 4u, 5u}) {
    const TensorMapRequest r = options::array_request(t.gmem.data(), a, rank);
    EXPECT_MATCHES(boxes(t, r), "rank " << rank);
    EXPECT_MATCHES(boxes(t, r, {-4, -1, -1, -1, -1}), "rank " << rank << ", boxes hanging over both edges");
    EXPECT_MATCHES(boxes(t, r, {}, 1), "rank " << rank << ", one block walking every box and phase");
  }
}

TEST_F(Sm90_Options, RanksThreeToFiveOnTheLessonsSlabs) {
  for (std::uint64_t slabs : {1ull, 4ull}) {
    const Tensor t(options::patterned(slabs * options::kSlabBytes / sizeof(float)));
    for (std::uint32_t rank : {3u, 4u, 5u}) {
      EXPECT_MATCHES(boxes(t, options::array_request(t.gmem.data(), options::slab_array(slabs), rank)),
                     slabs << " slabs, rank " << rank);
    }
  }
}

TEST_F(Sm90_Options, BoxLargerThanTheTensorIsMostlyFill) {
  const Tensor t(options::patterned(8 * 3 * 2));
  const TensorMapRequest r = options::array_request(t.gmem.data(), {{8, 3, 2, 1, 1}, {16, 4, 4, 2, 3}}, 5);
  EXPECT_MATCHES(boxes(t, r), "one box of 16 x 4 x 4 x 2 x 3 over an 8 x 3 x 2 tensor");
  EXPECT_MATCHES(boxes(t, r, {-8, -1, -2, -1, -2}), "the same box starting before the tensor in every dimension");
}

TEST_F(Sm90_Options, ComplexRowsLandWholeAndEveryOtherRow) {
  const Tensor t(options::patterned(2 * 100 * 37));
  const TensorMapRequest r = options::complex_request(t.gmem.data(), 37, 100);  // 37 rows of 100 complex floats
  EXPECT_MATCHES(boxes(t, r), "37 rows of 100 complex floats");
  EXPECT_MATCHES(boxes(t, r, {-64, -3, 0, 0, 0}), "boxes starting before the first row and column");
  const std::vector<float> first = landed(r);
  EXPECT_EQ(std::memcmp(&first[1], &t.host[1], sizeof(float)), 0)
      << "the imaginary part of element 0 is in shared memory: elementStrides[0] = 2 was ignored";
  EXPECT_EQ(std::memcmp(&first[64], &t.host[2 * 2 * 100], sizeof(float)), 0) << "the second landed row is row 2";
}

TEST_F(Sm90_Options, EveryStrideOfAnOuterDimension) {
  const Tensor t(options::patterned(2 * 100 * 37));
  for (std::uint32_t s = 1; s <= 8; ++s) {
    TensorMapRequest r = options::complex_request(t.gmem.data(), 37, 100);
    r.element_strides[1] = s;
    EXPECT_MATCHES(boxes(t, r, {0, -5, 0, 0, 0}), "stride " << s << ": ceil(32 / " << s << ") rows per box");
  }
  const Array5 a{{20, 7, 9, 5, 3}, {8, 5, 7, 3, 2}};
  const Tensor t5(options::patterned(20 * 7 * 9 * 5 * 3));
  TensorMapRequest r = options::array_request(t5.gmem.data(), a, 5);
  r.element_strides[1] = 2;
  r.element_strides[2] = 3;
  r.element_strides[4] = 2;
  EXPECT_MATCHES(boxes(t5, r), "rank 5, strides {1, 2, 3, 1, 2}");
  EXPECT_MATCHES(boxes(t5, r, {-4, -2, -3, 0, -1}), "rank 5, strides {1, 2, 3, 1, 2}, from before the tensor");
}

// Interleaved images: the lesson's maps, boxes hanging over the edges, one block walking them all,
// pixels skipped (dimension 0's stride), a boxDim over the slices (one lands), the 16-byte
// interleave under every swizzle, and ranks 3 and 5 (where rows, or the second of two row
// dimensions, are dimension rank - 2).
TEST_F(Sm90_Options, InterleavedImagesLandAsModelled) {
  const std::uint64_t images = 3;
  const Tensor t(options::patterned(images * options::kSlabBytes / sizeof(float)));
  for (CUtensorMapInterleave i : {CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B}) {
    const std::string what = i == CU_TENSOR_MAP_INTERLEAVE_16B ? "16-byte interleave" : "32-byte interleave";
    const TensorMapRequest r = options::interleaved_request(t.gmem.data(), images, i);
    EXPECT_MATCHES(boxes(t, r), what);
    EXPECT_MATCHES(boxes(t, r, {-5, -3, 0, 0, 0}), what << ", boxes hanging over the edges");
    EXPECT_MATCHES(boxes(t, r, {}, 1), what << ", one block walking every box");
    for (std::uint32_t s : {2u, 3u}) {
      TensorMapRequest strided = r;
      strided.element_strides[0] = s;
      EXPECT_MATCHES(boxes(t, strided, {-1, 0, 0, 0, 0}), what << ", every " << s << "th pixel");
    }
    TensorMapRequest planes = r;
    planes.box_dim[2] = 2;
    EXPECT_MATCHES(boxes(t, planes), what << ", boxDim 2 over the slices: one lands");
    TensorMapRequest three = r;  // {pixels, rows, slices x images}
    three.rank = 3;
    three.global_dim[2] *= images;
    EXPECT_MATCHES(boxes(t, three), what << ", rank 3: one row per load");
    TensorMapRequest five = r;  // {pixels, 8 rows, 2 halves of the image, slices, images}
    five.rank = 5;
    const std::uint64_t dims[5] = {64, 8, 2, r.global_dim[2], images};
    const std::uint64_t strides[4] = {r.global_strides[0], 8 * r.global_strides[0], r.global_strides[1], r.global_strides[2]};
    const std::uint32_t box[5] = {32, 4, 2, 1, 1};
    std::copy(dims, dims + 5, five.global_dim);
    std::copy(strides, strides + 4, five.global_strides);
    std::copy(box, box + 5, five.box_dim);
    EXPECT_MATCHES(boxes(t, five), what << ", rank 5");
  }
  for (CUtensorMapSwizzle swizzle : {CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B}) {
    TensorMapRequest r = options::interleaved_request(t.gmem.data(), images, CU_TENSOR_MAP_INTERLEAVE_16B);
    r.swizzle = swizzle;
    EXPECT_MATCHES(boxes(t, r, {-5, -3, 0, 0, 0}), "16-byte interleave, swizzle " << swizzle_span_bytes(swizzle));
  }
}

// The lesson's claim, on the hardware: the 16-byte interleave lands what the plain map of the same
// bytes lands, box for box.
TEST_F(Sm90_Options, TheSixteenByteInterleaveLandsAsThePlainMap) {
  const Tensor t(options::patterned(2 * options::kSlabBytes / sizeof(float)));
  EXPECT_EQ(landed(options::interleaved_request(t.gmem.data(), 2, CU_TENSOR_MAP_INTERLEAVE_16B)),
            landed(options::interleaved_as_plain(t.gmem.data(), 2)));
}

// ---- On the GPU: the expect-tx, measured ------------------------------------------------------

constexpr unsigned long long kProbeWaitNs = 50'000'000;  // 50 ms: thousands of times a box's load

__device__ bool wait_or_give_up(std::uint64_t* bar, std::uint32_t parity) {
  const unsigned long long begin = course::wait_clock_ns();
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {  // bounded: gives up, and says so, instead of trapping
    if (course::wait_clock_ns() - begin > kProbeWaitNs) return false;
  }
  return true;
}

// Loads box `box` of the walk with expect-tx `tx_bytes`, from one thread, and reports whether that
// count was exact: phase 0 completed (so many bytes arrived), and afterwards a plain arrival alone
// completed phase 1 (the transaction count was back at zero: no more arrived; a count may go
// below zero). A wrong count is a verdict here, not a trapped launch.
template <int kRank>
__global__ void tx_probe_kernel(const __grid_constant__ CUtensorMap map, BoxWalk walk, int box, std::uint32_t tx_bytes,
                                int* verdict) {
  extern __shared__ unsigned char smem_raw[];
  float* smem_box = reinterpret_cast<float*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + kBoxAlign - 1) / kBoxAlign * kBoxAlign);
  __shared__ alignas(8) std::uint64_t bar;
  if (threadIdx.x != 0) return;
  ptx::mbarrier_init(&bar, std::uint32_t{1});                      // one arrival per phase
  ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to TMA
  std::int32_t start[kRank];
  box_start(walk, box, start);
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, tx_bytes);
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_box, &map, start, &bar);
  const bool reached = wait_or_give_up(&bar, 0);
  for (const unsigned long long begin = course::wait_clock_ns(); course::wait_clock_ns() - begin < 1'000'000;) {
  }  // 1 ms more: every byte of the copy has landed
  bool exact = false;
  if (reached) {
    (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar);  // phase 1: no bytes expected
    exact = wait_or_give_up(&bar, 1);
  }
  verdict[0] = reached;
  verdict[1] = exact;
}

struct TxVerdict {
  bool reached, exact;
};

template <int kRank>
TxVerdict probe_rank(const CUtensorMap& map, const BoxWalk& walk, int box, std::uint32_t tx_bytes, std::size_t smem_bytes) {
  course::DeviceBuffer<int> verdict(2);
  verdict.fill_bytes(0);
  COURSE_CHECK(cudaFuncSetAttribute(tx_probe_kernel<kRank>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
  tx_probe_kernel<kRank><<<1, 32, smem_bytes>>>(map, walk, box, tx_bytes, verdict.data());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  int host[2];
  verdict.download(host);
  return {host[0] != 0, host[1] != 0};
}

// The verdict for one count; shared memory room for the whole box as traversed, strides ignored.
TxVerdict probe(const TensorMapRequest& r, const BoxWalk& walk, int box, std::uint32_t tx_bytes) {
  const CUtensorMap map = encode_tiled(r);
  std::size_t traversed = options::unit_bytes(r);  // an element, or with interleave a slice
  for (std::uint32_t i = 0; i < r.rank; ++i) traversed *= r.box_dim[i];
  const std::size_t smem = traversed + kBoxAlign;
  switch (r.rank) {
    case 2: return probe_rank<2>(map, walk, box, tx_bytes, smem);
    case 3: return probe_rank<3>(map, walk, box, tx_bytes, smem);
    case 4: return probe_rank<4>(map, walk, box, tx_bytes, smem);
    default: return probe_rank<5>(map, walk, box, tx_bytes, smem);
  }
}

// Expects the model's count to be exact for the first and the last box of the walk; if it is not,
// says which of the other candidates is.
void expect_model_count_exact(const TensorMapRequest& r, const BoxWalk& walk, std::vector<std::uint32_t> others,
                              const std::string& what) {
  for (int box : {0, walk.num_boxes - 1}) {
    const TxVerdict verdict = probe(r, walk, box, walk.tx_bytes);
    if (verdict.exact) continue;
    std::string exact_one = "none of them";
    for (std::uint32_t candidate : others) {
      if (probe(r, walk, box, candidate).exact) exact_one = std::to_string(candidate) + " bytes";
    }
    ADD_FAILURE() << what << ", box " << box << ": the model's " << walk.tx_bytes << " bytes "
                  << (verdict.reached ? "are fewer than landed" : "never all landed")
                  << "; of the other counts tried the exact one is " << exact_one;
  }
}

class Sm90_OptionsTxBytes : public Sm90_Options {};

TEST_F(Sm90_OptionsTxBytes, TheModelsCountIsExactForEveryMap) {
  course::DeviceBuffer<float> gmem(4 * options::kSlabBytes / sizeof(float));
  for (std::uint32_t rank : {3u, 4u, 5u}) {
    const TensorMapRequest r = options::array_request(gmem.data(), options::slab_array(4), rank);
    expect_model_count_exact(r, box_walk(r), {}, "rank " + std::to_string(rank));
  }
  const TensorMapRequest awkward = options::array_request(gmem.data(), {{20, 7, 3, 5, 3}, {8, 4, 2, 2, 2}}, 5);
  expect_model_count_exact(awkward, box_walk(awkward, {-4, -1, -1, -1, -1}), {}, "partial boxes: the fill counts");
  const TensorMapRequest complex = options::complex_request(gmem.data(), 37, 100);
  expect_model_count_exact(complex, box_walk(complex), {64 * 32 * 4, 32 * 16 * 4}, "elementStrides {2, 2}");
  for (std::uint32_t s : {3u, 5u, 8u}) {
    TensorMapRequest strided = complex;
    strided.element_strides[1] = s;
    expect_model_count_exact(strided, box_walk(strided), {64 * (32 / s) * 4}, "rows stride " + std::to_string(s));
  }
  for (CUtensorMapInterleave i : {CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B}) {
    const TensorMapRequest r = options::interleaved_request(gmem.data(), 4, i);  // a slice per pixel, not a float
    expect_model_count_exact(r, box_walk(r), {32 * 8 * 4}, "interleave " + std::to_string(options::unit_bytes(r)));
    TensorMapRequest planes = r;
    planes.box_dim[2] = 2;
    expect_model_count_exact(planes, box_walk(planes), {2 * box_tx_bytes(r)}, "boxDim 2 over the slices");
    TensorMapRequest strided = r;
    strided.element_strides[0] = 3;
    expect_model_count_exact(strided, box_walk(strided, {-2, -1, 0, 0, 0}), {box_tx_bytes(r)}, "every 3rd pixel, at the edges");
  }
}

// The probe can fail: 16 bytes more never complete the phase, 16 fewer leave bytes over.
TEST_F(Sm90_OptionsTxBytes, TheProbeNoticesAWrongCount) {
  course::DeviceBuffer<float> gmem(options::kSlabBytes / sizeof(float));
  const TensorMapRequest r = options::array_request(gmem.data(), options::slab_array(1), 5);
  const BoxWalk walk = box_walk(r);
  const TxVerdict more = probe(r, walk, 0, walk.tx_bytes + 16), fewer = probe(r, walk, 0, walk.tx_bytes - 16);
  EXPECT_FALSE(more.reached);
  EXPECT_FALSE(more.exact);
  EXPECT_FALSE(fewer.exact);
}

// ---- On the GPU: a wrong count is diagnosed, not hung -----------------------------------------

TEST_F(Sm90_Options, ExpectingSixteenBytesTooManyIsDiagnosed) {
  course::DeviceBuffer<float> gmem(options::kSlabBytes / sizeof(float));
  course::DeviceBuffer<float> out(options::kSlabBytes / sizeof(float));
  const TensorMapRequest r = options::complex_request(gmem.data(), 1, 8192);  // one row: 64 KiB
  BoxWalk walk = box_walk(r);
  walk.num_boxes = 1;
  walk.tx_bytes += 16;  // 16 bytes more than land: the phase never completes
  const CUtensorMap map = encode_tiled(r);
  auto launch = [&] { box_launch(2)(map, walk, out.data(), 1); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(), "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

// ---- On the GPU: the L2 rows, and the whole program -----------------------------------------------

TEST_F(Sm90_Options, EveryL2RowCopiesTheLessonsMatrix) {
  for (const auto& [rows, pitch, blocks] : {std::tuple{32, 256, 0u}, {1, 256, 0u}, {999, 1004, 0u}, {300, 2048, 3u}}) {
    ::Problem p(rows, pitch);
    const std::vector<float> expected = ::reference(p.host_in, p.view(false), false);
    for (const options::L2Row& row : options::kL2Rows) {
      EXPECT_MATCHES(options::verify_l2(row, p, expected, blocks), row.name << ", " << rows << " x " << pitch);
    }
  }
}

int run_program(std::vector<std::string> args, void (*run)(const course::Options&, course::Report&), std::string& out) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int code = course::chapter_main(static_cast<int>(argv.size()), argv.data(), options::chapter_info(),
                                        options::kVariants, run);
  out = ::testing::internal::GetCapturedStdout();
  return code;
}

TEST_F(Sm90_Options, TheProgramPassesEveryVariant) {
  std::string out;
  EXPECT_EQ(run_program({"tensor_map_options", "--size=1M"}, options::run, out), course::kExitPass) << out;
  for (const char* row : {"interleave_16B", "interleave_16B_as_plain", "l2_promotion_none",
                          "l2_promotion_256B"}) {
    EXPECT_TRUE(contains(out, row)) << row << '\n' << out;
  }
  EXPECT_TRUE(contains(out, "PASSED: tensor_map_options")) << out;
}

// A request the rules refuse ends the program with the rule's sentence and exit code 1, before
// the driver sees it: here a 32-byte interleave without the 32-byte swizzle.
void run_refused(const course::Options& opts, course::Report& report) {
  const options::Tensor t(options::patterned(options::kSlabBytes / sizeof(float)));
  TensorMapRequest r = options::interleaved_request(t.gmem.data(), 1, CU_TENSOR_MAP_INTERLEAVE_32B);
  r.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  options::check_boxes(opts, report, "interleave_32B_without_swizzle", t, r);
}

TEST_F(Sm90_Options, ARefusedRequestEndsTheProgramWithItsRule) {
  std::string out;
  EXPECT_EQ(run_program({"tensor_map_options"}, run_refused, out), course::kExitFail) << out;
  EXPECT_TRUE(contains(out, "FAILED: tensor_map_options: tensor map rejected on the host: a 32-byte interleave needs "
                            "the 32-byte swizzle"))
      << out;
}

}  // namespace
