#include "course/chapter.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace {

course::Report sample() {
  course::Report report("demo", course::DeviceInfo{});
  report.add("fast", 4096, true, "all 1024 elements match");
  report.add("broken", 4096, false, "3 of 1024 elements differ (3 never written)");
  return report;
}

TEST(HostReport, FailureOfOneVariantFailsTheRun) {
  EXPECT_FALSE(sample().all_passed());
  course::Report empty("demo", course::DeviceInfo{});
  EXPECT_FALSE(empty.all_passed());  // a run that checked nothing did not pass
}

TEST(HostReport, CsvHasAHeaderAndOneLinePerVariant) {
  std::ostringstream out;
  sample().print(out, course::Format::csv);
  EXPECT_NE(out.str().find("chapter,variant,size_bytes,passed,median_ms,gbps,ratio_to_memcpy\n"), std::string::npos);
  EXPECT_NE(out.str().find("demo,fast,4096,1,,,\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("demo,broken,4096,0,,,\n"), std::string::npos) << out.str();
}

TEST(HostReport, JsonIsOneObject) {
  std::ostringstream out;
  sample().print(out, course::Format::json);
  const std::string json = out.str();
  EXPECT_EQ(json.front(), '{');
  EXPECT_NE(json.find("\"variant\":\"broken\",\"size_bytes\":4096,\"passed\":false"), std::string::npos) << json;
}

TEST(HostReport, TextMarksFailures) {
  std::ostringstream out;
  sample().print(out, course::Format::text);
  EXPECT_NE(out.str().find("FAIL"), std::string::npos);
}

course::Comparison compared(std::size_t mismatches) {
  course::Comparison c;
  c.count = 8;
  c.mismatches = mismatches;
  return c;
}

TEST(HostReport, CheckAndTimeSkipsUnselectedVariants) {
  course::Options opts;
  opts.variant = "other";
  course::Report report("demo", course::DeviceInfo{});
  bool verified = false;
  course::check_and_time(
      opts, report, "mine", [&] { return verified = true, compared(0); }, [] {}, 0);
  EXPECT_FALSE(verified);
  EXPECT_TRUE(report.rows().empty());
}

TEST(HostReport, CheckAndTimeNeverTimesAWrongResult) {
  course::Options opts;
  opts.bench = true;
  course::Report report("demo", course::DeviceInfo{});
  bool launched = false;
  course::check_and_time(
      opts, report, "mine", [] { return compared(3); }, [&] { launched = true; }, 64);
  ASSERT_EQ(report.rows().size(), 1u);
  EXPECT_FALSE(report.rows()[0].passed);
  EXPECT_FALSE(report.rows()[0].timed);
  EXPECT_FALSE(launched);
}

TEST(HostReport, CheckAndTimeWithoutBenchOnlyVerifies) {
  course::Options opts;
  course::Report report("demo", course::DeviceInfo{});
  bool launched = false;
  course::check_and_time(
      opts, report, "mine", [] { return compared(0); }, [&] { launched = true; }, 64);
  ASSERT_EQ(report.rows().size(), 1u);
  EXPECT_TRUE(report.rows()[0].passed);
  EXPECT_FALSE(launched);
}

TEST(HostReport, CheckAndTimeReportsTheRowSizeItIsGiven) {
  course::Options opts;
  opts.size_bytes = 1 << 20;
  course::Report report("demo", course::DeviceInfo{});
  course::check_and_time(
      opts, report, "sized", [] { return compared(0); }, [] {}, 64, std::size_t{4096});
  course::check_and_time(
      opts, report, "default", [] { return compared(0); }, [] {}, 64);
  ASSERT_EQ(report.rows().size(), 2u);
  EXPECT_EQ(report.rows()[0].size_bytes, 4096u);
  EXPECT_EQ(report.rows()[1].size_bytes, std::size_t{1} << 20);
}

}  // namespace
