// Exercise 03.2 (CPU): how many arrivals must init() expect? Solution.
//
// Counting copies add their own expected arrival when issued, so init() counts only the threads'
// arrive() calls. A .noinc copy does not: its arrival is one that init() must already expect.
#pragma once

struct ArrivalScheme {
  int arriving_threads;  // threads that call arrive() once per phase (0: none do)
  int copying_threads;   // threads that issue one bound copy (LDGSTS) per phase
  bool noinc;            // the copies arrive with cp.async.mbarrier.arrive.noinc
};

inline int init_count(const ArrivalScheme& scheme) {
  return scheme.arriving_threads + (scheme.noinc ? scheme.copying_threads : 0);
}
