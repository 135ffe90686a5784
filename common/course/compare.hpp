/// @file
/// @brief Bit-exact comparison of a result with its reference.
///
/// Reports how many elements differ, the first few mismatches with their
/// coordinates (row and column when a row width is given), and how many of the
/// mismatching elements still hold the poison pattern, i.e. were never written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "course/pattern.hpp"

namespace course {

/// Outcome of compare_exact().
struct Comparison {
  std::size_t count = 0;       ///< elements compared
  std::size_t mismatches = 0;  ///< elements whose bits differ from the reference
  std::size_t untouched = 0;   ///< mismatching elements that still hold the poison
  std::string first;           ///< the first mismatches, one per line

  bool ok() const { return mismatches == 0; }
  /// One line: "all N elements match" or "M of N elements differ (U untouched)".
  std::string summary() const {
    std::ostringstream out;
    if (ok()) {
      out << "all " << count << " elements match";
    } else {
      out << mismatches << " of " << count << " elements differ (" << untouched << " never written)";
    }
    return out.str();
  }
};

namespace detail {

template <class T>
std::string bits_hex(const T& value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  std::ostringstream out;
  out << "0x" << std::hex << std::setfill('0');
  for (std::size_t i = sizeof(T); i-- > 0;) out << std::setw(2) << static_cast<int>(bytes[i]);
  return out.str();
}

}  // namespace detail

/// Compares @p got with @p expected bit by bit.
/// @param row_elems  row width for coordinates in reports; 0 reports flat indices.
/// @param max_listed how many mismatches to describe in Comparison::first.
template <class T>
Comparison compare_exact(const T* got, const T* expected, std::size_t count, std::size_t row_elems = 0,
                         std::size_t max_listed = 5) {
  Comparison result;
  result.count = count;
  const T poison = poison_value<T>();
  std::ostringstream listed;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(T)) == 0) continue;
    const bool never_written = std::memcmp(&got[i], &poison, sizeof(T)) == 0;
    result.untouched += never_written ? 1 : 0;
    if (result.mismatches++ < max_listed) {
      listed << "  at ";
      if (row_elems > 0) {
        listed << "(row " << i / row_elems << ", col " << i % row_elems << ")";
      } else {
        listed << "[" << i << "]";
      }
      listed << ": got " << detail::bits_hex(got[i]) << (never_written ? " (poison)" : "") << ", expected "
             << detail::bits_hex(expected[i]) << '\n';
    }
  }
  result.first = listed.str();
  return result;
}

/// Convenience overload for vectors of equal length.
template <class T>
Comparison compare_exact(const std::vector<T>& got, const std::vector<T>& expected, std::size_t row_elems = 0) {
  const std::size_t count = got.size() < expected.size() ? got.size() : expected.size();
  Comparison result = compare_exact(got.data(), expected.data(), count, row_elems);
  if (got.size() != expected.size()) {
    result.mismatches += 1;
    result.first += "  sizes differ: got " + std::to_string(got.size()) + ", expected " +
                    std::to_string(expected.size()) + '\n';
  }
  return result;
}

/// Counts elements of a guard band that no longer hold the poison pattern.
template <class T>
std::size_t guard_band_damage(const T* data, std::size_t count) {
  const T poison = poison_value<T>();
  std::size_t damaged = 0;
  for (std::size_t i = 0; i < count; ++i) damaged += std::memcmp(&data[i], &poison, sizeof(T)) != 0 ? 1 : 0;
  return damaged;
}

}  // namespace course
