// Exercise 09.3 (CPU): when must a thread acquire a map, and at which scope?
//
// TMA reads a tensor map through the tensor-map proxy. A map in global memory was written through
// the generic proxy (by the host, by st.global, by the copy half of tensormap.cp_fenceproxy), so
// the thread whose tensor copy will read it first performs fence.proxy.tensormap::generic.acquire
// on the map's 128 bytes, at a scope that holds the writer. Stream order, a finished kernel or a
// __syncthreads() does not replace that fence; an acquire of a map this thread has already acquired,
// unchanged since, only costs time (the lab's acquire_every_tile row).
//
// Your task: complete AcquireTracker, which plays the thread that issues a block's tensor copies.
// Before each copy it is told where the copy's map lives and, for a map in global memory, which
// slot of the map array, which version of that slot (a count of the writes to it so far) and who
// wrote that version. before_copy() returns the acquire this thread must perform first:
//   - Scope::none when none is needed;
//   - otherwise the narrowest scope that holds the writer: .cta (the writer is in this block),
//     .gpu (another block or an earlier kernel on this GPU), .sys (the host or another GPU).
//     A wider scope would be correct but slower (the lab's acquire_sys row).
// The lesson's consumers (double_batch_tiles in device_tensormap.cu) and the lab's in_block and
// constant_maps rows are the examples; the test replays walks like theirs and a few others.
// Check: scripts/exercise.py acquire_plan
#pragma once

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
  // TODO: what the thread has to remember between copies.

  Scope before_copy(const MapUse& use) {
    (void)use;
    return Scope::none;  // TODO
  }
};
