#include "course/wait_limit.hpp"
#include "course/device_setup.hpp"

#include <gtest/gtest.h>

namespace {

constexpr unsigned long long kCompiled = 4'000'000'000ull;

TEST(HostWaitLimit, CompiledDefaultWithoutTools) {
  EXPECT_EQ(course::wait_limit_ns(kCompiled, nullptr, nullptr), kCompiled);
  EXPECT_EQ(course::wait_limit_ns(kCompiled, "", ""), kCompiled);
}

TEST(HostWaitLimit, InjectedToolsGetTheLongBound) {
  EXPECT_EQ(course::wait_limit_ns(kCompiled, nullptr, "/opt/sanitizer/libInterceptorInjectionTarget.so"),
            course::kToolWaitLimitNs);
  // A bound compiled longer than the tool bound is never shortened.
  EXPECT_EQ(course::wait_limit_ns(2 * course::kToolWaitLimitNs, nullptr, "x"), 2 * course::kToolWaitLimitNs);
}

TEST(HostWaitLimit, EnvironmentSetsItOutright) {
  EXPECT_EQ(course::wait_limit_ns(kCompiled, "250", nullptr), 250'000'000ull);
  EXPECT_EQ(course::wait_limit_ns(kCompiled, "250", "x"), 250'000'000ull);
}

TEST(HostWaitLimit, MalformedValuesAreIgnored) {
  for (const char* bad : {"0", "-5", "12ms", "1.5", "3600001", "99999999999999999999999"}) {
    EXPECT_FALSE(course::parse_wait_limit_ms(bad)) << bad;
    EXPECT_EQ(course::wait_limit_ns(kCompiled, bad, nullptr), kCompiled) << bad;
  }
  EXPECT_EQ(*course::parse_wait_limit_ms("3600000"), 3'600'000ull);
}

int calls = 0;
void count_call() { ++calls; }

TEST(HostDeviceSetup, RunsEachRegisteredSetupOnce) {
  course::device_setups().push_back(&count_call);
  course::run_device_setups();
  course::run_device_setups();
  EXPECT_EQ(calls, 1);
}

}  // namespace
