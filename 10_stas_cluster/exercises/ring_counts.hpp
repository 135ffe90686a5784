// Exercise 10.1 (CPU): the numbers of the message ring.
//
// The blocks of a cluster form a ring: block `rank` writes each message into its right
// neighbour's shared memory with st.async, and reads the messages its left neighbour writes into
// its own. Per buffer every block owns two mbarriers:
//   filled  the receiver's: the receiver arrives on it once per message with arrive.expect_tx
//           (the bytes of one message); every st.async of the left neighbour performs complete-tx
//           of its own bytes on it when they have landed;
//   ready   the sender's: its right neighbour arrives on it, remotely, when it has read the
//           message; once for the block after a block barrier (the lesson), once per warp after
//           a warp barrier (the lab), or from every thread (the guide).
// A message is `stores_per_thread` st.async of `store_bytes` (4, 8 or 16) from every thread.
//
// Your task: the ranks a block sends to and receives from (a ring of one block sends to itself),
// the bytes the receiver announces per message, and the counts mbarrier.init must give filled and
// ready. The test replays your counts phase by phase on model barriers (course/mbarrier_model.hpp),
// with the bytes landing before and after the announcement, and runs the lesson's protocol with
// your numbers through the chapter's simulation (simulate() in stas_cluster_model.hpp).
// Check: scripts/exercise.py ring_counts
#pragma once

#include <cstdint>

#include "stas_cluster_model.hpp"  // Release: per_block, per_warp, per_thread

struct MessageShape {
  int block_threads;      // threads per block, every one of them sends
  int stores_per_thread;  // st.async per thread per message
  int store_bytes;        // bytes per st.async: 4, 8 or 16
};

inline unsigned sends_to(unsigned rank, unsigned ring_size) {
  (void)ring_size;
  return rank;  // TODO: the right neighbour
}

inline unsigned receives_from(unsigned rank, unsigned ring_size) {
  (void)ring_size;
  return rank;  // TODO: the left neighbour
}

inline std::uint32_t expect_tx_bytes(const MessageShape& shape) {
  (void)shape;
  return 0;  // TODO: what the receiver announces on filled for one message
}

inline int filled_count(const MessageShape& shape) {
  (void)shape;
  return 0;  // TODO: the arrivals that complete one phase of filled
}

inline int ready_count(Release release, int block_threads) {
  (void)release, (void)block_threads;
  return 0;  // TODO: the arrivals that complete one phase of ready
}
