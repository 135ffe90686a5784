/// @file
/// @brief For the tests of the graded exercises (NN_topic/exercises): run a student's GPU code in
/// a child process, so that a kernel stopped by a bounded wait (a trap) fails one test with its
/// diagnosis instead of breaking the CUDA context of every test after it. Also what several of
/// those tests check alike: the batch smoothing of chapters 03 to 05 (attempt_smoothed_batches) and
/// a kernel stuck in a wait that has no bound (start_unbounded_wait_watchdog).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/pattern.hpp"
#include "course/testing.hpp"
#include "course/wait_limit.hpp"

namespace course {

/// Runs @p attempt (launches the exercise's kernel, synchronises, compares the result and returns
/// "" when it is right, or one line saying what is wrong) and exits: 0 when it returned "" and the
/// device reported no error, 1 otherwise, after printing the line or the CUDA error to stderr.
/// Device printf output (a bounded wait's diagnosis) goes to stderr with it.
template <class Attempt>
[[noreturn]] void attempt_and_exit(Attempt&& attempt) {
  std::fflush(stdout);
  dup2(2, 1);
  std::string problem;
  try {
    problem = attempt();
  } catch (const std::exception& error) {
    problem = error.what();
  }
  const cudaError_t status = cudaDeviceSynchronize();
  if (problem.empty() && status != cudaSuccess) problem = std::string("the kernel failed: ") + cudaGetErrorName(status);
  std::fprintf(stderr, "%s\n", problem.empty() ? "exercise: right" : problem.c_str());
  std::fflush(stderr);
  std::_Exit(problem.empty() ? 0 : 1);
}

/// How much longer than the process's wait limit start_unbounded_wait_watchdog lets a kernel run.
constexpr long long kUnboundedWaitMarginSeconds = 20;

/// For an attempt (see attempt_and_exit) whose kernel may be stuck where no bounded wait applies
/// (a library wait that has no bounded form, or a plain wait the student wrote): starts a detached
/// thread that, once the kernel has outlived every bounded wait by far (the process's wait limit,
/// course::wait_limit_ns of @p compiled_wait_limit_ns, plus kUnboundedWaitMarginSeconds), prints
/// one line and ends the child with exit code 1. The line says that no bounded wait fired and that
/// the threads are stuck in a wait that has no bound, followed by @p stuck_where: which wait that
/// is, or how to bound it. Pass COURSE_WAIT_LIMIT_NS (course/wait.cuh) as @p compiled_wait_limit_ns.
inline void start_unbounded_wait_watchdog(unsigned long long compiled_wait_limit_ns, const std::string& stuck_where) {
  const long long seconds =
      static_cast<long long>(wait_limit_ns(compiled_wait_limit_ns) / 1'000'000'000ull) + kUnboundedWaitMarginSeconds;
  std::thread([seconds, stuck_where] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::fprintf(stderr,
                 "the kernel was still running after %lld s and no bounded wait fired: its threads are stuck in a "
                 "wait that has no bound%s\n",
                 seconds, stuck_where.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

/// A batch exercise's smoothing, `smooth(left, centre, right)`: the exercise's own function, which
/// its kernel calls on the device and attempt_smoothed_batches calls on the host.
using SmoothFn = std::uint32_t (*)(std::uint32_t left, std::uint32_t centre, std::uint32_t right);

/// Launches a batch exercise's kernel on its input and output (device pointers).
using BatchLaunch = std::function<void(const std::uint32_t* gmem_in, std::uint32_t* gmem_out)>;

/// Says what a wrong output word's value tells (it takes the value), as text that follows the
/// failure line, such as ": computed from data that had not landed"; "" when it tells nothing.
using ExplainWrongWord = std::function<std::string(std::uint32_t word)>;

/// One attempt at a batch exercise (chapters 03 to 05: each block copies batches of 32-bit words
/// into shared memory and smooths them there), for attempt_and_exit. The input is @p num_batches
/// batches of @p batch_elems words of a position-dependent pattern and the output is poisoned;
/// @p launch runs the student's kernel on them, and its launch and synchronisation are checked.
/// Word i of every output batch must be @p smooth of words i - 1, i and i + 1 of the same input
/// batch, taken as a ring (the first word's left neighbour is the batch's last word).
/// @return "" when every word is right; else one line about the first wrong word:
///         "<run>: element E (batch B) is 0x..., expected 0x...", then ": never written" when it
///         still holds the poison, or else what @p explain_wrong says of its value. @p run names
///         the run (e.g. "7 batches").
inline std::string attempt_smoothed_batches(const std::string& run, std::size_t num_batches, std::size_t batch_elems,
                                            SmoothFn smooth, const BatchLaunch& launch,
                                            const ExplainWrongWord& explain_wrong) {
  std::vector<std::uint32_t> in(num_batches * batch_elems);
  fill_pattern(in);
  DeviceBuffer<std::uint32_t> gmem_in(in.size());
  DeviceBuffer<std::uint32_t> gmem_out(in.size());
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(kPoisonByte);
  launch(gmem_in.data(), gmem_out.data());
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(in.size());
  gmem_out.download(out.data());
  for (std::size_t base = 0; base < in.size(); base += batch_elems) {
    for (std::size_t i = 0; i < batch_elems; ++i) {
      const std::uint32_t want = smooth(in[base + (i + batch_elems - 1) % batch_elems], in[base + i],
                                        in[base + (i + 1) % batch_elems]);
      const std::uint32_t got = out[base + i];
      if (got == want) continue;
      std::ostringstream line;
      line << run << ": element " << base + i << " (batch " << base / batch_elems << ") is 0x" << std::hex << got
           << ", expected 0x" << want << (got == poison_value<std::uint32_t>() ? ": never written" : explain_wrong(got));
      return line.str();
    }
  }
  return "";
}

}  // namespace course

/// Expects @p attempt_lambda (see course::attempt_and_exit) to succeed in a child process; when
/// it does not, the test fails and shows what the child printed: the wrong element, or the
/// bounded wait's diagnosis (barrier, stage and phase) when the kernel never got its data.
#define COURSE_EXPECT_ATTEMPT_RIGHT(attempt_lambda)                                                    \
  do {                                                                                                 \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                                    \
    const ::course::TrapLock course_trap_lock;                                                         \
    EXPECT_EXIT(::course::attempt_and_exit(attempt_lambda), ::testing::ExitedWithCode(0), "exercise: right") \
        << "the exercise's kernel did not produce the right result; what it printed is above";        \
  } while (0)
