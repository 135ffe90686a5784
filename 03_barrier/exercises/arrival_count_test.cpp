// Grades exercise 03.2: the count from init_count() is replayed on the chapter's BarrierModel.
// Each phase: the copies are issued (counting form: +1 each), the threads arrive, then the copies
// land one by one. The phase must not complete before the last arrival or landing, and must
// complete with it; two phases in a row, as a batch loop uses the barrier.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "barrier_model.hpp"

namespace {

std::string describe(const ArrivalScheme& s) {
  std::ostringstream text;
  text << s.arriving_threads << " threads arrive, " << s.copying_threads << " bound copies"
       << (s.noinc ? " with .noinc" : " (counting form)");
  return text.str();
}

void replay(const ArrivalScheme& scheme) {
  const int count = init_count(scheme);
  if (count <= 0) FAIL() << describe(scheme) << ": init() needs a positive count (got " << count << ")";
  BarrierModel bar;
  bar.init(count);
  for (unsigned phase = 0; phase < 2; ++phase) {
    if (!scheme.noinc) bar.bind_copies(scheme.copying_threads);
    int events = scheme.arriving_threads + scheme.copying_threads;
    for (int t = 0; t < scheme.arriving_threads; ++t, --events) {
      bar.arrive(1);
      if ((bar.phase == phase + 1) != (events == 1)) FAIL()
          << describe(scheme) << ", phase " << phase << ": with init(" << count << ") the phase "
          << (bar.phase == phase + 1 ? "completed before every copy had landed" : "did not complete");
    }
    for (int c = 0; c < scheme.copying_threads; ++c, --events) {
      bar.copies_land(1);
      if ((bar.phase == phase + 1) != (events == 1)) FAIL()
          << describe(scheme) << ", phase " << phase << ": with init(" << count << ") the phase "
          << (bar.phase == phase + 1 ? "completed before every copy had landed" : "never completed: it waits for arrivals that never come");
    }
    if (bar.phase != phase + 1) FAIL() << describe(scheme) << ": with init(" << count << ") the phase never completed";
  }
}

TEST(HostExerciseArrivalCount, TheLessonsSchemes) {
  replay({256, 256, false});  // arrive_and_wait, token, parity: every thread copies and arrives
  replay({256, 256, true});   // noinc: every thread copies with .noinc and arrives
}

TEST(HostExerciseArrivalCount, EverySchemeOfSmallBlocks) {
  for (int arriving = 0; arriving <= 8; ++arriving) {
    for (int copying = 0; copying <= 8; ++copying) {
      for (bool noinc : {false, true}) {
        const ArrivalScheme scheme{arriving, copying, noinc};
        const int events = arriving + (noinc ? copying : 0);
        if (events == 0) continue;  // nothing could ever complete a phase: not a barrier's job
        replay(scheme);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
