// Exercise 04.1 (CPU): how many batches are in flight, and how many may wait_prior leave? Solution.
//
// At the wait for batch k the block has issued min(S, n) batches in the prime and one more for
// each of batches 0 .. k-1 whose refill existed, so min(S, n - k) are issued and not computed:
// batch k and the younger real batches. Without empty commits the groups younger than batch k's
// are exactly those younger real batches; with them, every iteration and the prime commit, so
// S - 1 groups always follow batch k's and the count is a constant. Subtract only what cannot
// wrap (k < n), and compare in std::size_t before narrowing to int.
#pragma once

#include <cstddef>

inline int batches_in_flight(std::size_t batch, std::size_t num_batches, int stages) {
  const std::size_t left = num_batches - batch;  // batch < num_batches: no wrap-around
  return left < static_cast<std::size_t>(stages) ? static_cast<int>(left) : stages;
}

inline int wait_prior_count(std::size_t batch, std::size_t num_batches, int stages, bool empty_commits) {
  if (empty_commits) return stages - 1;  // the drain's empty groups keep S - 1 behind every batch
  return batches_in_flight(batch, num_batches, stages) - 1;
}
