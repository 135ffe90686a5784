/// @file
/// @brief How long a bounded device wait may take in this process (course/wait.cuh).
///
/// One place decides it. By default a wait gives up after the limit compiled into the program
/// (COURSE_WAIT_LIMIT_NS, 4 s: thousands of times any correct wait of the course). Under a tool
/// that injects itself into the process (compute-sanitizer and Nsight Compute set
/// CUDA_INJECTION64_PATH) kernels run orders of magnitude slower, so the bound becomes
/// kToolWaitLimitNs (120 s); the environment variable COURSE_WAIT_LIMIT_MS sets it outright.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace course {

/// The bound under compute-sanitizer or ncu: a real hang is still reported within 2 minutes.
constexpr unsigned long long kToolWaitLimitNs = 120'000'000'000ull;

/// Parses COURSE_WAIT_LIMIT_MS: a whole number of milliseconds from 1 to 3,600,000 (an hour).
inline std::optional<unsigned long long> parse_wait_limit_ms(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  unsigned long long ms = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || ms > 3'600'000ull) return std::nullopt;
    ms = ms * 10 + static_cast<unsigned long long>(*c - '0');
  }
  if (ms == 0 || ms > 3'600'000ull) return std::nullopt;
  return ms;
}

/// The bound for this process, given the compiled default @p compiled_ns and the environment
/// values of COURSE_WAIT_LIMIT_MS and CUDA_INJECTION64_PATH (null when unset). A malformed
/// COURSE_WAIT_LIMIT_MS is ignored (wait.cuh says so on stderr).
inline unsigned long long wait_limit_ns(unsigned long long compiled_ns, const char* limit_ms_env,
                                        const char* injection_env) {
  if (std::optional<unsigned long long> ms = parse_wait_limit_ms(limit_ms_env)) return *ms * 1'000'000ull;
  if (injection_env != nullptr && *injection_env != '\0' && compiled_ns < kToolWaitLimitNs) return kToolWaitLimitNs;
  return compiled_ns;
}

/// The same, reading this process's environment.
inline unsigned long long wait_limit_ns(unsigned long long compiled_ns) {
  return wait_limit_ns(compiled_ns, std::getenv("COURSE_WAIT_LIMIT_MS"), std::getenv("CUDA_INJECTION64_PATH"));
}

}  // namespace course
