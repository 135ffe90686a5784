/// @file
/// @brief 10_stas_cluster, the model: the message ring of a cluster, counted and simulated on the host.
///
/// The message every block sends (its layout, its words, the digest a receiver folds them into)
/// and the host reference of what every block must write; the ring's tables (who sends to whom,
/// how many messages and bytes, the arrivals and transaction bytes that complete one phase of
/// each barrier, how many messages each buffer carries); and a simulation of the whole
/// filled/ready protocol of one cluster, in random orders, that reports the first broken rule
/// (a message read before it landed or overwritten before it was read, a remote access to a
/// block that has exited, a deadlock). Host code apart from the few functions the kernels share
/// (COURSE_HOST_DEVICE). stas_cluster.cu and stas_cluster_lab.cu include it; stas_cluster_test.cu
/// checks it on the CPU.
/// PTX mbarrier: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"  // course::MbarrierModel: one barrier's phases, for the simulation
#include "course/stage_cursor.hpp"    // course::StageCursor, COURSE_HOST_DEVICE

// ---- The message ----------------------------------------------------------------------------

constexpr int kClusterBlocks = 8;  // the portable maximum: every cluster-capable GPU runs it
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVecsPerThread = 2;  // 16-byte st.async (v4.b32) per thread per message
constexpr int kVecElems = 4;       // uint32 per 16-byte vector
constexpr int kMessageElems = kThreads * kVecsPerThread * kVecElems;
constexpr std::size_t kMessageBytes = kMessageElems * sizeof(std::uint32_t);  // 8 KiB per block per iteration
constexpr int kOutElemsPerBlock = kThreads + kMessageElems;  // one digest per thread, then the last message
constexpr std::uint32_t kDigestStart = 0x811C9DC5u;
constexpr std::size_t kMaxTxBytes = (std::size_t{1} << 20) - 1;  // an mbarrier phase counts at most this many bytes

/// [ring]
// Block `rank` of a ring of `size` sends to its right neighbour and receives from its left.
COURSE_HOST_DEVICE constexpr unsigned ring_right(unsigned rank, unsigned size) {
  return rank + 1 == size ? 0 : rank + 1;
}
COURSE_HOST_DEVICE constexpr unsigned ring_left(unsigned rank, unsigned size) {
  return rank == 0 ? size - 1 : rank - 1;
}
/// [ring]

// Element `i` (0..3) of vector `k` of thread `t` sits at this index of a message.
COURSE_HOST_DEVICE constexpr int message_index(int t, int k, int i) { return (k * kThreads + t) * kVecElems + i; }

// Word `elem` of the message that block `sender` (blockIdx.x) sends in `iteration`: a
// bijective mix of a counter, so a word from another sender, iteration or place differs.
COURSE_HOST_DEVICE inline std::uint32_t message_word(std::uint32_t sender, std::uint32_t iteration,
                                                     std::uint32_t elem, std::uint32_t num_blocks) {
  std::uint32_t x = (iteration * num_blocks + sender) * kMessageElems + elem;  // wraps after 16 GiB in all
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Each receiving thread folds every word it reads into a digest (FNV-1a on words): a single
// wrong word always changes the final value, because each step is a bijection of the state.
COURSE_HOST_DEVICE inline std::uint32_t digest_step(std::uint32_t digest, std::uint32_t word) {
  return (digest ^ word) * 0x01000193u;
}
#ifdef __CUDACC__
COURSE_HOST_DEVICE inline std::uint32_t digest_step(std::uint32_t digest, uint4 v) {
  return digest_step(digest_step(digest_step(digest_step(digest, v.x), v.y), v.z), v.w);
}
#endif

// A grid of clusters, each a ring of cluster_blocks blocks, each block sending num_iterations messages.
struct RingShape {
  unsigned num_clusters = 1;
  unsigned cluster_blocks = kClusterBlocks;
  std::uint32_t num_iterations = 1;
  unsigned num_blocks() const { return num_clusters * cluster_blocks; }
  std::size_t dsmem_bytes() const { return std::size_t{num_blocks()} * num_iterations * kMessageBytes; }
};

// What every block must write: per thread the digest of all it received, then the last message.
inline std::vector<std::uint32_t> reference(const RingShape& shape) {
  const unsigned n = shape.num_blocks(), size = shape.cluster_blocks;
  std::vector<std::uint32_t> out(std::size_t{n} * kOutElemsPerBlock);
  for (unsigned block = 0; block < n; ++block) {
    const unsigned sender = block - block % size + ring_left(block % size, size);
    std::uint32_t* block_out = out.data() + std::size_t{block} * kOutElemsPerBlock;
    for (int t = 0; t < kThreads; ++t) block_out[t] = kDigestStart;
    for (std::uint32_t it = 0; it < shape.num_iterations; ++it) {
      for (int t = 0; t < kThreads; ++t) {
        for (int k = 0; k < kVecsPerThread; ++k) {
          for (int i = 0; i < kVecElems; ++i) {
            const std::uint32_t word = message_word(sender, it, message_index(t, k, i), n);
            block_out[t] = digest_step(block_out[t], word);
            if (it + 1 == shape.num_iterations) block_out[kThreads + message_index(t, k, i)] = word;
          }
        }
      }
    }
  }
  return out;
}

// The minimal kernel (stas_pair): in each cluster of two blocks, thread t of block b writes
// vector 0 of its message (iteration 0) into the other block, b ^ 1, at the place it has in the
// message; each block writes the kThreads vectors it received. What every block must write:
constexpr int kPairElemsPerBlock = kThreads * kVecElems;
inline std::vector<std::uint32_t> pair_reference(unsigned num_blocks) {
  std::vector<std::uint32_t> out(std::size_t{num_blocks} * kPairElemsPerBlock);
  for (unsigned block = 0; block < num_blocks; ++block) {
    for (int elem = 0; elem < kPairElemsPerBlock; ++elem) {
      out[std::size_t{block} * kPairElemsPerBlock + elem] = message_word(block ^ 1u, 0, elem, num_blocks);
    }
  }
  return out;
}

// ---- The ring's tables ----------------------------------------------------------------------

/// [release]
// Who tells the sender that a message has been read, and so how many arrivals complete one
// phase of its ready barrier: one for the block (the lesson), one per warp (the lab), or one
// per thread (the guide).
enum class Release { per_block, per_warp, per_thread };
COURSE_HOST_DEVICE constexpr int ready_arrivals(Release release) {
  return release == Release::per_block ? 1 : release == Release::per_warp ? kWarps : kThreads;
}
/// [release]

// One block of a ring: whom it writes to, whom it hears from, how much.
struct BlockTraffic {
  unsigned rank, sends_to, receives_from;
  std::uint32_t messages_sent, messages_received;
  std::size_t bytes_sent;
};

inline std::vector<BlockTraffic> ring_traffic(unsigned cluster_blocks, std::uint32_t num_iterations) {
  std::vector<BlockTraffic> blocks;
  for (unsigned rank = 0; rank < cluster_blocks; ++rank) {
    blocks.push_back({rank, ring_right(rank, cluster_blocks), ring_left(rank, cluster_blocks), num_iterations,
                      num_iterations, std::size_t{num_iterations} * kMessageBytes});
  }
  return blocks;
}

// What completes one phase of a barrier of the ring: arrivals, and transaction bytes.
struct PhaseCount {
  const char* barrier;
  int arrivals;                 // the count given to mbarrier.init
  std::uint32_t tx_bytes;       // posted by arrive.expect_tx, completed by st.async (0: none)
  int st_async_per_phase;       // 16-byte st.async writes whose complete-tx the phase waits for
  const char* who_arrives;
};

inline std::vector<PhaseCount> phase_counts(Release release) {
  constexpr int kStAsyncPerMessage = kThreads * kVecsPerThread;  // one per thread and 16-byte vector
  return {{"filled", 1, static_cast<std::uint32_t>(kMessageBytes), kStAsyncPerMessage,
           "the receiver itself (arrive.expect_tx); the left neighbour's st.async complete the bytes"},
          {"ready", ready_arrivals(release), 0, 0,
           release == Release::per_block  ? "the right neighbour, once per message after a block barrier"
           : release == Release::per_warp ? "the right neighbour, once per warp after a warp barrier"
                                          : "every thread of the right neighbour"}};
}

// How many of a block's num_iterations messages go through buffer `stage` of a ring of `stages`.
constexpr std::uint32_t messages_in_stage(std::uint32_t num_iterations, int stages, int stage) {
  return num_iterations > static_cast<std::uint32_t>(stage)
             ? (num_iterations - stage + stages - 1) / stages
             : 0;
}

// Where iteration `it` of a ring of kStages buffers waits: the buffer, the parity of the filled
// phase (this iteration's message landed) and of the ready phase (the message sent into the same
// buffer kStages iterations ago was read; a fresh barrier reports parity 1 as complete).
struct RingWait {
  int stage;
  std::uint32_t filled_parity, ready_parity;
};

template <int kStages>
std::vector<RingWait> ring_waits(int num_iterations) {
  std::vector<RingWait> waits;
  course::StageCursor<kStages> cursor;
  for (int it = 0; it < num_iterations; ++it, cursor.advance()) {
    waits.push_back({cursor.stage, cursor.phase, cursor.phase ^ 1u});
  }
  return waits;
}

// The host model the programs print: a ring, what completes each barrier's phase, where the
// first iterations wait.
inline void print_ring(std::ostream& out, unsigned cluster_blocks) {
  out << "ring of " << cluster_blocks << " blocks per cluster:";
  for (const BlockTraffic& b : ring_traffic(cluster_blocks, 1)) out << ' ' << b.rank << "->" << b.sends_to;
  out << '\n';
}

inline void print_phase_counts(std::ostream& out, Release release) {
  out << "one phase of";
  for (const PhaseCount& c : phase_counts(release)) {
    out << ' ' << c.barrier << ": " << c.arrivals << " arrival" << (c.arrivals == 1 ? "" : "s");
    if (c.tx_bytes != 0) out << " + " << c.tx_bytes << " bytes from " << c.st_async_per_phase << " st.async";
    out << ';';
  }
  out << '\n';
}

template <int kStages>
void print_ring_waits(std::ostream& out, const char* title) {
  out << "iteration: stage / filled parity / ready parity (" << title << "):";
  int it = 0;
  for (const RingWait& w : ring_waits<kStages>(kStages == 1 ? 4 : 3 * kStages)) {
    out << "  " << it++ << ": " << w.stage << '/' << w.filled_parity << '/' << w.ready_parity;
  }
  out << '\n';
}

// ---- The protocol, simulated ----------------------------------------------------------------
//
// One cluster, one agent per block (a block's warps move together), counted in whole messages.
// Each message lands in `chunks` pieces, each its own st.async delivery in flight; each remote
// arrival on a ready barrier is in flight too, and all of them land whenever the scheduler picks
// them. A block's cluster arrival waits until its remote arrivals have landed (release), but
// not for its st.async deliveries (their only completion is the receiver's barrier). At every
// step the scheduler picks one possible event at random. The first broken rule is reported.

struct Protocol {
  int stages = 2;
  int ready_count = 1;        // mbarrier.init of ready: arrivals per phase
  int release_arrivals = 1;   // remote arrivals a block makes per message read (0: broken, none)
  int chunks = 4;             // pieces a message lands in, of kMessageBytes / chunks bytes each
  int expect_tx_bytes = static_cast<int>(kMessageBytes);  // what the receiver announces per message
  bool ready_wait_first = true;  // the lesson's order; false: the guide's (wait for ready last)
  bool final_cluster_sync = true;
  bool skip_ready_wait = false;  // broken: write without waiting for the buffer
};

// The lesson's protocol with `stages` buffers and this kind of release, the ready barrier counting
// one arrival per releasing block, warp or thread.
inline Protocol protocol_for(Release release, int stages) {
  Protocol p;
  p.stages = stages;
  p.ready_count = p.release_arrivals = ready_arrivals(release);
  return p;
}

enum class Step { wait_ready, send, expect_tx, wait_filled, consume, arrive_left_ready, cluster_arrive, cluster_wait, exit };

struct ProtocolOp {
  Step step;
  int stage;
  unsigned parity;
  std::uint32_t message;
};

// The steps of one block, in program order.
inline std::vector<ProtocolOp> block_program(const Protocol& p, int iterations) {
  std::vector<ProtocolOp> ops;
  for (int it = 0; it < iterations; ++it) {
    const int s = it % p.stages;
    const unsigned parity = (it / p.stages) & 1u;
    const auto m = static_cast<std::uint32_t>(it);
    if (p.ready_wait_first && !p.skip_ready_wait) ops.push_back({Step::wait_ready, s, parity ^ 1u, m});
    ops.push_back({Step::send, s, 0, m});
    ops.push_back({Step::expect_tx, s, 0, m});
    ops.push_back({Step::wait_filled, s, parity, m});
    ops.push_back({Step::consume, s, 0, m});
    ops.push_back({Step::arrive_left_ready, s, 0, m});
    if (!p.ready_wait_first && !p.skip_ready_wait) ops.push_back({Step::wait_ready, s, parity, m});
  }
  if (p.final_cluster_sync) {
    ops.push_back({Step::cluster_arrive, 0, 0, 0});
    ops.push_back({Step::cluster_wait, 0, 0, 0});
  }
  ops.push_back({Step::exit, 0, 0, 0});
  return ops;
}

// One random interleaving of a ring of `ring_size` blocks: "" or the first broken rule.
inline std::string simulate(const Protocol& p, int ring_size, int iterations, unsigned seed) {
  struct Buffer {
    std::uint32_t message = 0;
    int landed = 0;  // chunks of `message` in the buffer, not yet read
  };
  struct Block {
    std::vector<course::MbarrierModel> filled, ready;
    std::vector<Buffer> buffers;
    std::size_t pc = 0;
    bool exited = false;
    int arrivals_in_flight = 0;
  };
  struct InFlight {
    bool chunk;  // an st.async delivery, or a remote arrival on ready
    int from, to, stage;
    std::uint32_t message;
  };
  const std::vector<ProtocolOp> program = block_program(p, iterations);
  const int chunk_bytes = static_cast<int>(kMessageBytes) / p.chunks;
  std::vector<Block> blocks(ring_size);
  for (Block& b : blocks) {
    b.filled.assign(p.stages, course::MbarrierModel{});
    b.ready.assign(p.stages, course::MbarrierModel{});
    for (course::MbarrierModel& bar : b.ready) bar.init(p.ready_count);
    b.buffers.assign(p.stages, Buffer{});
  }
  std::vector<InFlight> flight;
  int cluster_arrivals = 0;
  std::mt19937 random(seed);
  auto name = [](int b) { return "block " + std::to_string(b); };

  for (;;) {
    std::vector<int> choices;  // b < ring_size: block b's next step; else an event in flight
    for (int b = 0; b < ring_size; ++b) {
      const Block& blk = blocks[b];
      if (blk.exited) continue;
      const ProtocolOp& op = program[blk.pc];
      bool possible = true;
      if (op.step == Step::wait_ready) possible = blk.ready[op.stage].phase_done(op.parity);
      if (op.step == Step::wait_filled) possible = blk.filled[op.stage].phase_done(op.parity);
      if (op.step == Step::cluster_arrive) possible = blk.arrivals_in_flight == 0;
      if (op.step == Step::cluster_wait) possible = cluster_arrivals == ring_size;
      if (possible) choices.push_back(b);
    }
    for (std::size_t f = 0; f < flight.size(); ++f) choices.push_back(ring_size + static_cast<int>(f));
    if (choices.empty()) {
      for (int b = 0; b < ring_size; ++b) {
        if (!blocks[b].exited) return "deadlock: " + name(b) + " waits forever at step " + std::to_string(blocks[b].pc);
      }
      return "";
    }
    const int pick = choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(random)];
    if (pick >= ring_size) {
      const InFlight event = flight[pick - ring_size];
      flight.erase(flight.begin() + (pick - ring_size));
      Block& to = blocks[event.to];
      if (to.exited) {
        return std::string(event.chunk ? "st.async" : "remote arrive") + " from " + name(event.from) + " reached " +
               name(event.to) + " after it exited";
      }
      if (event.chunk) {
        Buffer& buffer = to.buffers[event.stage];
        if (buffer.landed > 0 && buffer.message != event.message) {
          return "a message into " + name(event.to) + " was overwritten before it was read";
        }
        buffer.message = event.message;
        ++buffer.landed;
        to.filled[event.stage].complete_tx(chunk_bytes);
      } else {
        to.ready[event.stage].arrive();
        --blocks[event.from].arrivals_in_flight;
      }
      continue;
    }
    Block& blk = blocks[pick];
    const ProtocolOp op = program[blk.pc++];
    const int right = static_cast<int>(ring_right(pick, ring_size));
    const int left = static_cast<int>(ring_left(pick, ring_size));
    switch (op.step) {
      case Step::send:
        for (int c = 0; c < p.chunks; ++c) flight.push_back({true, pick, right, op.stage, op.message});
        break;
      case Step::expect_tx:
        blk.filled[op.stage].expect_tx(p.expect_tx_bytes);
        blk.filled[op.stage].arrive();
        break;
      case Step::consume: {
        Buffer& buffer = blk.buffers[op.stage];
        if (buffer.message != op.message || buffer.landed != p.chunks) {
          return name(pick) + " read a message before it landed";
        }
        buffer.landed = 0;
        break;
      }
      case Step::arrive_left_ready:
        for (int a = 0; a < p.release_arrivals; ++a) flight.push_back({false, pick, left, op.stage, op.message});
        blk.arrivals_in_flight += p.release_arrivals;
        break;
      case Step::cluster_arrive: ++cluster_arrivals; break;
      case Step::exit: blk.exited = true; break;
      default: break;  // the waits: their condition was checked above
    }
  }
}

// The first problem any of `runs` random interleavings runs into, or "".
inline std::string first_problem(const Protocol& p, int ring_size, int runs = 400, int iterations = 6) {
  for (int seed = 1; seed <= runs; ++seed) {
    const std::string problem = simulate(p, ring_size, iterations, static_cast<unsigned>(seed));
    if (!problem.empty()) return problem;
  }
  return "";
}
