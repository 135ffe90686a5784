/// @file
/// @brief A host model of one mbarrier's phases, for CPU simulations of barrier protocols.
///
/// Chapters 10 and 12 run their cluster protocols on the host, step by step in random
/// orders, to show that no order deadlocks or overwrites a buffer too early. This is the
/// barrier those simulations use: a phase completes when its pending arrivals reach zero
/// and its transaction count is zero again, then the arrival count is re-armed.
#pragma once

namespace course {

struct MbarrierModel {
  int expected = 1, pending = 1, tx = 0;  // arrivals per phase, arrivals still missing, bytes outstanding
  unsigned completed = 0;                 // phases completed so far

  /// mbarrier.init with `count` expected arrivals per phase.
  void init(int count) { expected = pending = count; }
  /// mbarrier.arrive (one arrival).
  void arrive() {
    --pending;
    complete_if_done();
  }
  /// The expect-tx half of mbarrier.arrive.expect_tx: `bytes` more must land in this phase.
  void expect_tx(int bytes) { tx += bytes; }
  /// complete-tx from a copy that has landed. The count may go below zero until the phase's
  /// expect-tx arrives: the hardware allows the bytes to come first.
  void complete_tx(int bytes) {
    tx -= bytes;
    complete_if_done();
  }
  /// What mbarrier.try_wait.parity(parity) returns: has the phase with that parity completed?
  bool phase_done(unsigned parity) const { return (completed & 1u) != parity; }

 private:
  void complete_if_done() {
    if (pending == 0 && tx == 0) {
      ++completed;
      pending = expected;
    }
  }
};

}  // namespace course
