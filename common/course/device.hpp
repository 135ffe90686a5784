/// @file
/// @brief Device queries and requirement gating: does this GPU have what a chapter needs?
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <sstream>
#include <string>

namespace course {

/// What a chapter or test needs from the GPU.
struct Requirement {
  int major = 0;               ///< minimum compute capability, major part
  int minor = 0;               ///< minimum compute capability, minor part
  bool arch_specific = false;  ///< built for an `sm_XXa` target: runs only on exactly major.minor
  const char* feature = "";    ///< what needs it, e.g. "cp.async (LDGSTS)"
};

/// The properties of device 0 that the course looks at.
struct DeviceInfo {
  bool present = false;
  std::string absent_reason;  ///< why no device could be used (when !present)
  std::string name;
  int major = 0;
  int minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t smem_per_block_optin = 0;
  int sm_clock_mhz = 0;
  int mem_clock_mhz = 0;
  int mem_bus_bits = 0;  ///< width of the device-memory interface
  int driver_version = 0;
  int runtime_version = 0;
};

/// Queries device 0. Never throws: a machine without a GPU or driver gives `present == false`.
inline DeviceInfo query_device() {
  DeviceInfo info;
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();
    if (info.driver_version == 0) {
      info.absent_reason = "no CUDA device present (no CUDA driver is installed on this machine)";
    } else if (status == cudaSuccess || status == cudaErrorNoDevice) {
      info.absent_reason = "no CUDA device present";
    } else {
      info.absent_reason = std::string("no usable CUDA device (") + cudaGetErrorName(status) + ": " +
                           cudaGetErrorString(status) + ")";
    }
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    info.absent_reason = "cudaGetDeviceProperties failed for device 0";
    return info;
  }
  info.present = true;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) info.sm_clock_mhz = khz / 1000;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) info.mem_clock_mhz = khz / 1000;
  if (cudaDeviceGetAttribute(&info.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess) info.mem_bus_bits = 0;
  cudaGetLastError();
  return info;
}

/// Why @p device cannot run code that needs @p req, or nothing when it can.
/// Example: "needs compute capability 9.0 for cp.async.bulk; found 8.6".
inline std::optional<std::string> unmet_requirement(const Requirement& req, const DeviceInfo& device) {
  const int need = req.major * 10 + req.minor;
  if (!device.present) {  // say what it would need, then why there is nothing to run it on
    std::ostringstream out;
    out << "needs a GPU of compute capability " << req.major << '.' << req.minor
        << (req.arch_specific ? " exactly" : " or newer") << " for " << req.feature << "; "
        << device.absent_reason;
    return out.str();
  }
  const int have = device.major * 10 + device.minor;
  const bool ok = req.arch_specific ? have == need : have >= need;
  if (ok) return std::nullopt;
  std::ostringstream out;
  out << "needs compute capability " << req.major << '.' << req.minor << (req.arch_specific ? " exactly" : "")
      << " for " << req.feature << "; found " << device.major << '.' << device.minor << " (" << device.name << ")";
  if (req.arch_specific) out << ": sm_" << need << "a code runs on no other architecture";
  return out.str();
}

/// Versions as "13.0" from the runtime's 13000 style.
inline std::string version_string(int v) {
  std::ostringstream out;
  out << v / 1000 << '.' << (v % 1000) / 10;
  return out.str();
}

/// One line for reports: GPU, SM count, clocks, driver and runtime versions.
inline std::string describe(const DeviceInfo& device) {
  std::ostringstream out;
  if (!device.present) {
    out << device.absent_reason << "; CUDA runtime " << version_string(device.runtime_version);
    return out.str();
  }
  out << device.name << " (compute capability " << device.major << '.' << device.minor << ", " << device.sm_count
      << " SMs, SM clock " << device.sm_clock_mhz << " MHz, memory clock " << device.mem_clock_mhz << " MHz, L2 "
      << device.l2_bytes / (1024 * 1024) << " MiB), driver " << version_string(device.driver_version)
      << ", runtime " << version_string(device.runtime_version);
  return out.str();
}

}  // namespace course
