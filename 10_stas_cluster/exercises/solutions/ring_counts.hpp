// Exercise 10.1 (CPU): the numbers of the message ring. Solution.
//
// st.async does not arrive: it completes bytes. The only arrival on filled is the receiver's own
// arrive.expect_tx, so filled counts one arrival per phase, whatever the shape of the message, and
// the bytes are the message's: every thread's stores together. ready counts whoever speaks for the
// right neighbour: one block, its warps (a partial last warp arrives too) or all its threads.
#pragma once

#include <cstdint>

#include "stas_cluster_model.hpp"  // Release: per_block, per_warp, per_thread

struct MessageShape {
  int block_threads;      // threads per block, every one of them sends
  int stores_per_thread;  // st.async per thread per message
  int store_bytes;        // bytes per st.async: 4, 8 or 16
};

inline unsigned sends_to(unsigned rank, unsigned ring_size) { return rank + 1 == ring_size ? 0 : rank + 1; }

inline unsigned receives_from(unsigned rank, unsigned ring_size) { return rank == 0 ? ring_size - 1 : rank - 1; }

inline std::uint32_t expect_tx_bytes(const MessageShape& shape) {
  return static_cast<std::uint32_t>(shape.block_threads) * shape.stores_per_thread * shape.store_bytes;
}

inline int filled_count(const MessageShape& shape) {
  (void)shape;
  return 1;  // the receiver's arrive.expect_tx; the sender's st.async complete bytes, not arrivals
}

inline int ready_count(Release release, int block_threads) {
  switch (release) {
    case Release::per_block: return 1;
    case Release::per_warp: return (block_threads + 31) / 32;
    case Release::per_thread: return block_threads;
  }
  return 0;
}
