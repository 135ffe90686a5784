/// @file
/// @brief Work a header needs done once the GPU is known to be usable, before the first kernel.
///
/// A header that keeps per-program device state (the wait bound of course/wait.cuh) registers a
/// function here while the program starts; chapter_main() and the GPU test fixture run them all
/// once, after the requirement check and before anything is launched. Registering makes no CUDA
/// call, so it is safe during static initialisation.
#pragma once

#include <vector>

namespace course {

using DeviceSetup = void (*)();

inline std::vector<DeviceSetup>& device_setups() {
  static std::vector<DeviceSetup> setups;
  return setups;
}

/// A namespace-scope object of this type registers @p setup when the program starts.
struct RegisterDeviceSetup {
  explicit RegisterDeviceSetup(DeviceSetup setup) { device_setups().push_back(setup); }
};

/// Runs every registered setup, the first time it is called.
inline void run_device_setups() {
  static bool done = false;
  if (done) return;
  done = true;
  for (DeviceSetup setup : device_setups()) setup();
}

}  // namespace course
