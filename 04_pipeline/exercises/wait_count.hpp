// Exercise 04.1 (CPU): how many batches are in flight, and how many may wait_prior leave?
//
// A block of the lesson owns n batches (k = 0 .. n-1) and a ring of S stages. The prime issues
// the copies of the first batches (never one past the block's last), and after computing batch k
// the block refills its stage with batch k + S while that batch exists. Every real fetch commits
// one group. A count-based wait (cp.async.wait_group N: wait_prior<N>, __pipeline_wait_prior(N))
// lets the thread's N newest groups stay in flight and waits for every older one. So the right N
// before computing batch k is the number of groups committed *after* batch k's:
//   - too large, and batch k is among the groups left in flight: the block reads a batch that may
//     not have landed (a race: nothing hangs, the result is wrong now and then);
//   - too small, and the wait also waits for younger batches: correct, but the overlap is lost.
// With empty commits (thread-scope cuda::pipeline, the primitives) the prime and the drain commit
// a group even when nothing is left to fetch; cooperative_groups cannot commit an empty group.
//
// Your task: batches_in_flight() is the number of the block's batches whose copies were issued
// and not yet computed when it waits for batch k, batch k included; wait_prior_count() the N of
// that wait, with or without empty commits. Any stage count from 1 up; any number of batches
// (think of a block with fewer batches than stages, and of more than 2^32 batches).
// The test replays the commit sequence of a block on the chapter's model (pipeline_model.hpp).
// Check: scripts/exercise.py wait_count
#pragma once

#include <cstddef>

inline int batches_in_flight(std::size_t batch, std::size_t num_batches, int stages) {
  (void)batch, (void)num_batches, (void)stages;
  return 0;  // TODO: the block's batches issued and not yet computed at the wait for `batch`
}

inline int wait_prior_count(std::size_t batch, std::size_t num_batches, int stages, bool empty_commits) {
  (void)batch, (void)num_batches, (void)stages, (void)empty_commits;
  return 0;  // TODO: the groups committed after batch `batch`'s, which the wait may leave in flight
}
