// Exercise 10.2 (CPU): which phase each wait of the ring names.
//
// In iteration `it` a block of the lesson's ring with `num_stages` buffers uses buffer
// it mod num_stages, and
//   1. waits on its ready barrier of that buffer: the right neighbour has read the message this
//      block sent into the same buffer num_stages iterations earlier (in the first num_stages
//      iterations there is no such message, and the wait must return at once);
//   2. sends message `it` into that buffer of the right neighbour, and announces its own bytes;
//   3. waits on its filled barrier of that buffer: message `it` from the left neighbour has landed.
// The guide's order is different: one buffer, and the ready wait comes last in the iteration, for
// the reading of the message just sent.
// A wait names the parity of the phase it waits for. A freshly initialised mbarrier is in phase 0,
// and a wait on parity 1, the phase before it, returns at once.
//
// Your task: the buffer and the two parities of iteration `it`, for any number of buffers (the
// lesson has one and two, the lab up to four) and any iteration, without walking there one step at
// a time; and the parity of the ready wait in the guide's order. The test replays a block's waits
// on model barriers (course/mbarrier_model.hpp) and compares with the chapter's ring_waits().
// Check: scripts/exercise.py ring_walk
#pragma once

#include <cstdint>

struct RingStep {
  int stage = 0;                   // the buffer of iteration `it`
  std::uint32_t filled_parity = 0;  // step 3: message `it` has landed
  std::uint32_t ready_parity = 0;   // step 1: the message sent into this buffer num_stages iterations ago was read
};

inline RingStep ring_step(int num_stages, std::uint64_t it) {
  (void)num_stages, (void)it;
  RingStep step;
  // TODO: the buffer and both parities of iteration `it`
  return step;
}

// The guide's order, one buffer: the parity of the ready wait at the end of iteration `it`.
inline std::uint32_t guide_ready_parity(std::uint64_t it) {
  (void)it;
  return 0;  // TODO
}
