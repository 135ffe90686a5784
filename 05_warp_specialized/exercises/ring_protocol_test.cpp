// Grades exercise 05.1: a block's ring runs on host models of its barriers (course::MbarrierModel)
// with the counts from full_arrivals() and empty_arrivals() and the parity from
// producer_empty_parity(). Every fill and every release is played signal by signal, the copies
// landing last: the phase must complete exactly with the last arrival or byte, never before and
// never not at all. The producer runs ahead as far as its waits let it; a wait that returns on a
// buffer not yet full or free, or a ring where nobody can move, fails with the place where it
// happens. The lesson's two kernels are also run on the chapter's own ring model (run_ring).
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "warp_specialized_model.hpp"

namespace {

constexpr int kLanes = 32;
constexpr int kShareBytes = 8192;  // the bytes of a batch that one producer warp fills (bulk copies)

std::string describe(const RingShape& shape) {
  static const char* const full[] = {"LDGSTS + .noinc per lane", "producer_commit() per lane",
                                     "one bulk copy per warp with expect_tx"};
  static const char* const empty[] = {"one release per consumer warp", "one release per consumer thread"};
  return std::to_string(shape.producer_warps) + " producer warp(s) (" + full[static_cast<int>(shape.full)] + "), " +
         std::to_string(shape.consumer_warps) + " consumer warp(s) (" + empty[static_cast<int>(shape.empty)] + ")";
}

// Plays the signals of one fill of a buffer on its full barrier, in a slow order: first what the
// producer lanes do when they issue their copies, then the copies land one lane (or one piece)
// at a time. "" when the phase completes with the last landing and not before.
std::string fill(course::MbarrierModel& bar, const RingShape& shape) {
  const unsigned before = bar.completed;
  std::vector<int> landings;  // the signals that come when copies land: arrivals (lanes) or bytes
  const int lanes = shape.producer_warps * kLanes;
  switch (shape.full) {
    case FullSignal::kNoincPerLane:
      landings.assign(lanes, 0);  // each lane's .noinc arrival, when its copies land
      break;
    case FullSignal::kCommitPerLane:
      for (int lane = 0; lane < lanes; ++lane) {
        bar.pending += 1;  // cp.async.mbarrier.arrive (counting): one more arrival to wait for
        bar.arrive();      // the lane's own arrive
        if (bar.completed != before) return "full_bar completed before any copy had landed";
      }
      landings.assign(lanes, 0);  // the counting arrive-on's arrival, when the lane's copies land
      break;
    case FullSignal::kBulkCopyPerWarp:
      for (int warp = 0; warp < shape.producer_warps; ++warp) {
        bar.expect_tx(kShareBytes);  // mbarrier.arrive.expect_tx: the bytes first, then the arrival
        bar.arrive();
        if (bar.completed != before) return "full_bar completed before any byte had landed";
        for (int piece = 0; piece < 4; ++piece) landings.push_back(kShareBytes / 4);
      }
      break;
  }
  for (std::size_t i = 0; i < landings.size(); ++i) {
    if (landings[i] == 0) {
      bar.arrive();
    } else {
      bar.complete_tx(landings[i]);
    }
    const bool last = i + 1 == landings.size();
    if (!last && bar.completed != before) {
      return "full_bar completed before the whole batch had landed: the consumers would read a partial batch";
    }
  }
  if (bar.completed == before) {
    return "full_bar did not complete when the whole batch had landed: the consumers' wait would be stopped by the "
           "bounded wait";
  }
  if (bar.completed != before + 1) return "full_bar completed more than one phase for one batch";
  return "";
}

// The releases of one buffer by the consumer side on its empty barrier, one at a time.
std::string release(course::MbarrierModel& bar, const RingShape& shape) {
  const unsigned before = bar.completed;
  const int arrivals = shape.consumer_warps * (shape.empty == EmptySignal::kOnePerWarp ? 1 : kLanes);
  for (int i = 0; i < arrivals; ++i) {
    bar.arrive();
    if (i + 1 < arrivals && bar.completed != before) {
      return "empty_bar completed before every consumer had released the buffer: the producer could overwrite a "
             "batch still being read";
    }
  }
  if (bar.completed == before) {
    return "empty_bar did not complete when every consumer had released the buffer: the producer's wait would be "
           "stopped by the bounded wait";
  }
  if (bar.completed != before + 1) return "empty_bar completed more than one phase for one release";
  return "";
}

struct Cursor {
  int num_stages;
  int stage = 0;
  std::uint32_t phase = 0;
  void advance() {
    if (++stage == num_stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// One block's ring of `stages` buffers over `num_batches` batches. "" when every batch is filled
// and taken in order, else the first thing that goes wrong.
template <class Parity>
std::string run(const RingShape& shape, int full_count, int empty_count, Parity&& empty_parity, int stages,
                int num_batches) {
  std::vector<course::MbarrierModel> full_bar(stages), empty_bar(stages);
  for (int s = 0; s < stages; ++s) {
    full_bar[s].init(full_count);
    empty_bar[s].init(empty_count);
  }
  std::vector<int> holds(stages, -1);  // the batch each buffer holds, -1 when free
  Cursor producer{stages}, consumer{stages};
  int filled = 0, taken = 0;
  const std::string ring = std::to_string(stages) + (stages == 1 ? " buffer, " : " buffers, ") +
                           std::to_string(num_batches) + (num_batches == 1 ? " batch: " : " batches: ");
  while (taken < num_batches) {
    bool moved = false;
    while (filled < num_batches &&
           empty_bar[producer.stage].phase_done(static_cast<unsigned>(empty_parity(producer.phase)))) {
      const std::string at = "batch " + std::to_string(filled) + " (stage " + std::to_string(producer.stage) +
                             ", phase " + std::to_string(producer.phase) + "): ";
      if (holds[producer.stage] != -1) {
        return ring + at + "the producer's wait on empty_bar returned while the buffer still held batch " +
               std::to_string(holds[producer.stage]) + ", which the consumers had not read";
      }
      holds[producer.stage] = filled;
      const std::string problem = fill(full_bar[producer.stage], shape);
      if (!problem.empty()) return ring + at + problem;
      ++filled;
      producer.advance();
      moved = true;
    }
    if (full_bar[consumer.stage].phase_done(consumer.phase)) {
      const std::string at = "batch " + std::to_string(taken) + " (stage " + std::to_string(consumer.stage) +
                             ", phase " + std::to_string(consumer.phase) + "): ";
      if (holds[consumer.stage] != taken) return ring + at + "the consumers' wait returned before the batch was filled";
      holds[consumer.stage] = -1;
      const std::string problem = release(empty_bar[consumer.stage], shape);
      if (!problem.empty()) return ring + at + problem;
      ++taken;
      consumer.advance();
      moved = true;
    }
    if (!moved) {
      std::string stuck = ring + "nobody can move: ";
      if (filled < num_batches) {
        stuck += "the producer waits on 'empty' stage " + std::to_string(producer.stage) + " parity " +
                 std::to_string(empty_parity(producer.phase)) + " (in the round of phase " +
                 std::to_string(producer.phase) + "), ";
      }
      return stuck + "the consumers wait on 'full' stage " + std::to_string(consumer.stage) + " phase " +
             std::to_string(consumer.phase) + "; each side waits for the other";
    }
  }
  return "";
}

const int kBatchCounts[] = {1, 2, 3, 4, 5, 7, 9, 64};

void expect_ring(const RingShape& shape) {
  const int full_count = full_arrivals(shape);
  const int empty_count = empty_arrivals(shape);
  if (full_count <= 0) FAIL() << describe(shape) << ": full_bar needs a positive count (got " << full_count << ")";
  if (empty_count <= 0) FAIL() << describe(shape) << ": empty_bar needs a positive count (got " << empty_count << ")";
  for (int stages = 1; stages <= 4; ++stages) {
    for (int batches : kBatchCounts) {
      const auto parity = [](std::uint32_t p) { return producer_empty_parity(p); };
      const std::string problem = run(shape, full_count, empty_count, parity, stages, batches);
      if (!problem.empty()) FAIL() << describe(shape) << ", full_bar init(" << full_count << "), empty_bar init("
                                   << empty_count << "), " << problem;
    }
  }
}

// The chapter's ring (warp_specialized_model.hpp) for the lesson's raw kernel, which signals
// with .noinc per producer lane and one release per consumer warp.
template <int kS>
void expect_chapters_ring(const RingProtocol& protocol) {
  for (int batches : kBatchCounts) {
    const RingRun chapter = run_ring<kS>(batches, protocol);
    if (!chapter.problem.empty()) FAIL()
        << "the chapter's ring model, " << kS << (kS == 1 ? " buffer, " : " buffers, ") << batches
        << (batches == 1 ? " batch" : " batches") << ", full_bar init(" << protocol.full_arrivals
        << "), empty_bar init(" << protocol.empty_arrivals << "): " << chapter.problem;
  }
}

TEST(HostExerciseRingProtocol, TheProducersParityInEveryRound) {
  // The lesson's raw kernel with its own counts: only the parity is yours here.
  const RingShape raw{1, kConsumerWarps, FullSignal::kNoincPerLane, EmptySignal::kOnePerWarp};
  for (int stages = 1; stages <= 4; ++stages) {
    for (int batches : kBatchCounts) {
      const std::string problem = run(raw, static_cast<int>(kFullArrivals), static_cast<int>(kEmptyArrivals),
                                      [](std::uint32_t p) { return producer_empty_parity(p); }, stages, batches);
      if (!problem.empty()) FAIL() << "the producer's wait on empty_bar, " << problem;
    }
  }
}

TEST(HostExerciseRingProtocol, TheLessonsRawKernel) {
  const RingShape raw{1, kConsumerWarps, FullSignal::kNoincPerLane, EmptySignal::kOnePerWarp};
  expect_ring(raw);
  if (HasFatalFailure()) return;
  const bool phase_before = producer_empty_parity(0) == 1u && producer_empty_parity(1) == 0u;
  const RingProtocol protocol{full_arrivals(raw), empty_arrivals(raw), phase_before};
  expect_chapters_ring<1>(protocol);
  if (HasFatalFailure()) return;
  expect_chapters_ring<2>(protocol);
  if (HasFatalFailure()) return;
  expect_chapters_ring<3>(protocol);
  if (HasFatalFailure()) return;
  expect_chapters_ring<4>(protocol);
}

TEST(HostExerciseRingProtocol, TheLessonsPartitionedPipeline) {
  expect_ring({1, kConsumerWarps, FullSignal::kCommitPerLane, EmptySignal::kEveryThread});
}

TEST(HostExerciseRingProtocol, EveryShapeAndSignal) {
  for (int producer_warps : {1, 2}) {
    for (int consumer_warps : {1, 2, 4, 8}) {
      for (FullSignal full : {FullSignal::kNoincPerLane, FullSignal::kCommitPerLane, FullSignal::kBulkCopyPerWarp}) {
        for (EmptySignal empty : {EmptySignal::kOnePerWarp, EmptySignal::kEveryThread}) {
          expect_ring({producer_warps, consumer_warps, full, empty});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace
