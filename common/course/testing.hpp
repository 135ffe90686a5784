/// @file
/// @brief GoogleTest support: GPU fixtures that skip, in SetUp(), when the device lacks a feature.
///
/// Skipping has to happen in SetUp(): with GoogleTest 1.12 a GTEST_SKIP() in
/// SetUpTestSuite() does not stop the test bodies from running.
#pragma once

#include <gtest/gtest.h>

#include "course/device.hpp"

namespace course {

/// Base fixture for GPU tests: derive and pass the chapter's Requirement.
class GpuTest : public ::testing::Test {
 protected:
  explicit GpuTest(Requirement requirement) : requirement_(requirement) {}
  void SetUp() override {
    static const DeviceInfo device = query_device();
    if (auto missing = unmet_requirement(requirement_, device)) GTEST_SKIP() << *missing;
    device_ = device;
  }
  const DeviceInfo& device() const { return device_; }

 private:
  Requirement requirement_;
  DeviceInfo device_;
};

}  // namespace course
