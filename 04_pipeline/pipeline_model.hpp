// 04_pipeline, the model: which batch is in which stage, and how many copies a wait may leave
// in flight.
//
// One block's pipeline on the host. Its batches walk a ring of S stages (batch k in stage
// k % S, the course's StageCursor); the prime fetches the first S, every step waits for one
// batch, computes it and refills its stage with the batch S further on, and the drain has
// nothing left to fetch. This header holds what needs no GPU: that schedule (the program prints
// it), the number of groups wait_prior may leave pending when no empty groups are committed
// (the cooperative-groups kernel uses it), the guide's formula for the same number, and a
// replay of a block's commit sequence that finds a wait which misses its batch (a race) or
// waits for younger ones too (lost overlap). And the launch rule, chapter 01's batch grid.
// Host code only (pending_batches() is __host__ __device__ under nvcc): pipeline.cu includes it,
// pipeline_test.cu checks it on the CPU.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#prefetching-data
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/batch_grid.hpp"
#include "course/stage_cursor.hpp"

// The launch rule of chapters 01-05 (chapter 01 introduces it): course/batch_grid.hpp.
using course::batch_grid;

// The count below is computed in the cooperative-groups kernel as well; a plain host function without nvcc.
#ifdef __CUDACC__
#define PIPELINE_HOST_DEVICE __host__ __device__
#else
#define PIPELINE_HOST_DEVICE
#endif

/// [pending]
// The batches younger than `batch` that a block may leave in flight when it is about to compute
// on `batch`, if it commits one group per real batch and keeps at most `stages` in flight: the
// count that wait_prior needs when no empty groups are committed (cooperative_groups cannot
// commit one). `batch < num_batches` always, so nothing here can wrap around.
PIPELINE_HOST_DEVICE constexpr int pending_batches(std::size_t batch, std::size_t num_batches, int stages) {
  const std::size_t younger = num_batches - 1 - batch;
  return younger < static_cast<std::size_t>(stages - 1) ? static_cast<int>(younger) : stages - 1;
}
/// [pending]

// The guide's cooperative_groups example (4.11.1.2), transcribed: size_t arithmetic, and
// fetch_batch = compute_batch + num_stages. It wraps around in the drain and when a block has
// fewer batches than stages (see wait_problem() and the HostPendingBatches tests).
inline std::size_t guide_pending_batches(std::size_t fetch_batch, std::size_t batch_size, std::size_t num_stages) {
  return (fetch_batch < batch_size - num_stages) ? num_stages - 1 : batch_size - fetch_batch - 1;
}

// ---- A block's commit sequence, replayed -----------------------------------------------------

// How many groups a wait before computing batch `batch` of `num_batches` may leave in flight.
using PendingRule = std::function<std::size_t(std::size_t batch, std::size_t num_batches, int stages)>;

// The lesson's three ways to pick that number.
inline std::size_t chapter_rule(std::size_t k, std::size_t n, int stages) {  // pending_batches(): cooperative groups
  return static_cast<std::size_t>(pending_batches(k, n, stages));
}
inline std::size_t constant_rule(std::size_t, std::size_t, int stages) {  // wait_prior<S - 1>: commit always
  return static_cast<std::size_t>(stages - 1);
}
inline std::size_t guide_rule(std::size_t k, std::size_t n, int stages) {  // the guide's formula
  return guide_pending_batches(k + stages, n, static_cast<std::size_t>(stages));
}

// Which fetches commit a group. A fetch of a real batch always does; `prime_every_stage`: the
// prime commits kStages groups whatever the block's batch count (empty commits, or the guide's
// prime, which fetches kStages batches without a check); `drain_empty`: the drain commits an
// empty group per step when nothing is left to fetch.
struct Commits {
  bool prime_every_stage;
  bool drain_empty;
};
constexpr Commits kCommitAlways{true, true};       // thread-scope pipeline, primitives
constexpr Commits kRealBatchesOnly{false, false};  // the lesson's cooperative_groups kernel
constexpr Commits kGuidesCgPrime{true, false};     // the guide's cooperative_groups kernel

/// [commit_model]
// One block's commit sequence, replayed. Before computing each batch k it asks `pending` how
// many groups wait_prior may leave in flight, and lists every problem: a count that wrapped
// around, a wait that does not cover batch k (a race: the batch is computed before it has
// surely landed), or, with `exact`, a wait that also covers younger batches (lost overlap).
inline std::vector<std::string> wait_problems(std::size_t num_batches, int stages, Commits commits,
                                              const PendingRule& pending, bool exact = true) {
  std::vector<std::string> problems;
  std::size_t committed = 0;  // groups committed so far; group g holds batch g (if g < n)
  for (int s = 0; s < stages; ++s) {
    if (commits.prime_every_stage || std::size_t(s) < num_batches) ++committed;
  }
  for (std::size_t k = 0; k < num_batches; ++k) {
    const std::size_t allowed = pending(k, num_batches, stages);
    const std::size_t younger = committed - 1 - k;  // groups committed after batch k's
    const std::string where = "batch " + std::to_string(k) + " of " + std::to_string(num_batches) +
                              ", " + std::to_string(stages) + " stages: ";
    if (allowed > num_batches + stages) {
      problems.push_back(where + "pending count wrapped around to " + std::to_string(allowed));
    } else if (allowed > younger) {
      problems.push_back(where + "wait_prior(" + std::to_string(allowed) +
                         ") leaves the batch in flight (only " + std::to_string(younger) +
                         " younger groups)");
    } else if (exact && allowed < younger) {
      problems.push_back(where + "wait_prior(" + std::to_string(allowed) +
                         ") also waits for younger batches (" + std::to_string(younger) +
                         " in flight)");
    }
    if (commits.drain_empty || k + stages < num_batches) ++committed;  // the refill's commit
  }
  return problems;
}
/// [commit_model]

// The first problem of wait_problems(), "" when there is none.
inline std::string wait_problem(std::size_t num_batches, int stages, Commits commits,
                                const PendingRule& pending, bool exact = true) {
  const std::vector<std::string> all = wait_problems(num_batches, stages, commits, pending, exact);
  return all.empty() ? "" : all.front();
}

// ---- The schedule of one block ---------------------------------------------------------------

/// [schedule]
// One step of a block's loop: the batch it waits for and computes, where that batch is (the
// cursor the kernels keep: stage, and the parity the block-scope pipeline's full barrier
// completes), how many of the block's batches are in flight at the wait (this one included),
// which batch refills the stage afterwards (none in the drain), and the wait_prior count of
// the two counting styles: constant with empty commits, pending_batches() without.
struct PipelineStep {
  std::size_t batch;
  int stage;
  std::uint32_t phase;
  std::size_t in_flight;
  bool refills;
  std::size_t refill_batch;  // batch + stages, when refills
  int wait_commit_always;
  int wait_counted;
};

template <int kStages>
std::vector<PipelineStep> pipeline_schedule(std::size_t num_batches) {
  std::vector<PipelineStep> steps;
  course::StageCursor<kStages> cursor;  // the prime put batch s into stage s: batch k is in stage k % kStages
  for (std::size_t k = 0; k < num_batches; ++k, cursor.advance()) {
    const std::size_t left = num_batches - k;
    const bool refills = k + kStages < num_batches;
    steps.push_back({k, cursor.stage, cursor.phase, left < std::size_t{kStages} ? left : std::size_t{kStages}, refills,
                     k + kStages, kStages - 1, pending_batches(k, num_batches, kStages)});
  }
  return steps;
}
/// [schedule]

// What the program prints before it needs a GPU: one block's schedule.
template <int kStages>
void print_pipeline_schedule(std::ostream& out, std::size_t num_batches) {
  const std::string primed = kStages == 1 ? "batch 0 into stage 0"
                                          : "batches 0-" + std::to_string(kStages - 1) + " into stages 0-" +
                                                std::to_string(kStages - 1);
  out << "one block, " << kStages << (kStages == 1 ? " stage, " : " stages, ") << num_batches
      << " batches; the prime fetches " << primed << ":\n"
      << "  batch  stage  phase  in flight  then refills  wait_prior: commit always / counted\n";
  for (const PipelineStep& s : pipeline_schedule<kStages>(num_batches)) {
    const std::string refill = s.refills ? "batch " + std::to_string(s.refill_batch) : "-";
    char line[128];
    std::snprintf(line, sizeof line, "  %5zu  %5d  %5u  %9zu  %12s  %12d / %d\n", s.batch, s.stage, s.phase,
                  s.in_flight, refill.c_str(), s.wait_commit_always, s.wait_counted);
    out << line;
  }
}
