// 02_memcpy_async, the model: which instruction a memcpy_async call becomes, decided on the host,
// and how many blocks the lesson launches.
//
// A global -> shared copy call becomes one of four things: one bulk copy (9.0 only; PTX
// cp.async.bulk, SASS UBLKCP), 16-byte LDGSTS that bypass L1 (cp.async.cg), 4- or 8-byte LDGSTS
// through L1 (cp.async.ca), or a synchronous loop of loads and stores through registers. What
// decides is the architecture, the alignment the code proves (alignof of the pointed-to type,
// or a cuda::aligned_size_t<N> size), what the call completes on, and, for cooperative_groups
// with byte pointers only, the two addresses at run time. The functions below restate the
// dispatch of libcu++ and cooperative groups as CUDA 13.0 ships them; every variant of the
// chapter's three programs has a row, and memcpy_async_test.cu checks each row against the PTX
// and the machine code the build emits. Host code only.
// PTX cp.async: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/batch_grid.hpp"

// The launch rule of chapters 01-05 (chapter 01 introduces it): course/batch_grid.hpp.
using course::batch_grid;

// ---- Paths ----------------------------------------------------------------------------------

enum class Copy { bulk, ldgsts, sync };
// How the copying thread (or the block) learns that the bytes have landed.
enum class Signal {
  complete_tx,  // the bulk copy counts its bytes on the barrier (mbarrier.expect_tx + complete_tx)
  arrive_on,    // cp.async.mbarrier.arrive: the barrier's phase waits for this thread's LDGSTS
  wait_group,   // cp.async.commit_group, then cp.async.wait_group: this thread's copies only
  none,         // the copy was synchronous: done when the call returns
};

struct CopyPath {
  Copy copy = Copy::sync;
  int width_bytes = 0;  // bytes per instruction (a bulk copy: the whole call)
  Signal signal = Signal::none;
  int head_bytes = 0;  // cooperative_groups at run time: bytes copied synchronously before...
  int tail_bytes = 0;  // ...and after the LDGSTS, to align the source to the copy width
  bool bypasses_l1() const { return copy == Copy::ldgsts && width_bytes == 16; }
};

/// [cuda_path]
// What a cuda::memcpy_async call completes on.
enum class SyncObject {
  smem_block_barrier,  // a cuda::barrier<thread_scope_block> in shared memory (the default completion)
  other_barrier,       // any other cuda::barrier (thread or device scope, global memory, a completion function)
  pipeline,            // a cuda::pipeline
};

// cuda::memcpy_async(dst, src, size, sync) or (group, dst, src, size, sync), global -> shared.
// `proven_align` is the larger of alignof(T) and the N of an aligned_size_t<N> size: the library
// decides at compile time and never looks at the addresses. A promise the data breaks is
// undefined behaviour, not a slower path.
inline CopyPath cuda_memcpy_async_path(int sm, std::size_t proven_align, std::size_t call_bytes, SyncObject on) {
  const int width = proven_align >= 16 ? 16 : static_cast<int>(proven_align);
  if (sm >= 90 && proven_align >= 16 && on == SyncObject::smem_block_barrier) {
    return {Copy::bulk, static_cast<int>(call_bytes), Signal::complete_tx};  // one thread issues it for the group
  }
  if (sm >= 80 && proven_align >= 4) {
    const Signal signal = on == SyncObject::pipeline ? Signal::wait_group : Signal::arrive_on;
    return {Copy::ldgsts, width, signal};  // .cg when width is 16, .ca for 4 and 8
  }
  return {Copy::sync, width, Signal::none};  // 1 or 2 bytes proven: loads and stores of that width
}
/// [cuda_path]

/// [cg_path]
// cooperative_groups::memcpy_async(group, dst, src, size), global -> shared, with a static hint:
// alignof(T), or N for an aligned_size_t<N> size. From 4 bytes up the hint alone decides. Below
// 4 (char or short pointers) the library compares the addresses at run time: the copy width is
// the lowest bit in which dst and src differ (16 if none below 16), the source's first bytes up
// to that width and the bytes after the last whole unit are copied synchronously.
inline CopyPath cg_memcpy_async_path(std::size_t hint, std::uintptr_t dst, std::uintptr_t src, std::size_t bytes) {
  if (hint >= 4) return {Copy::ldgsts, hint >= 16 ? 16 : static_cast<int>(hint), Signal::wait_group};
  const std::uintptr_t differ = (dst ^ src) & 15u;
  int width = 16;
  for (int w = 8; w >= static_cast<int>(hint); w >>= 1) {
    if (differ & static_cast<std::uintptr_t>(w)) width = w;
  }
  if (bytes < static_cast<std::size_t>(width)) width = static_cast<int>(hint);
  if (width < 4) return {Copy::sync, width, Signal::none};
  const int head = static_cast<int>((0 - src) & static_cast<std::uintptr_t>(width - 1));  // < width <= bytes
  const int tail = static_cast<int>((bytes - head) % width);
  return {Copy::ldgsts, width, Signal::wait_group, head, tail};
}
/// [cg_path]

// __pipeline_memcpy_async(dst, src, size): always LDGSTS of `size` bytes (4, 8 or 16).
inline CopyPath primitives_path(int size_bytes) { return {Copy::ldgsts, size_bytes, Signal::wait_group}; }

// smem[i] = gmem[i]: a load into a register and a store from it (LDG + STS), any architecture.
inline CopyPath plain_path(int elem_bytes) { return {Copy::sync, elem_bytes, Signal::none}; }

// ---- The calls each variant makes -------------------------------------------------------------

enum class Api { cg, cuda, primitives, plain };

// One kind of copy call in a kernel, and how many of them one block makes per batch (or tile).
struct CopyCall {
  Api api = Api::plain;
  std::size_t proven_align = 4;  // alignof(T) or aligned_size_t<N> (cg: the hint)
  std::size_t call_bytes = 0;    // bytes one call copies
  int calls = 1;                 // calls per batch and block (collective calls count once)
  SyncObject on = SyncObject::smem_block_barrier;  // cuda::memcpy_async only
  std::size_t src_offset = 0;    // the source's distance past a 16-byte boundary (dst is aligned)
};

inline CopyPath path_of(int sm, const CopyCall& call) {
  switch (call.api) {
    case Api::cuda: return cuda_memcpy_async_path(sm, call.proven_align, call.call_bytes, call.on);
    case Api::cg: return cg_memcpy_async_path(call.proven_align, 0x1000, 0x2000 + call.src_offset, call.call_bytes);
    case Api::primitives: return primitives_path(static_cast<int>(call.call_bytes));
    case Api::plain: return plain_path(static_cast<int>(call.proven_align));
  }
  return {};
}

// Copy instructions one block issues per batch: one per bulk copy, one per LDGSTS, one load
// (and one store) per synchronous unit; a run-time head and tail count as their bytes.
inline long instructions_per_batch(int sm, const CopyCall& call) {
  const CopyPath p = path_of(sm, call);
  if (p.copy == Copy::bulk) return call.calls;
  const long units = static_cast<long>(call.call_bytes - p.head_bytes - p.tail_bytes) / p.width_bytes;
  return call.calls * (units + p.head_bytes + p.tail_bytes);
}

struct VariantCopies {
  const char* program;  // memcpy_async, memcpy_async_lab or halo_stencil
  const char* variant;
  const char* proves;   // what the code tells the library, in words
  std::vector<CopyCall> calls;
};

// The lesson's and the lab's variants: a batch of `batch_bytes` copied by `block_threads` threads.
inline std::vector<VariantCopies> batch_copies(int block_threads, std::size_t batch_bytes) {
  const std::size_t chunk = batch_bytes / block_threads;  // per-thread calls: one chunk each
  return {
      {"memcpy_async", "cg_memcpy_async", "aligned_size_t<16>", {{Api::cg, 16, batch_bytes}}},
      {"memcpy_async", "cuda_memcpy_async_block", "aligned_size_t<16>, block barrier",
       {{Api::cuda, 16, batch_bytes, 1, SyncObject::smem_block_barrier}}},
      {"memcpy_async", "cuda_memcpy_async_thread", "aligned_size_t<16> per thread, block barrier",
       {{Api::cuda, 16, chunk, block_threads, SyncObject::smem_block_barrier}}},
      {"memcpy_async", "pipeline_primitives", "16 bytes per thread", {{Api::primitives, 16, chunk, block_threads}}},
      {"memcpy_async_lab", "misaligned_cg", "char pointers, source 4 bytes off",
       {{Api::cg, 1, batch_bytes, 1, SyncObject::smem_block_barrier, 4}}},
      {"memcpy_async_lab", "misaligned_cuda", "char pointers, block barrier",
       {{Api::cuda, 1, batch_bytes, 1, SyncObject::smem_block_barrier, 4}}},
      {"memcpy_async_lab", "ldgsts_16", "aligned_size_t<16>, pipeline",
       {{Api::cuda, 16, batch_bytes, 1, SyncObject::pipeline}}},
  };
}

// The halo stencil's variants: a tile of `tile_elems` floats and `halo` more on each side,
// copied by one warp (per-lane calls: one per element of the window).
inline std::vector<VariantCopies> halo_copies(int tile_elems, int halo) {
  const std::size_t f = sizeof(float);
  const int lane_copies = tile_elems + 2 * halo;
  return {
      {"halo_stencil", "stencil_sync", "float elements", {{Api::plain, f, f, lane_copies}}},
      {"halo_stencil", "stencil_cuda_memcpy_async", "aligned_size_t<4> per lane, block barrier",
       {{Api::cuda, 4, f, lane_copies, SyncObject::smem_block_barrier}}},
  };
}

// ---- One thread's commit groups --------------------------------------------------------------

/// [commit_groups]
// The copies one thread has in flight, as cp.async keeps them: every LDGSTS joins the thread's
// open group; commit (cp.async.commit_group, __pipeline_commit) closes it; wait_prior(n)
// (cp.async.wait_group n) returns once at most n of the thread's committed groups are pending,
// the oldest landing first. Nothing here knows of other threads: a wait covers the caller's own
// copies, which is why a block barrier must follow before a thread reads what others copied.
class CommitGroups {
 public:
  void copy(int bytes) { open_bytes_ += bytes, ++open_copies_; }
  void commit() {
    pending_.push_back({open_copies_, open_bytes_});  // an empty group is legal, and completes at once
    open_copies_ = 0, open_bytes_ = 0;
  }
  // Returns the number of groups that had to land for the wait to return.
  int wait_prior(int n) {
    if (n < 0) throw std::invalid_argument("wait_prior: the number of groups left pending is at least 0");
    int landed = 0;
    while (static_cast<int>(pending_.size()) > n) pending_.erase(pending_.begin()), ++landed;
    return landed;
  }
  int groups_in_flight() const { return static_cast<int>(pending_.size()); }
  int copies_in_flight() const {
    int copies = open_copies_;
    for (const Group& g : pending_) copies += g.copies;
    return copies;
  }
  int bytes_in_flight() const {
    int bytes = open_bytes_;
    for (const Group& g : pending_) bytes += g.bytes;
    return bytes;
  }
  int open_copies() const { return open_copies_; }

 private:
  struct Group {
    int copies, bytes;
  };
  std::vector<Group> pending_;  // committed, oldest first
  int open_copies_ = 0, open_bytes_ = 0;
};
/// [commit_groups]

// ---- Printing ---------------------------------------------------------------------------------

inline std::string describe(const CopyPath& p) {
  char text[96];
  switch (p.copy) {
    case Copy::bulk: std::snprintf(text, sizeof text, "bulk copy of %d B (cp.async.bulk)", p.width_bytes); break;
    case Copy::ldgsts:
      std::snprintf(text, sizeof text, "%d-byte LDGSTS %s%s", p.width_bytes,
                    p.bypasses_l1() ? "(cp.async.cg, bypasses L1)" : "(cp.async.ca, through L1)",
                    p.head_bytes + p.tail_bytes > 0 ? " + byte head/tail" : "");
      break;
    case Copy::sync: std::snprintf(text, sizeof text, "%d-byte loads and stores (synchronous)", p.width_bytes); break;
  }
  return text;
}

// The path of every variant of `program` on 8.0 and 9.0, and the copy instructions per batch.
inline void print_copy_paths(std::ostream& out, const std::vector<VariantCopies>& rows, const std::string& program) {
  out << "Copy path of each variant on 8.0 | on 9.0, with copy instructions per block and batch (or tile):\n";
  for (const VariantCopies& row : rows) {
    if (program != row.program) continue;
    for (const CopyCall& call : row.calls) {
      char line[320];
      std::snprintf(line, sizeof line, "  %-26s %-44s x%-5ld | %s x%ld\n", row.variant,
                    describe(path_of(80, call)).c_str(), instructions_per_batch(80, call),
                    describe(path_of(90, call)).c_str(), instructions_per_batch(90, call));
      out << line;
    }
  }
}
