// Grades exercise 04.1: batches_in_flight() against the schedule of the chapter's model and a
// replay of a block's fetches; wait_prior_count() against the model's replay of the commit
// sequence (wait_problem(), exact: the wait must cover batch k and nothing younger), for one to
// six stages, every edge of the batch count, with and without empty commits, and far batches.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "pipeline_model.hpp"

namespace {

std::string where(std::size_t k, std::size_t n, int stages) {
  return std::to_string(stages) + (stages == 1 ? " stage, " : " stages, ") + std::to_string(n) +
         (n == 1 ? " batch" : " batches") + ", at the wait for batch " + std::to_string(k);
}

// The batch counts worth trying for a stage count: fewer batches than stages, exactly as many,
// one more, several rounds, and many.
std::vector<std::size_t> batch_counts(int stages) {
  std::vector<std::size_t> counts;
  for (std::size_t n = 1; n <= static_cast<std::size_t>(3 * stages + 2); ++n) counts.push_back(n);
  counts.push_back(1007);
  return counts;
}

// One block's fetches replayed: the prime issues the batches that exist among the first S, and
// computing batch k is followed by the refill with batch k + S if it exists.
void expect_in_flight(int stages, std::size_t n) {
  std::size_t issued = 0;
  for (int s = 0; s < stages; ++s) issued += static_cast<std::size_t>(s) < n ? 1 : 0;
  for (std::size_t k = 0; k < n; ++k) {
    const long long in_flight = static_cast<long long>(issued - k);
    const int answer = batches_in_flight(k, n, stages);
    if (answer < 1) FAIL() << where(k, n, stages) << ": batches_in_flight() says " << answer
                         << ", but batch " << k << " itself is in flight (issued, not yet computed)";
    if (answer > in_flight) FAIL() << where(k, n, stages) << ": batches_in_flight() says " << answer
                                 << ", more than the block has issued and not computed (the prime and the refills "
                                    "never fetch past the block's last batch)";
    if (answer < in_flight) FAIL() << where(k, n, stages) << ": batches_in_flight() says " << answer
                                 << ", fewer than the block has issued and not computed";
    if (k + stages < n) ++issued;  // the refill after computing batch k
  }
}

TEST(HostExerciseWaitCount, BatchesInFlightForOneToSixStages) {
  for (int stages = 1; stages <= 6; ++stages) {
    for (std::size_t n : batch_counts(stages)) {
      expect_in_flight(stages, n);
      if (HasFatalFailure()) return;
    }
  }
}

// The chapter's schedule (what the program prints) must show the same numbers.
template <int kStages>
void expect_schedule_agrees() {
  for (std::size_t n : batch_counts(kStages)) {
    for (const PipelineStep& step : pipeline_schedule<kStages>(n)) {
      if (static_cast<std::size_t>(batches_in_flight(step.batch, n, kStages)) != step.in_flight) FAIL()
          << where(step.batch, n, kStages) << ": batches_in_flight() disagrees with the chapter's schedule";
    }
  }
}

TEST(HostExerciseWaitCount, BatchesInFlightAgreeWithTheChaptersSchedule) {
  expect_schedule_agrees<1>();
  if (HasFatalFailure()) return;
  expect_schedule_agrees<2>();
  if (HasFatalFailure()) return;
  expect_schedule_agrees<3>();
  if (HasFatalFailure()) return;
  expect_schedule_agrees<4>();
}

// The model's verdict, worded without its numbers.
std::string explain(const std::string& problem) {
  const std::size_t colon = problem.find(": ");
  const std::string place = problem.substr(0, colon);
  if (problem.find("wrapped") != std::string::npos) {
    return place + ": the count is not a small number of groups (did an unsigned subtraction or a narrowing wrap?)";
  }
  if (problem.find("leaves the batch in flight") != std::string::npos) {
    return place + ": the wait lets the batch itself stay in flight, so the block may compute on data that has not "
                   "landed (a race)";
  }
  if (problem.find("also waits") != std::string::npos) {
    return place + ": the wait also waits for younger batches, so the pipeline loses its overlap";
  }
  return problem;
}

void expect_exact_waits(bool empty_commits) {
  const PendingRule student = [empty_commits](std::size_t k, std::size_t n, int stages) {
    return static_cast<std::size_t>(static_cast<long long>(wait_prior_count(k, n, stages, empty_commits)));
  };
  for (int stages = 1; stages <= 6; ++stages) {
    for (std::size_t n : batch_counts(stages)) {
      const Commits commits = empty_commits ? kCommitAlways : kRealBatchesOnly;
      const std::string problem = wait_problem(n, stages, commits, student, /*exact=*/true);
      if (!problem.empty()) FAIL() << (empty_commits ? "with" : "without") << " empty commits, " << explain(problem);
    }
  }
}

TEST(HostExerciseWaitCount, WaitPriorIsExactWithoutEmptyCommits) { expect_exact_waits(false); }

TEST(HostExerciseWaitCount, WaitPriorIsExactWithEmptyCommits) { expect_exact_waits(true); }

// A block with more than 2^32 batches: near its end it must behave like a small block near its
// end, before that like a block in its steady state. Nothing may wrap or be cut to 32 bits.
TEST(HostExerciseWaitCount, FarBatchesOfAHugeBlock) {
  const std::size_t n = 5'000'000'011ull;
  for (int stages = 1; stages <= 6; ++stages) {
    const std::size_t small = 3 * static_cast<std::size_t>(stages) + 1;
    for (std::size_t k : {std::size_t{0}, std::size_t{1} << 32, n / 2, n - small, n - 3, n - 2, n - 1}) {
      // The same distance from the end in a block of `small` batches, or its steady state.
      const std::size_t from_end = n - k;
      const std::size_t twin = from_end <= small ? small - from_end : 0;
      const int in_flight = batches_in_flight(k, n, stages);
      if (!(in_flight >= 1 && in_flight <= stages)) FAIL()
          << where(k, n, stages) << ": batches_in_flight() says " << in_flight
          << ", which no ring of " << stages << (stages == 1 ? " stage" : " stages") << " can hold";
      if (in_flight != batches_in_flight(twin, small, stages)) FAIL()
          << where(k, n, stages) << ": batches_in_flight() differs from a block of " << small
          << " batches at the same distance from its end";
      for (bool empty_commits : {false, true}) {
        const int count = wait_prior_count(k, n, stages, empty_commits);
        if (!(count >= 0 && count < stages)) FAIL()
            << where(k, n, stages) << (empty_commits ? ", with" : ", without") << " empty commits: wait_prior("
            << count << ") is not a count of younger groups that a ring of " << stages
            << (stages == 1 ? " stage" : " stages") << " can hold";
        if (count != wait_prior_count(twin, small, stages, empty_commits)) FAIL()
            << where(k, n, stages) << (empty_commits ? ", with" : ", without")
            << " empty commits: the count differs from a block of " << small
            << " batches at the same distance from its end";
      }
    }
  }
}

}  // namespace
