// The bounded waits of course/wait.cuh on the GPU: a wait that completes returns normally;
// a wait that can never complete is reported (barrier, stage, phase) and trapped quickly.
#include "course/wait.cuh"

#include <gtest/gtest.h>

#include <cstdint>

#include "course/check.hpp"
#include "course/testing.hpp"

#pragma nv_diag_suppress static_var_with_dynamic_init

namespace {

using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// Every thread arrives; `missing` extra arrivals are expected but never come.
__global__ void token_wait_kernel(int missing, int* done) {
  __shared__ block_barrier bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x + missing);
  __syncthreads();
  course::bounded_wait(bar, bar.arrive(), {"all_threads", 0, 0});
  if (threadIdx.x == 0) atomicAdd(done, 1);
}

// One thread arrives on a raw mbarrier expecting one arrival; everyone waits for parity `parity`.
__global__ void parity_wait_kernel(std::uint32_t parity, int* done) {
  __shared__ std::uint64_t full_bar;
  if (threadIdx.x == 0) cuda::ptx::mbarrier_init(&full_bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) (void)cuda::ptx::mbarrier_arrive(&full_bar);
  course::bounded_wait_parity(&full_bar, parity, {"full", 3, parity});
  if (threadIdx.x == 0) atomicAdd(done, 1);
}

class Sm80_BoundedWait : public course::GpuTest {
 protected:
  Sm80_BoundedWait() : GpuTest({8, 0, false, "mbarrier parity waits"}) {}
  int run_token(int missing) {
    int* done = nullptr;
    COURSE_CHECK(cudaMallocManaged(&done, sizeof(int)));
    *done = 0;
    token_wait_kernel<<<4, 128>>>(missing, done);
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    const int result = *done;
    COURSE_CHECK(cudaFree(done));
    return result;
  }
};

TEST_F(Sm80_BoundedWait, CompletedTokenWaitReturns) { EXPECT_EQ(run_token(0), 4); }

TEST_F(Sm80_BoundedWait, CompletedParityWaitReturns) {
  int* done = nullptr;
  COURSE_CHECK(cudaMalloc(&done, sizeof(int)));
  COURSE_CHECK(cudaMemset(done, 0, sizeof(int)));
  parity_wait_kernel<<<2, 64>>>(0, done);  // phase 0 completes: parity 0 is done
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  int host = 0;
  COURSE_CHECK(cudaMemcpy(&host, done, sizeof(int), cudaMemcpyDeviceToHost));
  COURSE_CHECK(cudaFree(done));
  EXPECT_EQ(host, 2);
}

TEST_F(Sm80_BoundedWait, MissingArrivalIsDiagnosed) {
  auto launch_missing_arrival = [] { token_wait_kernel<<<4, 128>>>(1, nullptr); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch_missing_arrival(),
                               "bounded wait: gave up after [0-9]+ ms waiting on barrier 'all_threads', stage 0",
                               30.0);
}

TEST_F(Sm80_BoundedWait, WrongParityIsDiagnosed) {
  // Phase 1 never starts completing: waiting for parity 1 can never finish.
  auto launch_wrong_parity = [] { parity_wait_kernel<<<2, 64>>>(1, nullptr); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch_wrong_parity(),
                               "waiting on barrier 'full', stage 3, phase 1", 30.0);
}

TEST_F(Sm80_BoundedWait, TheProcessBoundIsTheOneApplied) {
  // This executable compiles a 500 ms bound; COURSE_WAIT_LIMIT_MS moves it to 2 s. The
  // diagnosis reports the time it waited, so a bound left at 500 ms shows as "after 5.. ms".
  auto launch_with_longer_bound = [] {
    setenv("COURSE_WAIT_LIMIT_MS", "2000", 1);
    course::detail::apply_wait_limit();
    parity_wait_kernel<<<2, 64>>>(1, nullptr);
  };
  COURSE_EXPECT_DIAGNOSED_HANG(launch_with_longer_bound(), "gave up after 2[0-9][0-9][0-9] ms waiting on barrier 'full'",
                               30.0);
}

}  // namespace
