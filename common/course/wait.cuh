/// @file
/// @brief Bounded device-side waits: a wait that can never finish is diagnosed, never a hang.
///
/// A wrong arrival count, byte count or parity leaves a barrier wait spinning
/// forever. These waits behave like the library's own (`bar.wait(token)`,
/// `bar.wait_parity(p)`, `mbarrier.try_wait.parity`, `pipeline.consumer_wait()`)
/// until the process's wait limit has passed (course/wait_limit.hpp: COURSE_WAIT_LIMIT_NS,
/// 4 s by default, 120 s under compute-sanitizer or ncu); then the first stuck thread of the
/// grid fails a device-side assertion whose message names the barrier, stage and phase it
/// was waiting on. The driver prints that message and the host sees `cudaErrorAssert` at
/// its next synchronisation.
///
/// This is safety scaffolding, not subject matter: chapters call these exactly where
/// they would call the plain wait, so the wait stays visible in the kernel.
#pragma once

#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>
#include <cuda/std/chrono>
#include <nv/target>

#include <assert.h>

#include <cstdint>
#include <cstdio>

#include "course/check.hpp"
#include "course/device_setup.hpp"
#include "course/wait_limit.hpp"

/// How long a wait may take before it is declared stuck, unless the process sets another bound
/// (course/wait_limit.hpp): 4 s, thousands of times any correct wait in this course.
#ifndef COURSE_WAIT_LIMIT_NS
#define COURSE_WAIT_LIMIT_NS 4000000000ull
#endif

namespace course {

/// Where a wait happens, for the diagnosis: the barrier's name, the pipeline stage
/// (or -1) and the phase (or parity) being waited for.
struct WaitSite {
  const char* barrier;
  int stage;
  unsigned phase;
};

namespace detail {

__device__ inline unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Set per process below. Constant memory: reading it is an ld.const, so no kernel that waits
// gains a global load (chapters check that their copies never go through registers).
static __constant__ unsigned long long wait_limit = COURSE_WAIT_LIMIT_NS;
static __device__ int wait_reported = 0;       // the first stuck thread of the grid reports
static __device__ char wait_report[320];        // its message, read by the driver on the assert

// Appends text and unsigned numbers to wait_report (device code has no snprintf).
struct ReportWriter {
  int length = 0;
  __device__ void put(const char* text) {
    while (*text != '\0' && length < static_cast<int>(sizeof(wait_report)) - 1) wait_report[length++] = *text++;
    wait_report[length] = '\0';
  }
  __device__ void put(unsigned long long value) {
    char digits[24];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    char text[24];
    for (int i = 0; i < count; ++i) text[i] = digits[count - 1 - i];
    text[count] = '\0';
    put(text);
  }
};

// Device printf output is lost when a kernel traps; an assertion's message is not: the
// driver prints it when it reports the failed launch. The first stuck thread formats the
// diagnosis and fails an assertion with it; the others wait for the grid to be stopped.
// The site is passed by value, here and in spin_bounded: taken by reference, its address
// escapes into this never-inlined call, so every kernel that waits kept a copy of the site
// in local memory and stored it (16 bytes per thread) on its way out, once per block,
// whether or not a wait ever failed: a cost that grew with the number of blocks.
__device__ __noinline__ inline void give_up(WaitSite site, unsigned long long waited_ns) {
  if (atomicCAS(&wait_reported, 0, 1) == 0) {
    ReportWriter w;
    w.put("bounded wait: gave up after ");
    w.put(waited_ns / 1000000ull);
    w.put(" ms waiting on barrier '");
    w.put(site.barrier);
    w.put("', stage ");
    if (site.stage < 0) {
      w.put("-");
    } else {
      w.put(static_cast<unsigned long long>(site.stage));
    }
    w.put(", phase ");
    w.put(static_cast<unsigned long long>(site.phase));
    w.put(": an arrival count, transaction byte count or parity is wrong");
    __threadfence();
#if defined(__GNUC__) || defined(__clang__)
    __assert_fail(wait_report, __FILE__, __LINE__, "course::bounded_wait");  // the device's assert()
#else
    __trap();  // other host compilers: the launch still fails, without the message
#endif
  }
  for (;;) __nanosleep(1000000);  // the assertion above ends the grid
}

// Calls `ready()` until it returns true or the limit has passed.
template <class Ready>
__device__ void spin_bounded(Ready&& ready, WaitSite site) {  // by value: see give_up
  if (ready()) return;
  const unsigned long long start = globaltimer_ns();
  while (!ready()) {
    const unsigned long long waited = globaltimer_ns() - start;
    if (waited > wait_limit) give_up(site, waited);
  }
}

// Host: gives this program's kernels the process's bound, when it is not the compiled one.
inline void apply_wait_limit() {
  const unsigned long long limit = wait_limit_ns(COURSE_WAIT_LIMIT_NS);
  const char* env = std::getenv("COURSE_WAIT_LIMIT_MS");
  if (env != nullptr && !parse_wait_limit_ms(env)) {
    std::fprintf(stderr, "note: COURSE_WAIT_LIMIT_MS='%.40s' ignored: it takes whole milliseconds, 1 to 3600000\n", env);
  }
  if (limit != COURSE_WAIT_LIMIT_NS) COURSE_CHECK(cudaMemcpyToSymbol(wait_limit, &limit, sizeof limit));
}
static const RegisterDeviceSetup register_wait_limit(&apply_wait_limit);

}  // namespace detail

/// For a lesson that writes its own bounded wait loop (chapter 10's cluster-scope wait): the
/// clock the course's waits use, in nanoseconds, and the check that, once a wait has lasted
/// longer than the process's limit, reports the site (first stuck thread of the grid) and traps.
__device__ inline unsigned long long wait_clock_ns() { return detail::globaltimer_ns(); }
__device__ inline void give_up_if_stuck(WaitSite site, unsigned long long waited_ns) {  // by value: see give_up
  if (waited_ns > detail::wait_limit) detail::give_up(site, waited_ns);
}

// The library's timed waits (try_wait_for, try_wait_parity_for) read an uninitialised elapsed
// time on their first pass in the CCCL that CUDA 13.0 ships, so the suspend hint they pass to
// mbarrier.try_wait would be garbage. With a zero duration they make one plain try_wait (the
// hardware still suspends the thread for a while), and the loop here keeps the time.
__device__ inline cuda::std::chrono::nanoseconds one_poll() { return cuda::std::chrono::nanoseconds(0); }

/// `bar.wait(std::move(token))`, bounded.
template <class Barrier>
__device__ void bounded_wait(Barrier& bar, typename Barrier::arrival_token&& token, const WaitSite& site) {
  const typename Barrier::arrival_token kept = token;
  detail::spin_bounded(
      [&] {
        typename Barrier::arrival_token attempt = kept;
        return bar.try_wait_for(cuda::std::move(attempt), one_poll());
      },
      site);
}

/// `bar.wait_parity(parity)`, bounded: waits for the completion of the phase with that parity.
template <class Barrier>
__device__ void bounded_wait_parity(Barrier& bar, bool parity, const WaitSite& site) {
  detail::spin_bounded([&] { return bar.try_wait_parity_for(parity, one_poll()); }, site);
}

/// A raw mbarrier (a `uint64_t` in shared memory) waited on by phase parity, bounded.
__device__ inline void bounded_wait_parity(std::uint64_t* mbar, std::uint32_t parity, const WaitSite& site) {
  detail::spin_bounded(
      [&] {
        NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90, (return cuda::ptx::mbarrier_try_wait_parity(mbar, parity);),
                          (return cuda::ptx::mbarrier_test_wait_parity(mbar, parity);))
      },
      site);
}

/// [cluster_wait]
/// A raw mbarrier of this block waited on by phase parity with *cluster*-scope acquire,
/// bounded (compute capability 9.0). For barriers whose phases other blocks of the cluster
/// complete: their remote arrivals and the complete-tx of their st.async or multicast copies
/// release at cluster scope, and the default CTA-scope acquire does not pair with that.
/// Chapter 10 explains it.
__device__ inline void bounded_wait_parity(std::uint64_t* mbar, std::uint32_t parity, const WaitSite& site,
                                           cuda::ptx::scope_cluster_t) {
  detail::spin_bounded(
      [&] {
        NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90,
                          (return cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster,
                                                                      mbar, parity);),
                          (__trap(); return false;))  // clusters need compute capability 9.0
      },
      site);
}
/// [cluster_wait]

/// `pipe.consumer_wait()`, bounded.
template <class Pipeline>
__device__ void bounded_consumer_wait(Pipeline& pipe, const WaitSite& site) {
  detail::spin_bounded([&] { return pipe.consumer_wait_for(cuda::std::chrono::microseconds(20)); }, site);
}

}  // namespace course
