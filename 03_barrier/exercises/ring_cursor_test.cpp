// Grades exercise 03.1: RingCursor is replayed against model barriers (barrier_model.hpp), one per
// buffer. For every batch the wait must return only once that batch's phase has completed.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <vector>

#include "barrier_model.hpp"

namespace {

// Batch k of a block is loaded into buffer k mod N; that buffer's barrier completes its phase
// when the batch lands. Checks each wait the cursor names against the model's barriers.
void replay(int num_stages, int num_batches) {
  std::vector<BarrierModel> full_bar(num_stages);
  for (BarrierModel& bar : full_bar) bar.init(1);
  RingCursor cursor(num_stages);
  for (int k = 0; k < num_batches; ++k) {
    if (!(cursor.stage >= 0 && cursor.stage < num_stages)) FAIL()
        << "ring of " << num_stages << " buffers: after " << k << " calls of advance() the stage is " << cursor.stage
        << ", which is not a buffer of the ring";
    if (cursor.stage != k % num_stages) FAIL()
        << "ring of " << num_stages << " buffers: batch " << k
        << " would be waited for in a buffer other than the one it was loaded into (buffers are used in turn)";
    BarrierModel& bar = full_bar[cursor.stage];
    if (bar.parity_done(cursor.phase)) FAIL()
        << "ring of " << num_stages << " buffers, batch " << k << ": the wait on parity " << cursor.phase
        << " would return before the batch has landed (it names a phase that completed earlier)";
    bar.arrive(1);  // the batch lands: this use's phase completes
    if (!bar.parity_done(cursor.phase)) FAIL()
        << "ring of " << num_stages << " buffers, batch " << k << ": the wait on parity " << cursor.phase
        << " would never return (it names a phase that has not begun)";
    cursor.advance();
  }
}

TEST(HostExerciseRingCursor, WaitsForTheRightPhaseInRingsOfOneToFiveBuffers) {
  for (int stages = 1; stages <= 5; ++stages) {
    SCOPED_TRACE(testing::Message() << stages << " buffers");
    replay(stages, 6 * stages + 1);
  }
}

TEST(HostExerciseRingCursor, CursorAtAgreesWithWalking) {
  for (int stages = 1; stages <= 5; ++stages) {
    RingCursor walked(stages);
    for (long long k = 0; k < 40; ++k, walked.advance()) {
      const RingCursor direct = cursor_at(stages, k);
      if (!(direct.stage == walked.stage && direct.phase == walked.phase)) FAIL()
          << "ring of " << stages << " buffers: cursor_at(" << stages << ", " << k
          << ") is not where " << k << " calls of advance() lead";
    }
  }
}

TEST(HostExerciseRingCursor, CursorAtReachesFarBatches) {
  // A block of a grid of 132 x 8 blocks over 64 GiB of 4 KiB batches takes about 16,000 of them.
  for (int stages = 1; stages <= 5; ++stages) {
    const long long k = 1'000'003;
    const RingCursor direct = cursor_at(stages, k);
    if (direct.stage != static_cast<int>(k % stages)) {
      FAIL() << "ring of " << stages << " buffers: cursor_at() puts batch " << k << " in buffer " << direct.stage
             << ", not the one it was loaded into (buffers are used in turn)";
    }
    std::vector<BarrierModel> model(1);
    model[0].init(1);
    model[0].arrive(static_cast<int>(k / stages));  // the phases this buffer completed before batch k
    if (model[0].parity_done(direct.phase)) ADD_FAILURE() << "ring of " << stages << " buffers, batch " << k
                                                     << ": the parity names a phase that completed earlier";
  }
}

}  // namespace
