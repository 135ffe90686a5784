// Exercise 01.2 (CPU): how many bytes must be in flight. Solution.
//
// GB/s x ns is bytes (1e9 B/s x 1e-9 s), so the need of the whole GPU is read_gbps x latency_ns,
// and each SM carries its share. An SM offers at most one load per resident thread: load_bytes x
// threads per block x blocks per SM. The width and the number of resident blocks are the two
// levers of this chapter; chapter 02's asynchronous copies add a third, more than one load in
// flight per thread without a register for each.
#pragma once

struct Residency {
  int num_sms;        // SMs reading together
  int block_threads;  // threads per block
  int blocks_per_sm;  // blocks resident on each SM at once
};

inline double needed_bytes_per_sm(double read_gbps, double latency_ns, int num_sms) {
  return read_gbps * latency_ns / num_sms;
}

inline double offered_bytes_per_sm(int load_bytes, const Residency& residency) {
  return static_cast<double>(load_bytes) * residency.block_threads * residency.blocks_per_sm;
}

inline int narrowest_load(double read_gbps, double latency_ns, const Residency& residency) {
  const double needed = needed_bytes_per_sm(read_gbps, latency_ns, residency.num_sms);
  const int widths[] = {4, 8, 16};
  for (int load_bytes : widths) {
    if (offered_bytes_per_sm(load_bytes, residency) >= needed) return load_bytes;
  }
  return 0;
}

inline int fewest_blocks_per_sm(double read_gbps, double latency_ns, int load_bytes, const Residency& residency,
                                int max_blocks) {
  const double needed = needed_bytes_per_sm(read_gbps, latency_ns, residency.num_sms);
  for (int blocks = 1; blocks <= max_blocks; ++blocks) {
    const Residency more{residency.num_sms, residency.block_threads, blocks};
    if (offered_bytes_per_sm(load_bytes, more) >= needed) return blocks;
  }
  return 0;
}
