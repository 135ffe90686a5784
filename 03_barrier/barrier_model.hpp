// 03_barrier, the model: what an mbarrier counts, phase by phase, on the host.
//
// One barrier as the hardware sees it (pending arrivals, the phase, on 9.0 the transaction
// bytes), step-by-step traces of one phase with and without the .noinc arrive-on, the table of
// arrivals that complete one phase of each lesson kernel's full barrier, a replay of a block's
// ring of buffers on model barriers (which finds a wait that returns on a stale phase), and the
// guide's prefetch schedule (4.11.2.1.1), which reads past the end with few batches; and the
// launch rule, chapter 01's batch grid.
// Host code only: barrier.cu includes it (the program prints the traces and the table),
// barrier_test.cu checks it on the CPU.
// PTX mbarrier: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier
#pragma once

#include <cstddef>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/batch_grid.hpp"

// The launch rule of chapters 01-05 (chapter 01 introduces it): course/batch_grid.hpp.
using course::batch_grid;

/// [model]
// One mbarrier as the hardware sees it: the arrivals still missing in the current phase, the
// bytes still to land in it (9.0's transaction count), and how many phases have completed (the
// current phase's parity is `phase & 1`). A phase completes when both counts reach zero.
struct BarrierModel {
  int expected = 0;
  int pending = 0;
  int tx_bytes = 0;
  unsigned phase = 0;

  void init(int count) {
    expected = pending = count;
    tx_bytes = 0;
    phase = 0;
  }
  // mbarrier.arrive by `n` threads (or `n` asynchronous arrivals).
  void arrive(int n) {
    for (int i = 0; i < n; ++i) {
      --pending;
      complete_if_done();
    }
  }
  // cp.async.mbarrier.arrive by `n` threads (no .noinc): +1 now, the arrival comes later.
  void bind_copies(int n) { pending += n; }
  // `n` copies land: their asynchronous arrivals (with or without .noinc).
  void copies_land(int n) { arrive(n); }
  // 9.0: mbarrier.expect_tx before a bulk copy, and the bytes the copy writes (complete_tx).
  // An expect-tx can complete the phase too: when every arrival is in and the bytes landed first,
  // it brings the count back to zero (Sm90_MbarrierOracle checks this on the hardware).
  void expect_tx(int bytes) {
    tx_bytes += bytes;
    complete_if_done();
  }
  void bytes_land(int bytes) {
    tx_bytes -= bytes;
    complete_if_done();
  }
  // mbarrier.test_wait.parity: has the phase with this parity completed?
  bool parity_done(unsigned parity) const { return (phase & 1u) != parity; }

 private:
  void complete_if_done() {
    if (pending > 0 || tx_bytes != 0) return;
    ++phase;  // phase complete: the next one expects the same count
    pending = expected;
  }
};
/// [model]

// The model's state, one line per step, for N threads that each bind one copy.
inline std::string model_trace(const char* title, int num_threads, bool noinc, int init_count) {
  BarrierModel bar;
  std::string text = std::string("  ") + title + "\n";
  auto step = [&](const std::string& what) {
    char line[160];
    std::snprintf(line, sizeof line, "    %-34s pending %2d  phase %u  wait_parity(0) %s\n", what.c_str(), bar.pending,
                  bar.phase, bar.parity_done(0) ? "returns" : "waits");
    text += line;
  };
  const std::string n = std::to_string(num_threads);
  bar.init(init_count);
  step("init(" + std::to_string(init_count) + ")");
  if (!noinc) {
    bar.bind_copies(num_threads);
    step(n + " threads bind a copy (+1 each)");
  }
  bar.arrive(num_threads);
  step(n + " threads arrive");
  bar.copies_land(num_threads - 1);
  step(std::to_string(num_threads - 1) + " copies land");
  bar.copies_land(1);
  step("the last copy lands");
  return text;
}

// ---- The arrivals that complete one phase of a full barrier -----------------------------------

/// [phase_counts]
// One phase of a kernel's full barrier = one batch, on one path: what init() was given, and
// what arrives. Every thread arrives once itself; LDGSTS copies arrive through the arrive-on
// (counting: +1 when bound, the arrival when they land; .noinc: one of the expected arrivals);
// on 9.0 a 16-byte aligned cuda::memcpy_async is one bulk copy counted in bytes instead.
struct PhaseCount {
  const char* variant;
  const char* path;
  int init_count;        // init(&bar, count) / mbarrier.init
  int thread_arrivals;   // arrive() per phase
  int counting_copies;   // cp.async.mbarrier.arrive (no .noinc)
  int noinc_copies;      // cp.async.mbarrier.arrive.noinc
  int tx_bytes;          // mbarrier.expect_tx, then the bulk copy's complete_tx
};

inline std::vector<PhaseCount> phase_counts(int threads, int batch_bytes) {
  std::vector<PhaseCount> rows;
  for (const char* variant : {"arrive_and_wait", "arrive_wait_token", "parity"}) {
    rows.push_back({variant, "8.0: LDGSTS", threads, threads, threads, 0, 0});
    rows.push_back({variant, "9.0: bulk copy", threads, threads, 0, 0, batch_bytes});
  }
  rows.push_back({"noinc", "8.0, 9.0: LDGSTS", 2 * threads, threads, 0, threads, 0});
  return rows;
}
/// [phase_counts]

// Plays one phase of `row` on a model barrier, the copies landing last (the slow case) and the
// last one landing last of all. "" when the phase completes exactly when the last copy has
// landed, or what goes wrong.
inline std::string phase_problem(const PhaseCount& row) {
  BarrierModel bar;
  bar.init(row.init_count);
  bar.bind_copies(row.counting_copies);
  bar.expect_tx(row.tx_bytes);
  bar.arrive(row.thread_arrivals);
  const int copies = row.counting_copies + row.noinc_copies;
  if (copies > 0) bar.copies_land(copies - 1);
  if (row.tx_bytes > 0) bar.bytes_land(row.tx_bytes - 1);
  if (bar.phase != 0) return "completes before the last copy has landed";
  if (copies > 0) bar.copies_land(1);
  if (row.tx_bytes > 0) bar.bytes_land(1);
  if (bar.phase == 0) return "never completes (" + std::to_string(bar.pending) + " arrivals missing)";
  if (bar.phase > 1) return "completes the next phase too";
  if (bar.pending != row.init_count) return "the next phase does not start with the init count";
  return "";
}

inline void print_phase_counts(std::ostream& out, int threads, int batch_bytes) {
  char line[160];
  std::snprintf(line, sizeof line, "arrivals that complete one phase of full_bar (one batch of %d bytes, %d threads):\n",
                batch_bytes, threads);
  out << line;
  std::snprintf(line, sizeof line, "  %-18s %-17s %6s %9s %19s %9s\n", "variant", "path", "init", "arrive()",
                "copies' arrive-ons", "tx bytes");
  out << line;
  for (const PhaseCount& row : phase_counts(threads, batch_bytes)) {
    const std::string copies = row.counting_copies > 0 ? std::to_string(row.counting_copies) + " counting"
                               : row.noinc_copies > 0  ? std::to_string(row.noinc_copies) + " .noinc"
                                                       : "-";
    std::snprintf(line, sizeof line, "  %-18s %-17s %6d %9d %19s %9d\n", row.variant, row.path, row.init_count,
                  row.thread_arrivals, copies.c_str(), row.tx_bytes);
    out << line;
  }
}

inline void print_barrier_model(std::ostream& out, int threads, int batch_bytes) {
  out << "host model of one barrier phase (4 threads, one copy each):\n"
      << model_trace("cuda::memcpy_async bound to the barrier, init(4):", 4, false, 4)
      << model_trace("cp.async.mbarrier.arrive.noinc, init(2 x 4):", 4, true, 8)
      << model_trace("cp.async.mbarrier.arrive.noinc, init(4): completes before any data", 4, true, 4)
      << model_trace("init(4 + 1): one arrival never comes, the wait is stopped", 4, false, 5);
  print_phase_counts(out, threads, batch_bytes);
}

// ---- A block's ring of buffers, replayed ----------------------------------------------------------

// The {stage, parity} of the waits for batches 0 .. num_batches - 1 of a block, as `Cursor` walks them.
template <class Cursor>
void print_cursor_walk(std::ostream& out, const char* label, int num_batches) {
  out << "  stage/parity of the waits for batches 0.." << num_batches - 1 << " (" << label << "):";
  Cursor cursor;
  for (int batch = 0; batch < num_batches; ++batch, cursor.advance()) out << ' ' << cursor.stage << '/' << cursor.phase;
  out << '\n';
}

// Plays the ring kernels' schedule for one block of `threads` threads on model barriers (the
// noinc count): batch b goes to stage b % kStages; the prime loads kStages - 1 batches, every
// iteration loads the batch kStages - 1 further on, then waits for its own batch with the
// {stage, parity} of `WaitCursor`. Copies land `delay` iterations after they were issued; a
// wait must be on its batch's buffer and must not return before the batch has landed. Returns
// the first batch whose wait is on another buffer, would return early or would hang; or -1.
template <int kStages, class WaitCursor>
int first_early_wait(int num_batches, int delay, int threads = 4) {
  std::vector<BarrierModel> full_bar(kStages);
  for (BarrierModel& bar : full_bar) bar.init(2 * threads);
  std::vector<int> landed_at;
  int landed = 0;
  auto load = [&](int batch) {
    if (batch >= num_batches) return;
    full_bar[batch % kStages].arrive(threads);  // the threads' own arrivals
    landed_at.push_back(static_cast<int>(landed_at.size()) + delay);
  };
  for (int s = 0; s < kStages - 1; ++s) load(s);
  WaitCursor cursor;
  for (int batch = 0; batch < num_batches; ++batch, cursor.advance()) {
    load(batch + kStages - 1);
    if (cursor.stage != batch % kStages) return batch;  // waits on (and reads) another buffer
    const int issued = static_cast<int>(landed_at.size());
    // Copies that have landed by now deliver their arrivals, in issue order.
    while (landed < issued && landed_at[landed] <= batch) full_bar[landed++ % kStages].copies_land(threads);
    if (full_bar[cursor.stage].parity_done(cursor.phase) && landed <= batch) return batch;
    while (!full_bar[cursor.stage].parity_done(cursor.phase)) {
      if (landed == issued) return batch;  // would hang: nothing left to land
      full_bar[landed++ % kStages].copies_land(threads);
    }
    if (landed <= batch) return batch;
  }
  return -1;
}

// ---- The guide's prefetch schedule (4.11.2.1.1) ----------------------------------------------

// The batches the guide's prefetch kernel fetches for one block, in order: its prologue
// fetches num_stages batches whatever batch_size is, its loop fetches while fetch_batch < batch_size.
inline std::vector<int> guide_prefetch_fetches(int num_stages, int batch_size) {
  std::vector<int> fetched;
  for (int s = 0; s < num_stages; ++s) fetched.push_back(s);
  for (int compute_batch = 0, fetch_batch = num_stages; compute_batch < batch_size; ++compute_batch, ++fetch_batch) {
    if (fetch_batch < batch_size) fetched.push_back(fetch_batch);
  }
  return fetched;
}

// "" when `fetched` is batches 0 .. batch_size - 1 in order, or the first thing wrong with it.
inline std::string fetch_problem(const std::vector<int>& fetched, int batch_size) {
  for (std::size_t i = 0; i < fetched.size(); ++i) {
    if (fetched[i] >= batch_size) {
      return "fetches batch " + std::to_string(fetched[i]) + " of " + std::to_string(batch_size);
    }
    if (fetched[i] != static_cast<int>(i)) return "fetch " + std::to_string(i) + " is out of order";
  }
  return fetched.size() == static_cast<std::size_t>(batch_size) ? "" : "misses batches";
}
