// Exercise 01.1 (CPU): what one batch costs at a copy width.
//
// The lesson's copy loop, for a batch of `batch_bytes` bytes, a block of `block_threads` threads
// and loads `load_bytes` wide (4: uint32_t, 8: uint2, 16: uint4):
//     for (int v = threadIdx.x; v < num_loads; v += blockDim.x) smem_vecs[v] = gmem_vecs[v];
// Each trip of the loop is one global load and one shared store for every thread that takes part
// in it. The SM issues instructions a warp at a time (threads 0-31, 32-63, ... of the block): a
// warp with at least one thread in a trip issues that trip's load, however few of its lanes use it.
//
// Your task: count one batch. thread_loads counts loads per thread and sums them (what the
// chapter's model calls global_loads), warp_loads the load instructions the SM issues, trips the
// iterations of the busiest thread, busy_threads the threads that load anything at all. The test
// checks the lesson's and the lab's widths against the model (sync_copy_model.hpp), then block
// sizes the lesson does not use, where the batch does not divide evenly among threads or warps.
// Check: scripts/exercise.py batch_count
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
  (void)shape;
  BatchCount count;
  // TODO: count one batch of `shape` as the lesson's copy loop moves it.
  return count;
}
