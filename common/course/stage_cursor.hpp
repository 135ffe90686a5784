/// @file
/// @brief The position in a ring of pipeline stages: which buffer, and the parity of the round.
///
/// Chapter 03 (`StageCursor` in barrier.cu) teaches it; its test checks that the chapter's
/// cursor and this one walk the same sequence. Every later ring (04-12) keeps one per role
/// and advances it once per tile or batch, so producer and consumer agree without talking.
#pragma once

#include <cstdint>

/// `__host__ __device__` under nvcc; nothing for the host compiler, which builds the host tests.
#ifdef __CUDACC__
#define COURSE_HOST_DEVICE __host__ __device__
#else
#define COURSE_HOST_DEVICE  // host tests compile the cursor with the C++ compiler alone
#endif

namespace course {

/// A role's place in a ring of kStages buffers: the buffer to use next (`stage`) and the
/// parity of the barrier phase that completes when that buffer is ready (`phase`). Every
/// kStages steps the stage wraps and every barrier of the ring is one phase further on, so
/// the parity flips: correct for any number of stages, one included.
template <int kStages>
struct StageCursor {
  static_assert(kStages >= 1, "a ring needs at least one buffer");
  int stage = 0;
  std::uint32_t phase = 0;  // parity bit: 0 in the first round, 1 in the second, ...

  COURSE_HOST_DEVICE void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace course
