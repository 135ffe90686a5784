// Exercise 03.2 (CPU): how many arrivals must init() expect?
//
// A phase of an mbarrier completes when the arrivals it still expects reach zero (and, on 9.0,
// the bytes it still expects). Who arrives depends on how the kernel is written:
//   - threads that call arrive() (arrive_and_wait, arrive + wait(token)) arrive once each;
//   - a copy bound with cp.async.mbarrier.arrive (what cuda::memcpy_async with a barrier emits
//     for LDGSTS) raises the expected count by one when issued and arrives when it lands;
//   - with the .noinc form the copy's arrival does not raise the count: init() must include it.
// The lesson's kernels show the counting form (arrive_and_wait, token, parity) and the noinc form.
//
// Your task: return the count init() must be given for one phase of such a barrier. The test
// replays your count on the chapter's model barrier (barrier_model.hpp) for many schemes: the phase
// must complete exactly when the last thread has arrived and the last copy has landed.
// Check: scripts/exercise.py arrival_count
#pragma once

struct ArrivalScheme {
  int arriving_threads;  // threads that call arrive() once per phase (0: none do)
  int copying_threads;   // threads that issue one bound copy (LDGSTS) per phase
  bool noinc;            // the copies arrive with cp.async.mbarrier.arrive.noinc
};

inline int init_count(const ArrivalScheme& scheme) {
  (void)scheme;
  return 0;  // TODO: the arrivals that complete one phase
}
