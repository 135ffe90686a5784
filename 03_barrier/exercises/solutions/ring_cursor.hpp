// Exercise 03.1 (CPU): the cursor of a ring of buffers. Solution.
//
// Batch k goes to buffer k mod N. Every N batches the ring wraps and each barrier has completed
// one more phase, so the parity to wait on is (k / N) mod 2. The stage wraps with a comparison,
// not `stage ^ 1` (right only for N = 2) and not a mask (right only for powers of two).
#pragma once

#include <cstdint>

struct RingCursor {
  int num_stages = 1;
  int stage = 0;            // the buffer the next batch uses
  std::uint32_t phase = 0;  // the parity its barrier's phase has for that batch

  explicit RingCursor(int stages) : num_stages(stages) {}

  void advance() {
    if (++stage == num_stages) {
      stage = 0;
      phase ^= 1u;  // every barrier of the ring has completed one more phase
    }
  }
};

inline RingCursor cursor_at(int num_stages, long long k) {
  RingCursor cursor(num_stages);
  cursor.stage = static_cast<int>(k % num_stages);
  cursor.phase = static_cast<std::uint32_t>((k / num_stages) & 1);
  return cursor;
}
