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
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/bandwidth.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/device.hpp"
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
///         the run (e.g. "7 batches"). With @p guard_elems, the output buffer is that many words
///         longer and poisoned; a word of that guard band that lost its poison is named too.
inline std::string attempt_smoothed_batches(const std::string& run, std::size_t num_batches, std::size_t batch_elems,
                                            SmoothFn smooth, const BatchLaunch& launch,
                                            const ExplainWrongWord& explain_wrong, std::size_t guard_elems = 0) {
  std::vector<std::uint32_t> in(num_batches * batch_elems);
  fill_pattern(in);
  DeviceBuffer<std::uint32_t> gmem_in(in.size());
  DeviceBuffer<std::uint32_t> gmem_out(in.size() + guard_elems);
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(kPoisonByte);
  launch(gmem_in.data(), gmem_out.data());
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(in.size() + guard_elems);
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
  for (std::size_t g = 0; g < guard_elems; ++g) {
    if (out[in.size() + g] != poison_value<std::uint32_t>()) {
      return run + ": word " + std::to_string(g) + " after the output (past the last batch) was overwritten";
    }
  }
  return "";
}

/// How an assignment's speed is measured: the median of this many timed launches (after three
/// untimed ones), against the median of as many `cudaMemcpy` device-to-device copies of the same
/// bytes in the same process.
constexpr int kSpeedIters = 20;

/// An assignment's kernel timed against `cudaMemcpy` device-to-device of the same bytes.
struct SpeedMeasure {
  double ratio = 0;        ///< memcpy's median time over the kernel's: 1.0 is copy speed
  double kernel_gbps = 0;  ///< bytes read plus bytes written per second, 10^9
  double memcpy_gbps = 0;
  std::size_t num_bytes = 0;
  std::string device;
};

/// Times @p launch (it reads @p num_bytes and writes @p num_bytes) and `cudaMemcpy` of
/// @p num_bytes, kSpeedIters times each, on device 0.
template <class Launch>
SpeedMeasure measure_speed(std::size_t num_bytes, Launch&& launch) {
  SpeedMeasure speed;
  speed.num_bytes = num_bytes;
  speed.device = query_device().name;
  const Bandwidth kernel = measure_bandwidth(launch, 2 * num_bytes, kSpeedIters);
  const Bandwidth memcpy = measure_memcpy_d2d(num_bytes, kSpeedIters);
  speed.kernel_gbps = kernel.gbps;
  speed.memcpy_gbps = memcpy.gbps;
  speed.ratio = kernel.ms > 0 ? memcpy.ms / kernel.ms : 0.0;
  return speed;
}

/// One line for the student, such as "0.934x cudaMemcpy device-to-device on NVIDIA H200
/// (4015 of 4299 GB/s over 512 MiB; the floor is 0.90x)".
inline std::string speed_sentence(const SpeedMeasure& speed, double floor) {
  std::ostringstream line;
  line << std::fixed << std::setprecision(3) << speed.ratio << "x cudaMemcpy device-to-device on " << speed.device
       << " (" << std::setprecision(0) << speed.kernel_gbps << " of " << speed.memcpy_gbps << " GB/s over "
       << speed.num_bytes / (1024 * 1024) << " MiB; the floor is " << std::setprecision(2) << floor << "x)";
  return line.str();
}

/// Where a speed check's child process leaves its sentence for the test process to report:
/// a file named after the running test, in the working folder (both processes run the same test
/// in the same folder, so both name the same file).
inline std::string speed_record_path() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string("speed_") + test->test_suite_name() + "." + test->name() + ".txt";
}

/// The attempt of a speed check (for attempt_and_exit): @p check_once launches the assignment's
/// kernel once on its own input and returns "" when the output is right (a wrong kernel is not
/// timed); then @p launch is timed by measure_speed over @p num_bytes. The speed sentence goes to
/// speed_record_path() and to stderr.
/// @return "" when the ratio is at least @p floor; else a sentence naming the ratio, the floor
///         and @p hint (what usually makes the difference).
template <class CheckOnce, class Launch>
std::string attempt_speed(std::size_t num_bytes, double floor, const std::string& hint, CheckOnce&& check_once,
                          Launch&& launch) {
  const std::string problem = check_once();
  if (!problem.empty()) return "before timing it, the kernel's output was checked: " + problem;
  const SpeedMeasure speed = measure_speed(num_bytes, launch);
  const std::string sentence = speed_sentence(speed, floor);
  std::ofstream(speed_record_path()) << sentence << "\n";
  std::fprintf(stderr, "speed: %s\n", sentence.c_str());
  if (speed.ratio >= floor) return "";
  std::ostringstream line;
  line << "your kernel is right but slow: it runs at " << std::fixed << std::setprecision(3) << speed.ratio
       << "x the speed of cudaMemcpy device-to-device on this GPU, and the assignment asks for at least "
       << std::setprecision(2) << floor << "x; " << hint;
  return line.str();
}

/// Reports the speed sentence a speed check's child left (see attempt_speed): as the test's
/// property "speed" (scripts/exercise.py prints it) and on stdout; then removes the file.
inline void report_speed_record() {
  const std::string path = speed_record_path();
  std::ifstream file(path);
  std::string sentence;
  if (file && std::getline(file, sentence) && !sentence.empty()) {
    ::testing::Test::RecordProperty("speed", sentence);
    std::printf("speed: %s\n", sentence.c_str());
  }
  file.close();
  std::remove(path.c_str());
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

/// Expects a speed check (an @p attempt_lambda that returns course::attempt_speed(...)) to pass in
/// a child process: the kernel right, then at least its floor times cudaMemcpy's speed. The
/// measured ratio is reported either way (course::report_speed_record).
#define COURSE_EXPECT_FAST_ENOUGH(attempt_lambda)                                                      \
  do {                                                                                                 \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                                    \
    std::remove(::course::speed_record_path().c_str());                                                \
    {                                                                                                  \
      const ::course::TrapLock course_trap_lock;                                                       \
      EXPECT_EXIT(::course::attempt_and_exit(attempt_lambda), ::testing::ExitedWithCode(0), "exercise: right") \
          << "the assignment's kernel is wrong or below its speed floor; what it printed is above";    \
    }                                                                                                  \
    ::course::report_speed_record();                                                                   \
  } while (0)
