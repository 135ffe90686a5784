// Exercise 09.3 (CPU): when must a thread acquire a map, and at which scope? Solution.
//
// Parameters and constant memory are not read through a generic-proxy write that the tensor-map
// proxy must be ordered after: no acquire. For a slot in global memory, the thread remembers the
// version it acquired last; a new version (or a first use) needs one acquire, at the narrowest
// scope that holds its writer, and nothing more until the slot is written again.
#pragma once

#include <map>

enum class Scope { none, cta, gpu, sys };

enum class MapHome {
  kernel_parameter,  // a const __grid_constant__ CUtensorMap parameter
  constant_memory,   // a __constant__ CUtensorMap, written from the host before the launch
  global_memory,     // a slot of a CUtensorMap array in global memory
};

enum class Writer { host, another_gpu, earlier_kernel, another_block, this_block };

struct MapUse {
  MapHome home;
  int slot = 0;     // global memory only: which map of the array
  int version = 0;  // global memory only: how many times the slot had been written before this copy
  Writer writer = Writer::host;  // global memory only: who wrote that version
};

struct AcquireTracker {
  std::map<int, int> acquired;  // slot -> the version this thread acquired last

  Scope before_copy(const MapUse& use) {
    if (use.home != MapHome::global_memory) return Scope::none;
    const auto found = acquired.find(use.slot);
    if (found != acquired.end() && found->second == use.version) return Scope::none;  // unchanged since
    acquired[use.slot] = use.version;
    switch (use.writer) {
      case Writer::this_block: return Scope::cta;
      case Writer::another_block: case Writer::earlier_kernel: return Scope::gpu;
      case Writer::host: case Writer::another_gpu: return Scope::sys;
    }
    return Scope::sys;
  }
};
