/// @file
/// @brief For the tests of the graded exercises (NN_topic/exercises): run a student's GPU code in
/// a child process, so that a kernel stopped by a bounded wait (a trap) fails one test with its
/// diagnosis instead of breaking the CUDA context of every test after it.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "course/testing.hpp"

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
