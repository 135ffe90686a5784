// Exercise 03.1 (CPU): the cursor of a ring of buffers.
//
// A block that keeps several batches in flight loads batch k into buffer k mod N and waits on
// that buffer's barrier. Each barrier completes one phase per use, so the wait must name the
// parity of the phase that *this* use completes: waiting on the parity of an older phase returns
// at once, before the data has landed (a silent wrong answer); waiting on a newer one never
// returns. The lesson's StageCursor (barrier.cu) does this for a ring size fixed at compile time.
//
// Your task: complete RingCursor for a ring of `num_stages` buffers known only at run time
// (1 to 4 and beyond), and cursor_at(), which finds the place of the k-th batch directly.
// Check: scripts/exercise.py ring_cursor
#pragma once

#include <cstdint>

struct RingCursor {
  int num_stages = 1;
  int stage = 0;            // the buffer the next batch uses
  std::uint32_t phase = 0;  // the parity its barrier's phase has for that batch

  explicit RingCursor(int stages) : num_stages(stages) {}

  // Move on to the next batch's buffer.
  void advance() {
    // TODO: step to the next buffer; think about what happens to every barrier when the ring
    //       wraps around to buffer 0, and make it right for a ring of one buffer too.
  }
};

// The place of batch number k (0, 1, 2, ...) of a block, without walking there one step at a time:
// it must agree with k calls of advance() on a fresh cursor.
inline RingCursor cursor_at(int num_stages, long long k) {
  RingCursor cursor(num_stages);
  (void)k;  // TODO: set cursor.stage and cursor.phase from k
  return cursor;
}
