/// @file
/// @brief A host model of one mbarrier's phases, for CPU simulations of barrier protocols.
///
/// Chapters 05, 10 and 12 run their protocols on the host, step by step in random orders, to
/// show that no order deadlocks or overwrites a buffer too early. This is the barrier those
/// simulations use; play_load() grades a load's expect-tx on it (the exercises of 07 and 08).
///
/// The rule: a phase completes as soon as an operation leaves no arrival pending and a
/// transaction count of exactly zero; the arrival count is then re-armed for the next phase.
/// Every operation that changes a count can complete a phase: an arrive (the last arrival, the
/// bytes already in), a complete-tx (the last bytes, the arrivals already in) and also a
/// standalone expect-tx (the arrivals in and the bytes landed first, so that the expect brings a
/// negative count back to zero). The PTX ISA names the phase-completion rule and says complete-tx
/// and arrive-on may complete a phase; its expect-tx section is silent, and the hardware applies
/// the rule after expect-tx too (9.0, Sm90_MbarrierOracle in common/tests/mbarrier_oracle_test.cu
/// replays random sequences on a real mbarrier against this model).
/// PTX ISA, mbarrier phase completion:
/// https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier-phase-completion
/// expect-tx and complete-tx:
/// https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier-expect-tx-operation
#pragma once

#include <cstdint>

namespace course {

struct MbarrierModel {
  int expected = 1, pending = 1, tx = 0;  // arrivals per phase, arrivals still missing, bytes outstanding
  unsigned completed = 0;                 // phases completed so far

  /// mbarrier.init with `count` expected arrivals per phase.
  void init(int count) { expected = pending = count; }
  /// mbarrier.arrive (`count` arrivals in one operation, 1 by default). Can complete the phase.
  /// `count` must not exceed the arrivals still pending: the PTX ISA's pending count never goes
  /// below zero, and a protocol that arrives beyond it (possible only while bytes are outstanding,
  /// else the phase would have completed) has no defined result on the hardware.
  void arrive(int count = 1) {
    pending -= count;
    complete_if_done();
  }
  /// mbarrier.expect_tx: `bytes` more must land in this phase. Can complete the phase when every
  /// arrival is in and the bytes landed first (the count was -bytes).
  void expect_tx(int bytes) {
    tx += bytes;
    complete_if_done();
  }
  /// mbarrier.arrive.expect_tx: the expect-tx, then one arrival, as one instruction.
  void arrive_expect_tx(int bytes) {
    expect_tx(bytes);
    arrive();
  }
  /// complete-tx from a copy that has landed. The count may go below zero until the phase's
  /// expect-tx arrives: the hardware allows the bytes to come first. Can complete the phase.
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

/// What becomes of a tensor load announced with `announced` bytes (the leader's
/// arrive.expect_tx on a fresh barrier of count 1) when `rows` rows of `row_bytes` land one
/// after another: the phase completes with the last row, before it, or never.
enum class LoadVerdict { exact, completes_early, never_completes };
inline LoadVerdict play_load(std::uint64_t announced, std::uint64_t rows, std::uint64_t row_bytes) {
  MbarrierModel full_bar;
  full_bar.init(1);                                 // the leader's arrival only
  full_bar.arrive_expect_tx(static_cast<int>(announced));  // the leader's arrive.expect_tx
  for (std::uint64_t row = 0; row < rows; ++row) {
    if (full_bar.phase_done(0)) return LoadVerdict::completes_early;
    full_bar.complete_tx(static_cast<int>(row_bytes));
  }
  return full_bar.phase_done(0) ? LoadVerdict::exact : LoadVerdict::never_completes;
}
/// The consequence of a wrong count, in a sentence that follows "announcing N bytes".
inline const char* load_verdict_text(LoadVerdict verdict) {
  switch (verdict) {
    case LoadVerdict::completes_early:
      return "completes the phase while rows of the box are still landing. The block would read shared memory that "
             "TMA has not written yet, and no error would say so";
    case LoadVerdict::never_completes:
      return "leaves the phase open although every row of the box has landed. On the GPU the bounded wait gives up on "
             "barrier 'full'";
    default:
      return "completes the phase with the last row";
  }
}

}  // namespace course
