// Exercise 10.2 (CPU): which phase each wait of the ring names. Solution.
//
// Buffer s is used by iterations s, s + N, s + 2N, ...: iteration it is its use number it / N, and
// phase it / N of its filled barrier completes when that message lands, so the filled wait names
// (it / N) & 1. Phase k of its ready barrier completes when the right neighbour has read the
// message of use k; the ready wait of use it / N is for use it / N - 1, whose parity is the other
// one. For the first N iterations that is "phase -1", parity 1, which a fresh barrier reports as
// complete: the wait returns at once, as it must. In the guide's order the ready wait of iteration
// it is for the reading of message it itself, phase it of the one barrier: parity it & 1.
#pragma once

#include <cstdint>

struct RingStep {
  int stage = 0;                   // the buffer of iteration `it`
  std::uint32_t filled_parity = 0;  // step 3: message `it` has landed
  std::uint32_t ready_parity = 0;   // step 1: the message sent into this buffer num_stages iterations ago was read
};

inline RingStep ring_step(int num_stages, std::uint64_t it) {
  RingStep step;
  step.stage = static_cast<int>(it % static_cast<std::uint64_t>(num_stages));
  step.filled_parity = static_cast<std::uint32_t>((it / static_cast<std::uint64_t>(num_stages)) & 1u);
  step.ready_parity = step.filled_parity ^ 1u;
  return step;
}

// The guide's order, one buffer: the parity of the ready wait at the end of iteration `it`.
inline std::uint32_t guide_ready_parity(std::uint64_t it) { return static_cast<std::uint32_t>(it & 1u); }
