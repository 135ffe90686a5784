#include "course/check.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(HostCheck, RuntimeErrorCarriesFileLineExpressionAndName) {
  try {
    COURSE_CHECK(cudaErrorInvalidValue);
    FAIL() << "COURSE_CHECK did not throw";
  } catch (const course::CudaError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("check_test.cpp:"), std::string::npos) << text;
    EXPECT_NE(text.find("cudaErrorInvalidValue ->"), std::string::npos) << text;  // the expression
    EXPECT_NE(text.find("-> cudaErrorInvalidValue: invalid argument"), std::string::npos) << text;
  }
}

TEST(HostCheck, DriverErrorIsNamed) {
  try {
    COURSE_CHECK(CUDA_ERROR_INVALID_VALUE);
    FAIL() << "COURSE_CHECK did not throw";
  } catch (const course::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("-> CUDA_ERROR_INVALID_VALUE"), std::string::npos) << error.what();
  }
}

TEST(HostCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(COURSE_CHECK(cudaSuccess));
  EXPECT_NO_THROW(COURSE_CHECK(CUDA_SUCCESS));
}

TEST(HostCheck, UnknownDriverCodeFallsBackToNumber) {
  EXPECT_NE(course::driver_error_name(static_cast<CUresult>(123456)).find("123456"), std::string::npos);
}

}  // namespace
