// Exercise 01.2 (CPU): how many bytes must be in flight.
//
// Little's law: bytes in flight = bandwidth x latency. In the units of the chapter's model,
// 1 GB/s x 1 ns = 1 byte. For a GPU to read at read_gbps when a load takes latency_ns to come back,
// that many bytes must be on their way at every moment, shared among its SMs. What an SM can have
// on its way is bounded by what its resident threads wait on: in the lesson's copy loop a thread
// stores each load before it issues the next, so it waits on one load, load_bytes wide, at a time.
//
// Your task:
//   needed_bytes_per_sm: the bytes each of num_sms SMs must keep in flight;
//   offered_bytes_per_sm: the most bytes an SM has in flight when every resident thread waits on
//     one load of load_bytes;
//   narrowest_load: the narrowest load width of 4, 8 and 16 bytes whose offer meets the need
//     (0 when even 16 does not);
//   fewest_blocks_per_sm: the fewest resident blocks per SM whose offer meets the need at a
//     given width, up to max_blocks (0 when even max_blocks do not).
// "Meets" means at least as many bytes as needed. The test uses the lesson's H100 figures (132
// SMs, blocks of 256 threads, 8 of them per SM) and checks the printed table of the model.
// Check: scripts/exercise.py bytes_in_flight
#pragma once

struct Residency {
  int num_sms;        // SMs reading together
  int block_threads;  // threads per block
  int blocks_per_sm;  // blocks resident on each SM at once
};

inline double needed_bytes_per_sm(double read_gbps, double latency_ns, int num_sms) {
  (void)read_gbps, (void)latency_ns, (void)num_sms;
  return 0;  // TODO: Little's law, shared among the SMs
}

inline double offered_bytes_per_sm(int load_bytes, const Residency& residency) {
  (void)load_bytes, (void)residency;
  return 0;  // TODO: one load in flight per resident thread
}

inline int narrowest_load(double read_gbps, double latency_ns, const Residency& residency) {
  (void)read_gbps, (void)latency_ns, (void)residency;
  return 0;  // TODO: 4, 8 or 16, or 0
}

inline int fewest_blocks_per_sm(double read_gbps, double latency_ns, int load_bytes, const Residency& residency,
                                int max_blocks) {
  (void)read_gbps, (void)latency_ns, (void)load_bytes, (void)residency, (void)max_blocks;
  return 0;  // TODO: 1 .. max_blocks, or 0 (residency.blocks_per_sm is what you vary)
}
