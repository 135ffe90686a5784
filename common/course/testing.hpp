/// @file
/// @brief GoogleTest support: GPU fixtures that skip, in SetUp(), when the device lacks a feature;
/// the checks of a chapter's figure program (its committed figures and its command line).
///
/// Skipping has to happen in SetUp(): with GoogleTest 1.12 a GTEST_SKIP() in
/// SetUpTestSuite() does not stop the test bodies from running.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/device.hpp"
#include "course/device_setup.hpp"
#include "course/figures.hpp"
#include "course/in_flight.hpp"

namespace course {

/// Base fixture for GPU tests: derive and pass the chapter's Requirement.
class GpuTest : public ::testing::Test {
 protected:
  explicit GpuTest(Requirement requirement) : requirement_(requirement) {}
  void SetUp() override {
    static const DeviceInfo device = query_device();
    if (auto missing = unmet_requirement(requirement_, device)) GTEST_SKIP() << *missing;
    device_ = device;
    run_device_setups();
  }
  const DeviceInfo& device() const { return device_; }

 private:
  Requirement requirement_;
  DeviceInfo device_;
};

/// For a death test's child process: sends device `printf` output (stdout) to stderr, where
/// the death test reads it, runs @p launch, synchronises and exits 1 naming the CUDA error,
/// or 0 if the kernel finished.
/// If the driver has not answered the synchronisation after this many seconds, the child gives
/// up and says so: a stuck test fails with a reason long before the CTest timeout.
constexpr int kSynchronizeAnswerSeconds = 60;

template <class Launch>
[[noreturn]] void run_and_exit(Launch&& launch) {
  std::fflush(stdout);
  dup2(2, 1);
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(kSynchronizeAnswerSeconds));
    std::fprintf(stderr, "synchronize: no answer from the driver after %d s\n", kSynchronizeAnswerSeconds);
    std::fflush(stderr);
    std::_Exit(3);
  }).detach();
  launch();
  const cudaError_t status = cudaDeviceSynchronize();
  std::fprintf(stderr, "synchronize: %s\n", cudaGetErrorName(status));
  std::fflush(stderr);
  std::_Exit(status == cudaSuccess ? 0 : 1);
}

/// Held by a test whose kernel is meant to end in a trap (a death test), for as long as the
/// test runs: an exclusive lock on one file in the temporary directory, shared by every test
/// process of the course, so that such kernels never run at the same time in several processes.
/// On an H100, with four of them started together by `ctest -j4`, one test process now and then
/// never returned from its synchronisation.
class TrapLock {
 public:
  TrapLock() {
    // The death test's child runs the test body again, inside the parent's lock: it must not wait.
    if (!GTEST_FLAG_GET(internal_run_death_test).empty()) return;
    std::error_code error;
    const std::filesystem::path path = std::filesystem::temp_directory_path(error) / "course_gpu_trap.lock";
    fd_ = error ? -1 : open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) {
      close(fd_);
      fd_ = -1;  // no lock: the test still runs, as it would on its own
    }
  }
  ~TrapLock() {
    if (fd_ >= 0) close(fd_);  // closing the descriptor releases the lock
  }
  TrapLock(const TrapLock&) = delete;
  TrapLock& operator=(const TrapLock&) = delete;

 private:
  int fd_ = -1;
};

/// The whole text of @p path, or "" when it cannot be read.
inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Whether each figure's committed file in @p dir (a chapter's `figures/` folder) is its drawing,
/// byte for byte; if not, the file, its first differing line, and the command that regenerates
/// the chapter's figures (`build/<chapter>/<program> <chapter>/figures`).
inline ::testing::AssertionResult figures_are_fresh(const std::string& program,
                                                    const std::vector<Figure>& figures,
                                                    const std::filesystem::path& dir) {
  const std::string chapter = dir.parent_path().filename().string();
  const std::string regenerate =
      "; regenerate: build/" + chapter + "/" + program + " " + chapter + "/figures";
  for (const Figure& figure : figures) {
    const std::string path = (dir / figure.file).string();
    std::ifstream file(path, std::ios::binary);
    if (!file) return ::testing::AssertionFailure() << "cannot read " << path << regenerate;
    std::ostringstream committed;
    committed << file.rdbuf();
    const std::string difference = first_differing_line(committed.str(), figure.draw());
    if (!difference.empty()) {
      return ::testing::AssertionFailure() << path << " is not its drawing at " << difference
                                           << regenerate;
    }
  }
  return ::testing::AssertionSuccess();
}

/// A figure program's command line, through figures_main(): --help and -h print the usage, which
/// names every file; a bad command line exits 2 and a missing folder 1, each saying so in one
/// line; then the program writes every figure, as drawn, into a new folder.
inline ::testing::AssertionResult figures_program_works(const std::string& program,
                                                        const std::vector<Figure>& figures) {
  struct Run {
    int code;
    std::string out, err;
  };
  const auto run = [&](const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = figures_main(program, figures, args, out, err);
    return Run{code, out.str(), err.str()};
  };
  const auto fail = [](const std::string& what, const Run& r) {
    return ::testing::AssertionFailure() << what << ": exit " << r.code << ", out `" << r.out
                                         << "`, err `" << r.err << "`";
  };
  const auto one_line = [](const std::string& text, const std::string& start) {
    return text.rfind(start, 0) == 0 && std::count(text.begin(), text.end(), '\n') == 1;
  };
  for (const char* help : {"--help", "-h"}) {
    const Run r = run({help});
    if (r.code != 0 || r.out.rfind("usage: " + program + " DIR\n", 0) != 0 || !r.err.empty()) {
      return fail(help, r);
    }
    for (const Figure& figure : figures) {
      if (r.out.find("DIR/" + figure.file) == std::string::npos) return fail(help, r);
    }
  }
  const Run option = run({"--output=x"});
  if (option.code != 2 || !option.out.empty() ||
      !one_line(option.err, program + ": unknown option '--output=x'")) {
    return fail("--output=x", option);
  }
  for (const std::vector<std::string>& args : {std::vector<std::string>{}, {"a", "b"}}) {
    const Run r = run(args);
    if (r.code != 2 || r.err.rfind(program + ": expected one argument", 0) != 0) {
      return fail(std::to_string(args.size()) + " arguments", r);
    }
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (program + "_test." + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const Run missing = run({dir.string()});
  if (missing.code != 1 || !one_line(missing.err, program + ": no folder '" + dir.string() + "'") ||
      std::filesystem::exists(dir)) {
    return fail("a missing folder", missing);
  }
  std::filesystem::create_directories(dir);
  const Run written = run({dir.string()});
  std::string problem = written.code == 0 ? "" : "exit " + std::to_string(written.code);
  for (const Figure& figure : figures) {
    const std::string path = (dir / figure.file).string();
    const std::string difference = first_differing_line(read_text_file(path), figure.draw());
    if (problem.empty() && !difference.empty()) problem = path + ": " + difference;
    if (problem.empty() && written.out.find("wrote " + path + "\n") == std::string::npos) {
      problem = "no 'wrote " + path + "'";
    }
  }
  std::filesystem::remove_all(dir);
  if (!problem.empty()) return fail("writing into " + dir.string() + ": " + problem, written);
  return ::testing::AssertionSuccess();
}

/// A lesson's launch keeps at least the bytes in flight per SM that Little's law asks of this GPU
/// (course/in_flight.hpp): its stages are not tuned to one GPU's bandwidth.
inline void expect_enough_in_flight(const InFlightLaunch& launch, const DeviceInfo& device) {
  const InFlightNeed need = in_flight_need(device);
  const KeptInFlight kept = kept_in_flight(launch);
  EXPECT_GT(need.per_sm_bytes, 0) << "the device reported no memory clock or bus width";
  EXPECT_GE(kept.per_sm_bytes, need.per_sm_bytes) << in_flight_line(need, kept);
}

}  // namespace course

/// Expects @p launch_statement (which launches a deliberately broken kernel) to be stopped
/// by a bounded wait (course/wait.cuh): the child process fails with a diagnosis that matches
/// @p diagnosis_regex, and it does so within @p seconds, not by hanging until a timeout.
/// Runs in a re-executed child ("threadsafe" death tests), so the trapped CUDA context
/// never touches the test process. Launch through a function or lambda: the commas inside
/// `<<<grid, block>>>` would split the macro's arguments.
#define COURSE_EXPECT_DIAGNOSED_HANG(launch_statement, diagnosis_regex, seconds)                       \
  do {                                                                                                 \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                                    \
    const ::course::TrapLock course_trap_lock;                                                         \
    const auto course_started = std::chrono::steady_clock::now();                                      \
    EXPECT_EXIT(::course::run_and_exit([&] { launch_statement; }), ::testing::ExitedWithCode(1),      \
                diagnosis_regex);                                                                      \
    const double course_elapsed =                                                                      \
        std::chrono::duration<double>(std::chrono::steady_clock::now() - course_started).count();     \
    EXPECT_LT(course_elapsed, (seconds)) << "the broken kernel was not stopped in time";              \
  } while (0)

#include "course/codegen.hpp"  // the PTX and SASS readers of codegen tests
