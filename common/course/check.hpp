/// @file
/// @brief Error checks for CUDA runtime (`cudaError_t`) and driver (`CUresult`) calls.
///
/// `COURSE_CHECK(expr)` evaluates a call and throws course::CudaError carrying
/// `<path>:<line>: expression -> ERROR_NAME: message` when it did not succeed.
/// The driver API is never linked: names of `CUresult` codes come from the
/// driver's own `cuGetErrorName` when a driver is loaded, from a small table
/// otherwise.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace course {

/// Thrown by COURSE_CHECK when a CUDA call fails.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Name of a driver API result, e.g. "CUDA_ERROR_INVALID_VALUE".
inline std::string driver_error_name(CUresult code) {
  using GetName = CUresult (*)(CUresult, const char**);
  static GetName get_name = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuGetErrorName", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // no driver: forget the error and fall back to the table below
      fn = nullptr;
    }
    return reinterpret_cast<GetName>(fn);
  }();
  const char* name = nullptr;
  if (get_name != nullptr && get_name(code, &name) == CUDA_SUCCESS && name != nullptr) return name;
  switch (code) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    default: return "CUresult " + std::to_string(static_cast<int>(code));
  }
}

namespace detail {

inline std::string failure_text(const char* file, int line, const char* expr, const std::string& name,
                                const std::string& message) {
  std::ostringstream out;
  out << file << ':' << line << ": " << expr << " -> " << name;
  if (!message.empty()) out << ": " << message;
  return out.str();
}

}  // namespace detail

/// Throws CudaError unless @p code is cudaSuccess.
inline void check(cudaError_t code, const char* expr, const char* file, int line) {
  if (code == cudaSuccess) return;
  throw CudaError(detail::failure_text(file, line, expr, cudaGetErrorName(code), cudaGetErrorString(code)));
}

/// Throws CudaError unless @p code is CUDA_SUCCESS.
inline void check(CUresult code, const char* expr, const char* file, int line) {
  if (code == CUDA_SUCCESS) return;
  throw CudaError(detail::failure_text(file, line, expr, driver_error_name(code), ""));
}

}  // namespace course

/// Checks a `cudaError_t` or `CUresult` expression; throws course::CudaError on failure.
#define COURSE_CHECK(expr) ::course::check((expr), #expr, __FILE__, __LINE__)

/// Checks the launch just made (`cudaGetLastError`): bad configuration, missing kernel image.
#define COURSE_CHECK_LAUNCH() ::course::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
