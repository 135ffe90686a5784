// The tensor-map rule check (course/tensor_map.hpp) against the driver: random requests across the
// whole parameter space, each put to course::broken_tensor_map_rule and to cuTensorMapEncodeTiled.
// The check must refuse every request the driver refuses, and may refuse more only by the rules
// it names as its own (kStricterRules).
#include "course/tensor_map.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "course/check.hpp"
#include "course/testing.hpp"

namespace {

// The check's own rules, stricter than the driver on purpose: a null address (the driver takes
// it; no copy could use the map), rows that overlap (a store would race with itself), and the
// 32-byte interleave's swizzle, which the driver's documentation requires and the driver lets by.
bool is_stricter_rule(const std::string& sentence) {
  if (sentence.rfind("global address is null", 0) == 0) return true;
  if (sentence.rfind("a 32-byte interleave needs the 32-byte swizzle", 0) == 0) return true;
  return sentence.rfind("globalStrides[", 0) == 0 && sentence.find("is less than the") != std::string::npos;
}

std::string describe_request(const course::TensorMapRequest& r) {
  std::ostringstream out;
  out << "type " << r.data_type << " rank " << r.rank << " addr%64 " << (reinterpret_cast<std::uintptr_t>(r.global_address) % 64)
      << (r.global_address == nullptr ? " (null)" : "") << " dim {";
  for (std::uint32_t i = 0; i < 5; ++i) out << (i ? "," : "") << r.global_dim[i];
  out << "} strides {";
  for (std::uint32_t i = 0; i < 4; ++i) out << (i ? "," : "") << r.global_strides[i];
  out << "} box {";
  for (std::uint32_t i = 0; i < 5; ++i) out << (i ? "," : "") << r.box_dim[i];
  out << "} estride {";
  for (std::uint32_t i = 0; i < 5; ++i) out << (i ? "," : "") << r.element_strides[i];
  out << "} interleave " << r.interleave << " swizzle " << r.swizzle << " l2 " << r.l2_promotion << " oob " << r.oob_fill;
  return out.str();
}

// Requests near every boundary of every parameter: enum values of the header and one past them,
// ranks 0..6, aligned and misaligned addresses, dimensions, strides and boxes at their limits.
class RequestMaker {
 public:
  explicit RequestMaker(std::uint32_t seed) : rng_(seed) {}

  // A request that is valid by the documented rules, then 0, 1 or 2 parameters moved to one of
  // their boundary values (many valid requests and many just past a rule).
  course::TensorMapRequest make() {
    course::TensorMapRequest r = valid();
    const int mutations = static_cast<int>(uniform(3));
    for (int m = 0; m < mutations; ++m) mutate(r);
    return r;
  }

 private:
  course::TensorMapRequest valid() {
    course::TensorMapRequest r;
    r.data_type = static_cast<CUtensorMapDataType>(uniform(13));  // the 1- to 8-byte types
    r.rank = static_cast<std::uint32_t>(1 + uniform(5));
    r.swizzle = static_cast<CUtensorMapSwizzle>(uniform(4));
    r.l2_promotion = static_cast<CUtensorMapL2promotion>(uniform(4));
    r.oob_fill = course::is_floating(r.data_type) && chance(0.3) ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                                                  : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    r.global_address = reinterpret_cast<const void*>(0x7f0000000000ull + 16 * uniform(64));
    const std::uint32_t elem = course::element_bytes(r.data_type);
    const std::uint32_t span = course::swizzle_span_bytes(r.swizzle);
    const std::uint32_t max_inner = std::min<std::uint32_t>(256, (span ? span : 256 * 8) / elem);
    for (int i = 0; i < 5; ++i) {
      r.global_dim[i] = i < static_cast<int>(r.rank) ? 1 + uniform(chance(0.2) ? (1u << 20) : 300) : 1;
      r.box_dim[i] = static_cast<std::uint32_t>(1 + uniform(256));
      r.element_strides[i] = static_cast<std::uint32_t>(chance(0.8) ? 1 : 1 + uniform(8));
    }
    const std::uint32_t unit = 16 / elem;  // inner box: a multiple of 16 bytes, within the span
    r.box_dim[0] = unit * static_cast<std::uint32_t>(1 + uniform(std::max<std::uint32_t>(max_inner / unit, 1)));
    std::uint64_t pitch = r.global_dim[0] * elem;
    for (int i = 0; i + 1 < static_cast<int>(r.rank); ++i) {
      pitch = (pitch + 15) / 16 * 16 + 16 * (chance(0.3) ? uniform(4) : 0);
      r.global_strides[i] = pitch;
      pitch *= r.global_dim[i + 1];
    }
    return r;
  }

  void mutate(course::TensorMapRequest& r) {
    const int i = static_cast<int>(uniform(5));
    const std::uint32_t elem = std::max<std::uint32_t>(course::element_bytes(r.data_type), 1);
    switch (uniform(13)) {
      case 0: r.data_type = static_cast<CUtensorMapDataType>(uniform(17)); break;  // packed types and one past
      case 1: r.rank = static_cast<std::uint32_t>(pick({0, 1, 2, 3, 4, 5, 6})); break;
      case 2: r.interleave = static_cast<CUtensorMapInterleave>(uniform(4)); break;
      case 3: r.swizzle = static_cast<CUtensorMapSwizzle>(uniform(8)); break;
      case 4: r.l2_promotion = static_cast<CUtensorMapL2promotion>(uniform(5)); break;
      case 5: r.oob_fill = static_cast<CUtensorMapFloatOOBfill>(uniform(3)); break;
      case 6:
        r.global_address = chance(0.1) ? nullptr
                                       : reinterpret_cast<const void*>(0x7f0000000000ull + pick({1, 4, 8, 24, 32, 48, 64, 96}));
        break;
      case 7: r.global_dim[i] = pick({0, 1, 2, 255, 256, 257, 1ull << 31, 1ull << 32, (1ull << 32) + 1}); break;
      case 8: {
        const std::uint64_t s = r.global_strides[i % 4];
        r.global_strides[i % 4] = pick({0, s - 16, s - 1, s + 1, s + 8, s + 16, s + 32, (s + 31) / 32 * 32,
                                        (1ull << 40) - 16, 1ull << 40, (1ull << 40) + 16});
        break;
      }
      case 9: r.box_dim[i] = static_cast<std::uint32_t>(pick({0, 1, 2, 255, 256, 257, 512})); break;
      case 10:
        r.box_dim[0] = static_cast<std::uint32_t>(pick({1, 2, 3, 8 / elem + 1, 16 / elem, 32 / elem, 64 / elem,
                                                        128 / elem, 256 / elem, 128 / elem + 16 / elem}));
        break;
      case 11: r.element_strides[i] = static_cast<std::uint32_t>(pick({0, 1, 2, 7, 8, 9, 16})); break;
      default: r.global_dim[i] = r.global_dim[i] * 2 + 1; break;  // rows that no longer fit their stride
    }
  }

  std::uint64_t uniform(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // One of @p values; with @p common_index >= 0, that value half of the time (a valid default).
  std::uint64_t pick(std::initializer_list<std::uint64_t> values, int common_index = -1) {
    if (common_index >= 0 && chance(0.5)) return *(values.begin() + common_index);
    return *(values.begin() + uniform(values.size()));
  }
  std::mt19937_64 rng_;
};

class Sm90_TensorMapRules : public course::GpuTest {
 protected:
  Sm90_TensorMapRules() : GpuTest({9, 0, false, "tensor maps (cuTensorMapEncodeTiled)"}) {}
};

TEST_F(Sm90_TensorMapRules, TheCheckRefusesEveryRequestTheDriverRefuses) {
  constexpr int kRequests = 20000;
  RequestMaker maker(20261123);
  COURSE_CHECK(cudaFree(nullptr));  // a current context: the driver call needs one
  const PFN_cuTensorMapEncodeTiled_v12000 encode = course::tensor_map_encoder();
  int both_accept = 0, both_refuse = 0, stricter_named = 0;
  std::vector<std::string> check_accepts_driver_refuses, check_refuses_driver_accepts;
  std::map<std::string, int> refusals_by_rule;
  // With COURSE_TENSOR_MAP_SWEEP_CSV=<file>, every request and both verdicts are written there.
  std::FILE* table = std::getenv("COURSE_TENSOR_MAP_SWEEP_CSV") ? std::fopen(std::getenv("COURSE_TENSOR_MAP_SWEEP_CSV"), "w")
                                                                : nullptr;
  for (int n = 0; n < kRequests; ++n) {
    const course::TensorMapRequest r = maker.make();
    const std::optional<std::string> broken = course::broken_tensor_map_rule(r, 90);
    alignas(64) CUtensorMap map{};
    const CUresult result = encode(&map, r.data_type, r.rank, const_cast<void*>(r.global_address), r.global_dim,
                                   r.global_strides, r.box_dim, r.element_strides, r.interleave, r.swizzle,
                                   r.l2_promotion, r.oob_fill);
    const bool driver_accepts = result == CUDA_SUCCESS;
    if (table != nullptr) {
      std::fprintf(table, "%d|%d|%s|%s\n", driver_accepts ? 1 : 0, broken ? 0 : 1, describe_request(r).c_str(),
                   broken ? broken->c_str() : "");
    }
    if (broken) refusals_by_rule[broken->substr(0, broken->find_first_of("=0123456789"))]++;
    if (!broken && driver_accepts) {
      ++both_accept;
    } else if (broken && !driver_accepts) {
      ++both_refuse;
    } else if (!broken) {
      check_accepts_driver_refuses.push_back(describe_request(r) + " -> driver " + std::to_string(result));
    } else if (is_stricter_rule(*broken)) {
      ++stricter_named;
    } else {
      check_refuses_driver_accepts.push_back(describe_request(r) + " -> check: " + *broken);
    }
  }
  if (table != nullptr) std::fclose(table);
  std::printf("%d requests: both accept %d, both refuse %d, the check's own stricter rules %d, "
              "check accepts / driver refuses %zu, check refuses / driver accepts %zu\n",
              kRequests, both_accept, both_refuse, stricter_named, check_accepts_driver_refuses.size(),
              check_refuses_driver_accepts.size());
  for (const auto& [rule, count] : refusals_by_rule) std::printf("  refused %6d x: %s\n", count, rule.c_str());
  for (std::size_t i = 0; i < check_accepts_driver_refuses.size() && i < 40; ++i) {
    std::printf("ACCEPTED BUT REFUSED BY THE DRIVER: %s\n", check_accepts_driver_refuses[i].c_str());
  }
  for (std::size_t i = 0; i < check_refuses_driver_accepts.size() && i < 40; ++i) {
    std::printf("REFUSED BUT ACCEPTED BY THE DRIVER: %s\n", check_refuses_driver_accepts[i].c_str());
  }
  EXPECT_TRUE(check_accepts_driver_refuses.empty()) << "requests the check lets through and the driver refuses";
  EXPECT_TRUE(check_refuses_driver_accepts.empty()) << "requests the check refuses by a rule it does not name as its own";
  EXPECT_GT(both_accept, kRequests / 20) << "too few valid requests to say anything";
  EXPECT_GT(both_refuse, kRequests / 5);
}

}  // namespace
