// Exercise 01.1 (CPU): what one batch costs at a copy width. Solution.
//
// A batch of B bytes in loads of w bytes is B / w loads, dealt out to the threads a trip at a
// time: trip k gives one load to each of min(T, loads - k * T) threads. The SM issues a load per
// warp with any lane in the trip, so a trip of n threads costs ceil(n / 32) warp instructions:
// doubling the width halves the instructions; more threads than loads adds none, and a partial
// last trip or a partial warp costs as much as a full one.
#pragma once

struct CopyShape {
  int batch_bytes;    // bytes a block stages per batch (a whole number of loads)
  int block_threads;  // threads per block
  int load_bytes;     // width of one load: 4, 8 or 16
};

struct BatchCount {
  int thread_loads = 0;  // global loads of all threads together, each followed by its shared store
  int warp_loads = 0;    // global load instructions as the SM issues them, one per warp and trip
  int trips = 0;         // iterations of the copy loop for the thread with the most
  int busy_threads = 0;  // threads with at least one load
};

inline BatchCount count_batch(const CopyShape& shape) {
  BatchCount count;
  count.thread_loads = shape.batch_bytes / shape.load_bytes;
  count.trips = (count.thread_loads + shape.block_threads - 1) / shape.block_threads;
  count.busy_threads = count.thread_loads < shape.block_threads ? count.thread_loads : shape.block_threads;
  for (int first = 0; first < count.thread_loads; first += shape.block_threads) {
    const int left = count.thread_loads - first;
    const int in_trip = left < shape.block_threads ? left : shape.block_threads;
    count.warp_loads += (in_trip + 31) / 32;  // a warp issues the load if any of its lanes takes part
  }
  return count;
}
