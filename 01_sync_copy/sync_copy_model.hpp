// 01_sync_copy, the model: how many blocks the lesson launches, what one batch costs each way of
// copying it, and how many bytes must be in flight to keep the memory busy.
//
// A copy plan (the width of one global load, staged in shared memory or not, a thread's loads
// issued before its first store, batches loaded into registers ahead of the one computed) gives
// the instructions and bytes of one batch, and the most bytes a thread waits on at once. Little's
// law turns bytes in flight into bandwidth: bytes in flight = bandwidth x latency, and in the
// units used here GB/s x ns = bytes. Host code only: sync_copy.cu and sync_copy_lab.cu print the
// tables, sync_copy_test.cu checks them on the CPU.
#pragma once

#include <cstddef>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/batch_grid.hpp"

// The launch rule of chapters 01-05 (chapter 01 introduces it): course/batch_grid.hpp.
using course::batch_grid;

/// [plan]
// How a kernel moves one batch from global memory to where it computes on it.
struct CopyPlan {
  const char* variant;
  int load_bytes;     // width of one global load of the batch: 4 (uint32_t), 8 (uint2) or 16 (uint4)
  bool staged;        // through shared memory; false: every thread reads its neighbours from global memory
  bool loads_first;   // all of a thread's loads of a batch issued before its first store to shared memory
  int batches_ahead;  // batches a thread holds in registers ahead of the one being computed (0: none)
};

// One batch of one block, counted in thread instructions (a warp issues one for 32 threads).
struct BatchCost {
  int global_loads;     // ld.global
  int shared_stores;    // st.shared
  int shared_loads;     // ld.shared, in the compute
  int global_stores;    // st.global
  int barriers;         // block-wide syncs
  int bytes_requested;  // what the global loads ask of L1, L2 and DRAM (DRAM sends each byte once)
  int bytes_in_flight;  // the most bytes of its own share of the input one thread waits on at once
};

inline BatchCost batch_cost(const CopyPlan& plan, int batch_bytes, int block_threads) {
  const int elems = batch_bytes / 4;  // uint32_t elements
  const int loads = batch_bytes / plan.load_bytes;
  const int thread_bytes = batch_bytes / block_threads;  // a thread's share of a batch
  BatchCost cost{};
  if (!plan.staged) {
    // Each group of load_bytes is one load, and its two outside neighbours two 4-byte loads.
    cost.global_loads = 3 * loads;
    cost.global_stores = loads;  // the outputs are written as wide as the inputs are read
    cost.bytes_requested = loads * (plan.load_bytes + 8);
    cost.bytes_in_flight = plan.load_bytes;  // the neighbours are other threads' shares, usually in L1
    return cost;
  }
  cost.global_loads = loads;
  cost.shared_stores = loads;
  cost.shared_loads = 3 * elems;  // an element and its two neighbours per output
  cost.global_stores = elems;
  cost.barriers = 2;              // the batch has landed; the batch is no longer read
  cost.bytes_requested = batch_bytes;
  cost.bytes_in_flight = plan.batches_ahead > 0 ? plan.batches_ahead * thread_bytes
                         : plan.loads_first     ? thread_bytes
                                                : plan.load_bytes;
  return cost;
}
/// [plan]

// The plans of the lesson's variants and the lab's rows, by name.
inline std::vector<CopyPlan> copy_plans() {
  return {
      {"sync_copy", 4, true, false, 0},
      {"sync_copy_uint4", 16, true, false, 0},
      {"width_4_loads_first", 4, true, true, 0},
      {"direct", 4, false, false, 0},
      {"direct_uint4", 16, false, false, 0},
      {"width_16_resident", 16, true, false, 0},
      {"prefetch_regs_1", 16, true, true, 1},
      {"prefetch_regs_4", 16, true, true, 4},
  };
}

// The plan named `variant`, or nullptr.
inline const CopyPlan* find_plan(const std::vector<CopyPlan>& plans, const std::string& variant) {
  for (const CopyPlan& plan : plans) {
    if (variant == plan.variant) return &plan;
  }
  return nullptr;
}

/// [little]
// Little's law: bytes in flight = bandwidth x latency. 1 GB/s x 1 ns = 1e9 B/s x 1e-9 s = 1 byte.
inline double bytes_in_flight(double gbps, double latency_ns) { return gbps * latency_ns; }
// The bandwidth that `bytes` in flight sustain at a latency: the inverse.
inline double bandwidth_gbps(double bytes, double latency_ns) { return bytes / latency_ns; }

// Bytes each SM must have in flight for `num_sms` SMs to read at `gbps` together.
inline double bytes_in_flight_per_sm(double gbps, double latency_ns, int num_sms) {
  return bytes_in_flight(gbps, latency_ns) / num_sms;
}
/// [little]

// An SM of an H100 SXM, which the course measures on; the latency is an assumed round figure for
// a DRAM load under load, not a measurement (a pointer chase on your GPU gives yours).
struct MachineModel {
  int num_sms = 132;
  int blocks_per_sm = 8;  // 2048 threads (the most an SM holds on 8.0 and 9.0) / 256; registers can lower it
  double latency_ns = 600;
};

inline void print_little_table(std::ostream& out, const MachineModel& machine) {
  char line[160];
  std::snprintf(line, sizeof line, "bytes in flight per SM to read at a bandwidth (Little's law, %d SMs):\n",
                machine.num_sms);
  out << line;
  const double latencies[] = {400, 600, 800, 1000};
  out << "  read GB/s  ";
  for (double ns : latencies) {
    std::snprintf(line, sizeof line, "%9.0f ns", ns);
    out << line;
  }
  out << '\n';
  for (double gbps : {500.0, 1000.0, 1500.0, 2000.0, 3000.0}) {
    std::snprintf(line, sizeof line, "  %9.0f  ", gbps);
    out << line;
    for (double ns : latencies) {
      std::snprintf(line, sizeof line, "%9.1f KiB", bytes_in_flight_per_sm(gbps, ns, machine.num_sms) / 1024.0);
      out << line;
    }
    out << '\n';
  }
}

// One line per plan: its batch's instructions and bytes, and the read bandwidth its bytes in flight
// allow at most, if every resident thread always had them outstanding.
inline void print_batch_costs(std::ostream& out, const std::vector<CopyPlan>& plans, int batch_bytes,
                              int block_threads, const MachineModel& machine) {
  char line[200];
  std::snprintf(line, sizeof line,
                "one batch of %d bytes, %d threads: instructions, bytes, and the read bandwidth its bytes in\n"
                "flight allow with %d blocks per SM, %d SMs and %.0f ns latency (an upper bound):\n",
                batch_bytes, block_threads, machine.blocks_per_sm, machine.num_sms, machine.latency_ns);
  out << line;
  std::snprintf(line, sizeof line, "  %-20s %5s %5s %6s %5s %4s %9s %10s %11s %9s\n", "variant", "LDG", "STS", "LDS",
                "STG", "bar", "requested", "in flight", "per SM", "read GB/s");
  out << line;
  for (const CopyPlan& plan : plans) {
    const BatchCost c = batch_cost(plan, batch_bytes, block_threads);
    const double per_sm = static_cast<double>(c.bytes_in_flight) * block_threads * machine.blocks_per_sm;
    std::snprintf(line, sizeof line, "  %-20s %5d %5d %6d %5d %4d %7d B %8d B %7.1f KiB %9.0f\n", plan.variant,
                  c.global_loads, c.shared_stores, c.shared_loads, c.global_stores, c.barriers, c.bytes_requested,
                  c.bytes_in_flight, per_sm / 1024.0,
                  bandwidth_gbps(per_sm * machine.num_sms, machine.latency_ns));
    out << line;
  }
}
