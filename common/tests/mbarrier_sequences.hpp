// Random sequences of mbarrier operations, and the comparison of what a barrier reported after
// each of them with what a host model predicts. The GPU test (mbarrier_oracle_test.cu) runs the
// sequences on real mbarriers and compares; the host tests (mbarrier_model_test.cpp,
// barrier_model_agreement_test.cpp) run the same comparison on recorded or modelled reports.
//
// One sequence: mbarrier.init(count), then up to kMaxSteps operations, each one of
//   arrive N            mbarrier.arrive (N = 1) or mbarrier.arrive with a count (N > 1)
//   expect-tx B         mbarrier.expect_tx (no arrival)
//   complete-tx B       mbarrier.complete_tx (bytes landing, without a copy)
//   arrive.expect-tx B  mbarrier.arrive.expect_tx (the expect-tx, then one arrival)
// with B = 0 .. kMaxBytes bytes. After init and after every operation the reader records
// test_wait.parity(0) (bit 0) and test_wait.parity(1) (bit 1).
//
// Sequences cross phase boundaries: an operation after a completion counts in the next phase,
// and the model must follow the hardware there too. The one thing a sequence never does is
// arrive beyond the arrivals pending in the current phase (below the PTX ISA's range of the
// pending count, so with no defined result; possible only while bytes are outstanding): the generator tracks the phase on
// course::MbarrierModel and arrives only while it says arrivals are pending. Should the model
// be wrong, the comparison stops at the first operation where it differs from the hardware,
// before any later operation generated from its wrong state.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"

namespace mbarrier_sequences {

constexpr int kMaxSteps = 64;
constexpr int kMaxBytes = 512;
constexpr int kMaxCount = 2 * 256;  // the course's largest count: 03's noinc barrier, 256 threads

// The sweep the GPU test runs: seeds kSweepFirstSeed .. + kSweepSequences - 1, one sequence each.
constexpr std::uint32_t kSweepFirstSeed = 1;
constexpr std::uint32_t kSweepSequences = 32768;

enum class Op : std::uint8_t { arrive, expect_tx, complete_tx, arrive_expect_tx };

struct Step {
  Op op;
  int amount;  // arrivals for arrive, bytes for the others
};

struct Sequence {
  std::uint32_t seed = 0;
  int count = 1;  // mbarrier.init's expected arrivals per phase
  std::vector<Step> steps;
};

// One byte per reading: bit 0 test_wait.parity(0), bit 1 test_wait.parity(1).
template <class Model>
std::uint8_t parities(const Model& bar) {
  return static_cast<std::uint8_t>((bar.phase_done(0) ? 1u : 0u) | (bar.phase_done(1) ? 2u : 0u));
}

template <class Model>
void apply(Model& bar, const Step& step) {
  switch (step.op) {
    case Op::arrive: bar.arrive(step.amount); break;
    case Op::expect_tx: bar.expect_tx(step.amount); break;
    case Op::complete_tx: bar.complete_tx(step.amount); break;
    case Op::arrive_expect_tx: bar.arrive_expect_tx(step.amount); break;
  }
}

inline std::string describe(const Step& step) {
  static const char* const kNames[] = {"arrive", "expect-tx", "complete-tx", "arrive.expect-tx"};
  return std::string(kNames[static_cast<int>(step.op)]) + " " + std::to_string(step.amount);
}

// Operation i of a sequence as 32 bits for the device: the op in bits 24.., the amount below.
inline std::uint32_t encode(const Step& step) {
  return (static_cast<std::uint32_t>(step.op) << 24) | static_cast<std::uint32_t>(step.amount);
}

// A random sequence, the same for the same seed on every platform (std::mt19937's output is
// fixed by the standard; the distributions are written out here, not taken from <random>).
// Counts 1..kMaxCount (mostly small), 1..kMaxSteps operations, bytes 0..kMaxBytes, half of the
// byte amounts chosen to bring the transaction count back to zero (whole or in part), so that
// phases complete on every kind of operation and counts go negative and back.
inline Sequence make_sequence(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto below = [&](std::uint32_t n) { return static_cast<int>(rng() % n); };  // 0 .. n - 1
  Sequence seq;
  seq.seed = seed;
  const int size_class = below(10);
  seq.count = size_class < 6 ? 1 + below(4) : size_class < 8 ? 1 + below(64) : 1 + below(kMaxCount);
  if (size_class == 9 && below(4) == 0) seq.count = kMaxCount;
  const int num_steps = below(2) ? kMaxSteps : 1 + below(kMaxSteps);
  course::MbarrierModel bar;
  bar.init(seq.count);
  auto bytes_toward_zero = [&](int balance) {  // balance > 0: the bytes that bring tx to zero
    const int kind = below(20);
    if (kind < 4) return 0;
    if (balance > 0 && balance <= kMaxBytes && kind < 11) return balance;
    if (balance > 0 && kind < 14) return 1 + below(balance < kMaxBytes ? balance : kMaxBytes);
    return below(kMaxBytes + 1);
  };
  for (int i = 0; i < num_steps; ++i) {
    Step step{};
    const bool may_arrive = bar.pending > 0;  // never an arrival beyond the pending ones
    const int pick = may_arrive ? below(4) : 1 + below(2);
    if (pick == 0) {
      const int kind = below(4);
      step = {Op::arrive, kind < 2 ? 1 : kind == 2 ? bar.pending : 1 + below(bar.pending)};
    } else if (pick == 1 || pick == 3) {
      step = {pick == 1 ? Op::expect_tx : Op::arrive_expect_tx, bytes_toward_zero(-bar.tx)};
    } else {
      step = {Op::complete_tx, bytes_toward_zero(bar.tx)};
    }
    apply(bar, step);
    seq.steps.push_back(step);
  }
  return seq;
}

// What a model reports after init and after every operation of `seq` (kMaxSteps + 1 readings at
// most), in the layout the GPU test reads back.
template <class Model>
std::vector<std::uint8_t> predict(const Sequence& seq) {
  Model bar;
  bar.init(seq.count);
  std::vector<std::uint8_t> readings{parities(bar)};
  for (const Step& step : seq.steps) {
    apply(bar, step);
    readings.push_back(parities(bar));
  }
  return readings;
}

// "" when `Model`, replaying `seq`, reports what `observed` (the barrier's readings after init
// and after every operation) holds; otherwise the first operation where they differ, with the
// seed, its index, the operations up to it and both readings.
template <class Model>
std::string first_disagreement(const Sequence& seq, const std::uint8_t* observed) {
  Model bar;
  bar.init(seq.count);
  auto reading = [](std::uint8_t bits) {
    if (bits > 3u) return std::string("not written");
    return "parity(0) " + std::string(bits & 1u ? "done" : "open") + ", parity(1) " + (bits & 2u ? "done" : "open");
  };
  for (std::size_t i = 0; i <= seq.steps.size(); ++i) {
    if (i > 0) apply(bar, seq.steps[i - 1]);
    const std::uint8_t model = parities(bar);
    if (model == observed[i]) continue;
    std::ostringstream out;
    out << "seed " << seq.seed << ", init(" << seq.count << "): ";
    if (i == 0) {
      out << "right after init";
    } else {
      out << "operation " << i - 1 << " (" << describe(seq.steps[i - 1]) << ") differs; operations 0.." << i - 1
          << ":";
      for (std::size_t k = 0; k < i; ++k) out << (k ? ", " : " ") << describe(seq.steps[k]);
    }
    out << "; hardware: " << reading(observed[i]) << "; model: " << reading(model);
    return out.str();
  }
  return "";
}

}  // namespace mbarrier_sequences
