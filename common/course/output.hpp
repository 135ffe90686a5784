/// @file
/// @brief A device output buffer with poisoned guard bands on both sides.
///
/// poison() fills the output and its guards with the poison byte; check()
/// downloads the output, compares it bit-exactly with the reference and counts
/// guard elements that a kernel wrote although they lie outside the output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/compare.hpp"
#include "course/pattern.hpp"

namespace course {

/// Device output of `count` elements between two guard bands of `guard` elements.
template <class T>
class GuardedOutput {
 public:
  static constexpr std::size_t kDefaultGuard = 256;  // 1 KiB of uint32: more than any tile overrun

  explicit GuardedOutput(std::size_t count, std::size_t guard = kDefaultGuard)
      : count_(count), guard_(guard), storage_(count + 2 * guard) {}

  T* data() const { return storage_.data() + guard_; }
  std::size_t size() const { return count_; }

  /// Writes the poison over the output and both guard bands.
  void poison() { storage_.fill_bytes(kPoisonByte); }

  /// Compares the output with @p expected; guard damage counts as mismatches.
  Comparison check(const std::vector<T>& expected, std::size_t row_elems = 0) const {
    std::vector<T> all(storage_.size());
    storage_.download(all.data());
    Comparison result = compare_exact(all.data() + guard_, expected.data(), count_, row_elems);
    const std::size_t before = guard_band_damage(all.data(), guard_);
    const std::size_t after = guard_band_damage(all.data() + guard_ + count_, guard_);
    if (before + after > 0) {
      result.mismatches += before + after;
      result.first += "  guard bands overwritten: " + std::to_string(before) + " elements before the output, " +
                      std::to_string(after) + " after\n";
    }
    return result;
  }

 private:
  std::size_t count_;
  std::size_t guard_;
  DeviceBuffer<T> storage_;
};

}  // namespace course
