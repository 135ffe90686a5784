// tensor_map_rules: asks the course's tensor-map rule check (course/tensor_map.hpp) whether a
// tensor map would be legal, without a GPU: the check chapter 07 teaches and a sweep against the
// driver keeps honest (common/tests/tensor_map_test.cu).
//
//   build/common/tensor_map_rules --dims=1024,512 --box=64,32 [--type=f32] [--strides=BYTES,..]
//       [--element-strides=1,..] [--swizzle=none|32|64|128] [--interleave=none|16|32]
//       [--l2=none|64|128|256] [--oob=none|nan] [--address-offset=BYTES] [--cc=90]
//
// Prints "legal" with what a copy of the box moves (the bytes its barrier must expect), exit 0;
// or the broken rule in one line, exit 2. A malformed option is also exit 2, naming the option.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "course/tensor_map.hpp"

namespace {

constexpr int kUsage = 2;

[[noreturn]] void refuse(const std::string& line) {
  std::fprintf(stderr, "tensor_map_rules: %s\n", line.c_str());
  std::exit(kUsage);
}

std::string shown(const std::string& value) {
  return value.size() <= 40 ? value : value.substr(0, 40) + "... (" + std::to_string(value.size()) + " characters)";
}

std::uint64_t number(const std::string& option, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    refuse(option + ": '" + shown(text) + "' is not a whole number");
  }
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) refuse(option + ": '" + shown(text) + "' is too large");
  return value;
}

std::vector<std::uint64_t> numbers(const std::string& option, const std::string& text, std::size_t most) {
  std::vector<std::uint64_t> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(number(option, text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > most) refuse(option + ": at most " + std::to_string(most) + " values, got " + std::to_string(out.size()));
  return out;
}

template <class Enum>
Enum choice(const std::string& option, const std::string& text, const std::map<std::string, Enum>& values) {
  const auto found = values.find(text);
  if (found != values.end()) return found->second;
  std::string names;
  for (const auto& [name, value] : values) names += (names.empty() ? "" : ", ") + name;
  refuse(option + ": '" + shown(text) + "' is not one of " + names);
}

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: tensor_map_rules --dims=D0,D1,.. --box=B0,B1,.. [options]\n"
               "Checks a cuTensorMapEncodeTiled request against the course's rules (course/tensor_map.hpp);\n"
               "no GPU needed. Dimension 0 is the innermost. Exit 0: legal; 2: a rule is broken.\n"
               "  --type=f32|tf32|f16|bf16|f64|u8|u16|u32|i32|u64|i64   element type (default f32)\n"
               "  --dims=..             elements per dimension, 1 to 5 values (the rank)\n"
               "  --box=..              the box one copy moves, elements per dimension\n"
               "  --strides=..          bytes between indices of dimensions 1..rank-1 (default: packed rows;\n"
               "                        with interleave an index of dimension 0 is a 16- or 32-byte slice)\n"
               "  --element-strides=..  every k-th element per dimension (default 1)\n"
               "  --swizzle=none|32|64|128  --interleave=none|16|32  --l2=none|64|128|256  --oob=none|nan\n"
               "  --address-offset=N    bytes past a 256-byte aligned global address (default 0)\n"
               "  --cc=N                compute capability the map is for, major x 10 + minor (default 90)\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) refuse("'" + shown(arg) + "' is not an option of the form --name=value");
    const std::string name = arg.substr(0, eq);
    static const char* const kKnown[] = {"--type", "--dims", "--box", "--strides", "--element-strides", "--swizzle",
                                         "--interleave", "--l2", "--oob", "--address-offset", "--cc"};
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    if (!known) refuse("unknown option '" + shown(name) + "' (--help lists them)");
    if (given.count(name)) refuse(name + " is given twice");
    given[name] = arg.substr(eq + 1);
  }
  if (!given.count("--dims") || !given.count("--box")) refuse("--dims and --box are needed (--help)");

  course::TensorMapRequest r;
  r.data_type = choice<CUtensorMapDataType>(
      "--type", given.count("--type") ? given["--type"] : "f32",
      {{"u8", CU_TENSOR_MAP_DATA_TYPE_UINT8},       {"u16", CU_TENSOR_MAP_DATA_TYPE_UINT16},
       {"u32", CU_TENSOR_MAP_DATA_TYPE_UINT32},     {"i32", CU_TENSOR_MAP_DATA_TYPE_INT32},
       {"u64", CU_TENSOR_MAP_DATA_TYPE_UINT64},     {"i64", CU_TENSOR_MAP_DATA_TYPE_INT64},
       {"f16", CU_TENSOR_MAP_DATA_TYPE_FLOAT16},    {"f32", CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
       {"f64", CU_TENSOR_MAP_DATA_TYPE_FLOAT64},    {"bf16", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
       {"tf32", CU_TENSOR_MAP_DATA_TYPE_TFLOAT32}});
  const std::vector<std::uint64_t> dims = numbers("--dims", given["--dims"], 5);
  const std::vector<std::uint64_t> box = numbers("--box", given["--box"], 5);
  if (box.size() != dims.size()) refuse("--box has " + std::to_string(box.size()) + " values and --dims " + std::to_string(dims.size()) + ": one per dimension");
  r.rank = static_cast<std::uint32_t>(dims.size());
  const std::uint32_t elem = course::element_bytes(r.data_type);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    r.global_dim[i] = dims[i];
    if (box[i] > 0xFFFFFFFFu) refuse("--box: " + std::to_string(box[i]) + " does not fit the 32-bit boxDim");
    r.box_dim[i] = static_cast<std::uint32_t>(box[i]);
  }
  if (given.count("--strides")) {
    const std::vector<std::uint64_t> strides = numbers("--strides", given["--strides"], 4);
    if (strides.size() + 1 != dims.size()) refuse("--strides needs rank - 1 = " + std::to_string(dims.size() - 1) + " values");
    for (std::size_t i = 0; i < strides.size(); ++i) r.global_strides[i] = strides[i];
  }
  if (given.count("--element-strides")) {
    const std::vector<std::uint64_t> es = numbers("--element-strides", given["--element-strides"], 5);
    if (es.size() != dims.size()) refuse("--element-strides needs one value per dimension");
    for (std::size_t i = 0; i < es.size(); ++i) r.element_strides[i] = static_cast<std::uint32_t>(es[i] > 0xFFFFFFFFu ? 0 : es[i]);
  }
  r.swizzle = choice<CUtensorMapSwizzle>("--swizzle", given.count("--swizzle") ? given["--swizzle"] : "none",
                                         {{"none", CU_TENSOR_MAP_SWIZZLE_NONE}, {"32", CU_TENSOR_MAP_SWIZZLE_32B},
                                          {"64", CU_TENSOR_MAP_SWIZZLE_64B}, {"128", CU_TENSOR_MAP_SWIZZLE_128B}});
  r.interleave = choice<CUtensorMapInterleave>("--interleave", given.count("--interleave") ? given["--interleave"] : "none",
                                               {{"none", CU_TENSOR_MAP_INTERLEAVE_NONE}, {"16", CU_TENSOR_MAP_INTERLEAVE_16B},
                                                {"32", CU_TENSOR_MAP_INTERLEAVE_32B}});
  if (!given.count("--strides")) {  // packed rows; with interleave an index of dimension 0 is a 16- or 32-byte slice
    std::uint64_t stride = r.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? elem : course::interleave_slice_bytes(r.interleave);
    for (std::size_t i = 0; i + 1 < dims.size(); ++i) r.global_strides[i] = stride *= dims[i];
  }
  r.l2_promotion = choice<CUtensorMapL2promotion>(
      "--l2", given.count("--l2") ? given["--l2"] : "none",
      {{"none", CU_TENSOR_MAP_L2_PROMOTION_NONE}, {"64", CU_TENSOR_MAP_L2_PROMOTION_L2_64B},
       {"128", CU_TENSOR_MAP_L2_PROMOTION_L2_128B}, {"256", CU_TENSOR_MAP_L2_PROMOTION_L2_256B}});
  r.oob_fill = choice<CUtensorMapFloatOOBfill>("--oob", given.count("--oob") ? given["--oob"] : "none",
                                               {{"none", CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE},
                                                {"nan", CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA}});
  const std::uint64_t offset = given.count("--address-offset") ? number("--address-offset", given["--address-offset"]) : 0;
  if (offset >= 256) refuse("--address-offset: " + std::to_string(offset) + " is not below 256");
  r.global_address = reinterpret_cast<const void*>(std::uintptr_t{1} << 20 | offset);  // never dereferenced
  const int cc = given.count("--cc") ? static_cast<int>(number("--cc", given["--cc"])) : 90;
  if (cc < 90) refuse("--cc: " + std::to_string(cc) + ": tensor maps need compute capability 9.0 (90) or newer");

  if (const std::optional<std::string> broken = course::broken_tensor_map_rule(r, cc)) {
    std::fprintf(stderr, "tensor_map_rules: illegal: %s\n", broken->c_str());
    return kUsage;
  }
  bool strided = false;
  std::uint64_t box_bytes = elem;
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    box_bytes *= r.box_dim[i];
    strided = strided || (i > 0 && r.element_strides[i] != 1);
  }
  if (strided) {
    std::printf("legal (element strides above 1: the box's elements are taken every k-th, see chapter 07)\n");
  } else {
    std::printf("legal: one copy of the box writes %llu bytes of shared memory, the bytes its barrier must expect "
                "(also when the box lies partly out of bounds)\n",
                static_cast<unsigned long long>(box_bytes));
  }
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
}
