#include "course/device.hpp"

#include <gtest/gtest.h>

namespace {

course::DeviceInfo gpu(int major, int minor) {
  course::DeviceInfo d;
  d.present = true;
  d.name = "Test GPU";
  d.major = major;
  d.minor = minor;
  return d;
}

TEST(HostDevice, MinimumCapabilityIsEnough) {
  const course::Requirement tma{9, 0, false, "cp.async.bulk"};
  EXPECT_FALSE(course::unmet_requirement(tma, gpu(9, 0)));
  EXPECT_FALSE(course::unmet_requirement(tma, gpu(10, 0)));
  const auto missing = course::unmet_requirement(tma, gpu(8, 6));
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "needs compute capability 9.0 for cp.async.bulk; found 8.6 (Test GPU)");
}

TEST(HostDevice, ArchSpecificNeedsTheExactArchitecture) {
  const course::Requirement multicast{9, 0, true, "TMA multicast"};
  EXPECT_FALSE(course::unmet_requirement(multicast, gpu(9, 0)));
  const auto missing = course::unmet_requirement(multicast, gpu(10, 0));
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->find("exactly"), std::string::npos) << *missing;
  EXPECT_NE(missing->find("sm_90a"), std::string::npos) << *missing;
}

TEST(HostDevice, NoDeviceGivesTheReason) {
  course::DeviceInfo none;
  none.absent_reason = "no CUDA device present";
  EXPECT_EQ(*course::unmet_requirement({8, 0, false, "cp.async"}, none),
            "needs a GPU of compute capability 8.0 or newer for cp.async; no CUDA device present");
  EXPECT_EQ(*course::unmet_requirement({9, 0, true, "multicast"}, none),
            "needs a GPU of compute capability 9.0 exactly for multicast; no CUDA device present");
}

TEST(HostDevice, QueryNeverThrows) {
  const course::DeviceInfo d = course::query_device();
  EXPECT_TRUE(d.present || !d.absent_reason.empty());
  EXPECT_GT(d.runtime_version, 0);
}

TEST(HostDevice, VersionsRead) { EXPECT_EQ(course::version_string(13000), "13.0"); }

}  // namespace
