/// @file
/// @brief Position-dependent input patterns and output poisoning.
///
/// Every element of an input gets a value that depends on its position, so a
/// kernel that reads or writes the wrong address produces a wrong value instead
/// of an accidentally right one (a constant fill hides such bugs). Outputs are
/// poisoned with a byte pattern first, so an element the kernel never wrote is
/// recognised as "untouched".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace course {

/// Byte written over every output before a kernel runs.
inline constexpr unsigned char kPoisonByte = 0xA5;

/// The poison value of an element type: every byte is kPoisonByte.
template <class T>
T poison_value() {
  static_assert(std::is_trivially_copyable_v<T>, "poison is a byte pattern");
  T value;
  std::memset(&value, kPoisonByte, sizeof(T));
  return value;
}

/// A 32-bit value that depends on @p index and @p seed (a SplitMix-style mix),
/// never equal to the poison pattern.
constexpr std::uint32_t pattern_u32(std::uint64_t index, std::uint32_t seed = 1) {
  std::uint64_t z = index + 0x9E3779B97F4A7C15ull * (seed + 1ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  auto value = static_cast<std::uint32_t>(z);
  return value == 0xA5A5A5A5u ? value ^ 1u : value;
}

/// A float built from pattern_u32 with a small, exactly representable magnitude
/// (a multiple of 1/256 in [-64, 64)), so sums of a few of them stay exact.
constexpr float pattern_f32(std::uint64_t index, std::uint32_t seed = 1) {
  return static_cast<float>(static_cast<std::int32_t>(pattern_u32(index, seed) % 32768u) - 16384) / 256.0f;
}

/// Fills @p out with the pattern for positions `first, first + 1, ...`.
template <class T>
void fill_pattern(std::vector<T>& out, std::uint32_t seed = 1, std::uint64_t first = 0) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = static_cast<T>(pattern_f32(first + i, seed));
    } else {
      out[i] = static_cast<T>(pattern_u32(first + i, seed));
    }
  }
}

}  // namespace course
