// What cudaFuncSetAttribute does with a function that is not a kernel (docs/async_model.md,
// "The function must be a kernel"). The runtime declares it as a template over T*, so the
// compiler accepts any function pointer: a kernel, a host function, and even a __device__
// function, whose name in host code is a host stub that was never registered as a kernel.
// The rule is checked at run time, by the error code. Which code: the runtime's documentation
// lists cudaErrorInvalidDeviceFunction, but the same argument may also be a cudaKernel_t, and an
// address the runtime has not registered is taken for one; as a handle it is invalid, and CUDA
// 13.0 on an H100 (driver 580) answered cudaErrorInvalidResourceHandle. Either code is a refusal;
// success or any other code fails the test.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <utility>

#include "course/check.hpp"
#include "course/testing.hpp"

namespace {

constexpr int kDynamicBytes = 1024;  // well under the 48 KiB that needs no opt-in: a valid value

// The kernel writes one word so that a launch after the refused calls shows the context is intact.
__global__ void attribute_target_kernel(int* out) {
  extern __shared__ int smem_words[];
  smem_words[threadIdx.x] = static_cast<int>(threadIdx.x) + 1;
  __syncthreads();  // the word written by thread 0 is visible to thread 1
  if (threadIdx.x == 1) *out = smem_words[0] + smem_words[1];
}

/// [not_kernels]
// Not kernels: a __device__ function and a host function of the same signature. Both compile
// as the first argument of cudaFuncSetAttribute (a template over T*); the runtime refuses them.
__device__ void device_helper(int* out) { *out = 7; }
void host_helper(int* out) { *out = 7; }
/// [not_kernels]

// The two answers the runtime gives for a function that is not a kernel (see the top).
::testing::AssertionResult refuses_a_non_kernel(cudaError_t status) {
  if (status == cudaErrorInvalidResourceHandle || status == cudaErrorInvalidDeviceFunction) {
    return ::testing::AssertionSuccess() << cudaGetErrorName(status);
  }
  return ::testing::AssertionFailure() << "a function that is not a __global__ kernel must be refused with "
                                       << "cudaErrorInvalidResourceHandle or cudaErrorInvalidDeviceFunction; got "
                                       << cudaGetErrorName(status);
}

class Sm75_FuncSetAttribute : public course::GpuTest {
 protected:
  Sm75_FuncSetAttribute() : GpuTest({7, 5, false, "cudaFuncSetAttribute on a kernel"}) {}

  // The error of one call, and then what cudaGetLastError reports after it (clearing it).
  static std::pair<cudaError_t, cudaError_t> set_max_dynamic(void (*function)(int*)) {
    const cudaError_t status = cudaFuncSetAttribute(function, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    kDynamicBytes);
    return {status, cudaGetLastError()};
  }

  // The kernel still launches and computes after a refused call: the error was not sticky.
  static void expect_kernel_runs() {
    int* out = nullptr;
    COURSE_CHECK(cudaMalloc(&out, sizeof(int)));
    COURSE_CHECK(cudaMemset(out, 0, sizeof(int)));
    attribute_target_kernel<<<1, 2, kDynamicBytes>>>(out);
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    int result = 0;
    COURSE_CHECK(cudaMemcpy(&result, out, sizeof(int), cudaMemcpyDeviceToHost));
    COURSE_CHECK(cudaFree(out));
    EXPECT_EQ(result, 1 + 2);
  }
};

TEST_F(Sm75_FuncSetAttribute, AKernelTakesTheAttribute) {
  const auto [status, last] = set_max_dynamic(attribute_target_kernel);
  EXPECT_EQ(status, cudaSuccess) << cudaGetErrorName(status);
  EXPECT_EQ(last, cudaSuccess) << cudaGetErrorName(last);
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, attribute_target_kernel));
  EXPECT_EQ(attributes.maxDynamicSharedSizeBytes, kDynamicBytes);
  expect_kernel_runs();
}

TEST_F(Sm75_FuncSetAttribute, AHostFunctionIsRefused) {
  const auto [status, last] = set_max_dynamic(host_helper);
  EXPECT_TRUE(refuses_a_non_kernel(status));
  EXPECT_EQ(last, status) << "the refusal is also the last error until it is read";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "reading the last error clears it";
  cudaFuncAttributes attributes{};
  EXPECT_TRUE(refuses_a_non_kernel(cudaFuncGetAttributes(&attributes, host_helper)));
  EXPECT_TRUE(refuses_a_non_kernel(cudaFuncSetCacheConfig(host_helper, cudaFuncCachePreferL1)));
  (void)cudaGetLastError();
  expect_kernel_runs();
}

// In host code `device_helper` names a host stub that nvcc generates for every __device__
// function (its body only exits); the runtime knows no kernel at that address.
TEST_F(Sm75_FuncSetAttribute, ADeviceFunctionIsRefusedToo) {
  const auto [status, last] = set_max_dynamic(device_helper);
  EXPECT_TRUE(refuses_a_non_kernel(status));
  EXPECT_EQ(last, status) << "the refusal is also the last error until it is read";
  EXPECT_TRUE(refuses_a_non_kernel(
      cudaFuncSetAttribute(device_helper, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxL1)));
  (void)cudaGetLastError();
  expect_kernel_runs();
}

}  // namespace
