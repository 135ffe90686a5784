// 06_tma_1d: one-dimensional bulk copies (TMA): a whole tile per instruction, both ways.
//
// What you learn: how one elected thread moves a tile global -> shared with a single bulk copy
// that completes on a shared-memory barrier by counting bytes (the transaction count), the three
// APIs that issue it and who arrives with how many bytes in each, what cuda::memcpy_async really
// compiles to when its conditions for a bulk copy are not met, the write-back (proxy fence, block
// sync, bulk store, bulk async-group), the alignment rules checked on the host, a multi-stage
// prefetch with one barrier per stage and explicit parity, and why taking its tiles in order
// from a global counter lets it match cudaMemcpy.
// What changed from 05: no thread copies any data: the Tensor Memory Accelerator does, and the
// results leave shared memory through it too. The problem becomes an elementwise read-modify-
// write of any multiple of 16 bytes, and ring stages grow from 8 KiB to 32 KiB.
// Hardware: compute capability 9.0+ (cp.async.bulk, mbarrier transaction counts, elect.sync).
// Run: build/06_tma_1d/tma_1d [--bench] [--variant=NAME] [--size=64M]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-the-tensor-memory-accelerator-tma
//        (4.11.2) and #using-tma-to-transfer-one-dimensional-arrays (4.11.2.1, prefetch 4.11.2.1.1)
// API: cuda::memcpy_async https://nvidia.github.io/cccl/libcudacxx/extended_api/asynchronous_operations/memcpy_async.html
//      cuda::device::memcpy_async_tx https://nvidia.github.io/cccl/libcudacxx/extended_api/asynchronous_operations/memcpy_async_tx.html
//      cuda::device::barrier_arrive_tx https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/barrier/barrier_arrive_tx.html
//      cuda::ptx::cp_async_bulk (+ commit_group, wait_group) https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/cp_async_bulk.html
//      cuda::ptx::mbarrier_arrive_expect_tx, fence_proxy_async, fence_mbarrier_init
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/mbarrier_arrive.html
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/fence.html
//      PTX https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk
//          (same page: ...-cp-async-bulk-commit-group, ...-cp-async-bulk-wait-group,
//          #parallel-synchronization-and-communication-instructions-mbarrier-expect-tx, ...-membar for fence.proxy.async)
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"

using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ cuda::barrier has a constructor that must not run (shared memory is not
// initialised at launch); init() does the work. Silence the warning about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr std::size_t kBulkAlignBytes = 16;  // cp.async.bulk: addresses and sizes in 16-byte units
constexpr int kTileElems = 1024;             // single-stage variants: the guide's 4 KiB buffer
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);
constexpr std::size_t kStageBytes = 32 * 1024;  // prefetch variants: one 32 KiB tile per stage
constexpr std::size_t kMaxTxBytes = (1u << 20) - 1;  // an mbarrier phase counts at most this many bytes
static_assert(kTileBytes % kBulkAlignBytes == 0 && kStageBytes % kBulkAlignBytes == 0,
              "bulk copy sizes must be multiples of 16 bytes");
static_assert(kTileBytes <= kMaxTxBytes && kStageBytes <= kMaxTxBytes,
              "one barrier phase cannot count more than 2^20 - 1 transaction bytes");

// ---- The problem: read, modify, write back ------------------------------------------------

/// [modify]
// Every element is replaced by a function of itself (the guide adds 1). 3x + 1 modulo 2^32 is
// a bijection, so a tile copied from or to the wrong place cannot produce the right bits.
__host__ __device__ inline std::uint32_t modify(std::uint32_t x) { return 3u * x + 1u; }
/// [modify]

std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = modify(in[i]);
  return out;
}

/// [tiles]
// An array of num_bytes is cut into tiles of tile_bytes; the last tile holds what is left.
// With num_bytes a multiple of 16 (a host rule below), every tile is a legal bulk copy.
__host__ __device__ constexpr std::size_t num_tiles_of(std::size_t num_bytes, std::size_t tile_bytes) {
  return (num_bytes + tile_bytes - 1) / tile_bytes;
}
__host__ __device__ constexpr std::uint32_t tile_bytes_of(std::size_t tile, std::size_t num_bytes,
                                                          std::size_t tile_bytes) {
  const std::size_t left = num_bytes - tile * tile_bytes;
  return static_cast<std::uint32_t>(left < tile_bytes ? left : tile_bytes);
}
/// [tiles]

/// [rules]
// The rules of cp.async.bulk that depend on run-time values, checked before anything reaches
// the GPU: a bulk copy that breaks them is undefined behaviour, not a slower fallback. The
// shared-memory side (16-byte aligned buffers, 8-byte aligned barriers) is fixed at compile time.
std::optional<std::string> bulk_copy_problem(const void* gmem_in, const void* gmem_out, std::size_t num_bytes) {
  const auto in = reinterpret_cast<std::uintptr_t>(gmem_in), out = reinterpret_cast<std::uintptr_t>(gmem_out);
  if (num_bytes % kBulkAlignBytes != 0) {
    return "bulk copies move whole 16-byte units: the array must hold a multiple of 4 uint32 elements (got " +
           std::to_string(num_bytes / sizeof(std::uint32_t)) + " elements, " + std::to_string(num_bytes) + " bytes)";
  }
  if (in % kBulkAlignBytes != 0) {
    return "bulk copies need 16-byte aligned global addresses: the input is " + std::to_string(in % kBulkAlignBytes) +
           " bytes past a 16-byte boundary";
  }
  if (out % kBulkAlignBytes != 0) {
    return "bulk copies need 16-byte aligned global addresses: the output is " +
           std::to_string(out % kBulkAlignBytes) + " bytes past a 16-byte boundary";
  }
  if (in != out && in < out + num_bytes && out < in + num_bytes) {
    return "the output may be the input itself (in place) but must not partly overlap it: one block's store "
           "could overwrite a tile that another block has not loaded yet";
  }
  return std::nullopt;
}

// The prefetch kernels' dynamic shared memory must fit the per-block opt-in maximum.
std::optional<std::string> smem_plan_problem(std::size_t smem_bytes, std::size_t optin_bytes) {
  if (smem_bytes <= optin_bytes) return std::nullopt;
  return "the prefetch ring needs " + std::to_string(smem_bytes) +
         " bytes of shared memory per block; this GPU allows " + std::to_string(optin_bytes) +
         " (cudaDevAttrMaxSharedMemoryPerBlockOptin): use fewer or smaller stages";
}

void require_bulk_copy_rules(const void* gmem_in, const void* gmem_out, std::size_t num_bytes) {
  if (std::optional<std::string> broken = bulk_copy_problem(gmem_in, gmem_out, num_bytes)) {
    throw course::UsageError(*broken);
  }
}
/// [rules]

// ---- Device building blocks ------------------------------------------------------------------

/// [elect]
// TUTORIAL: a bulk copy moves a whole tile, so exactly one thread of the block issues it.
// `threadIdx.x == 0` selects one thread, but the compiler cannot tell that only one lane of
// the warp is active inside the branch; the bulk-copy instruction takes its operands from the
// warp's uniform registers, so it may wrap the instruction in a loop over the active lanes.
// elect.sync makes the choice a warp-wide instruction whose result is known to pick one lane
// (the same one every time). The shuffle gives a warp index that is uniform by construction.
__device__ inline bool is_elected_leader() {
  const unsigned warp_idx = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  if (warp_idx != 0) return false;
  std::uint32_t elected = 0;  // written inline: CCCL 3.0 has no cuda::ptx::elect_sync
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(elected));
  return elected != 0;
}
/// [elect]

// Every thread modifies 16-byte vectors of the tile in place, in shared memory.
__device__ void modify_tile(std::uint32_t* smem_tile, std::uint32_t tile_bytes) {
  uint4* smem_vecs = reinterpret_cast<uint4*>(smem_tile);
  for (unsigned v = threadIdx.x; v < tile_bytes / sizeof(uint4); v += blockDim.x) {
    uint4 x = smem_vecs[v];
    x = {modify(x.x), modify(x.y), modify(x.z), modify(x.w)};
    smem_vecs[v] = x;
  }
}

/// [write_back]
// Shared -> global with one bulk store. Returns when the store has *read* the tile: the
// caller may overwrite it (the leader's next load) right away.
__device__ void write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile, std::uint32_t bytes) {
  // TUTORIAL: the tile was written with ordinary stores (the generic proxy); the bulk store
  // reads it through the async proxy. Each writing thread orders its own writes before later
  // async-proxy accesses with a proxy fence, and the block sync then orders every thread's
  // fence before the leader issues the store.
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // my writes to the tile become visible to the async proxy
  __syncthreads();  // every thread has written and fenced its part before the store is issued
  if (is_elected_leader()) {
    cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, gmem_dst, smem_tile, bytes);
    cuda::ptx::cp_async_bulk_commit_group();  // the store becomes one bulk async-group of this thread
    // Only the issuing thread can wait for its bulk groups. ".read": the group has finished
    // reading shared memory (the tile may be reused); its writes to global memory may still
    // be in flight, and they are visible to everyone once the kernel has ended.
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  }
}
/// [write_back]

// ---- Single-stage kernels: load a tile, modify it, write it back --------------------------

/// [memcpy_async_load]
// kAlign is what the call tells the library: 16 or 4 (cuda::aligned_size_t<kAlign>), or 1: char
// pointers and a plain byte count, i.e. nothing. The call is the per-thread overload (no group):
// the calling thread alone copies all `bytes`.
template <std::size_t kAlign>
__device__ void load_tile(std::uint32_t* smem_tile, const std::uint32_t* gmem_src, std::uint32_t bytes,
                          block_barrier& full_bar) {
  if constexpr (kAlign == 16 || kAlign == 4) {
    cuda::memcpy_async(smem_tile, gmem_src, cuda::aligned_size_t<kAlign>(bytes), full_bar);
  } else {
    cuda::memcpy_async(reinterpret_cast<char*>(smem_tile), reinterpret_cast<const char*>(gmem_src),
                       std::size_t{bytes}, full_bar);
  }
}
/// [memcpy_async_load]

// One block-scope barrier per block in global memory, for the variant that shows what the
// library does when the barrier is not in shared memory (a cuda::barrier has no constexpr
// constructor, so this is raw storage that init() turns into a barrier).
constexpr unsigned kMaxGlobalBarriers = 4096;
__device__ alignas(block_barrier) unsigned char gmem_barrier_storage[kMaxGlobalBarriers][sizeof(block_barrier)];

/// [memcpy_async]
template <std::size_t kAlign, bool kGlobalBarrier>
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];  // bulk copies need 16-byte aligned shared memory
  __shared__ block_barrier smem_bar;
  block_barrier& full_bar =
      kGlobalBarrier ? *reinterpret_cast<block_barrier*>(gmem_barrier_storage[blockIdx.x]) : smem_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile; the copy adds its bytes on top
    // The TMA completes bytes on the barrier through the async proxy: make the init visible to it.
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();  // nobody arrives or copies before the barrier's initialisation is visible

  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    const std::size_t first = tile * kTileElems;
    // TUTORIAL: with aligned_size_t<16> and this barrier in shared memory, the library issues
    // one bulk copy and adds `bytes` to the barrier's expected transactions (expect-tx), without
    // arriving. The phase completes when all blockDim.x threads have arrived *and* the bytes
    // have landed, so the leader's own arrival, below, cannot come too early.
    if (is_elected_leader()) load_tile<kAlign>(smem_tile, gmem_in + first, bytes, full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // the tile has landed
    // A barrier in global memory is built from atomics (release/acquire): they order the copy
    // correctly, but racecheck does not recognise them as synchronisation; a block sync it does.
    if constexpr (kGlobalBarrier) __syncthreads();
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + first, smem_tile, bytes);
  }
}
/// [memcpy_async]

/// [memcpy_async_tx]
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_tx_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread

  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    const std::size_t first = tile * kTileElems;
    block_barrier::arrival_token token;
    if (is_elected_leader()) {
      // Always a bulk copy (alignment below 16 does not compile); it does not tell the barrier
      // how many bytes to expect: the leader's arrival does, in the same instruction.
      cuda::device::memcpy_async_tx(smem_tile, gmem_in + first, cuda::aligned_size_t<16>(bytes), full_bar);
      token = cuda::device::barrier_arrive_tx(full_bar, 1, bytes);  // arrive once and expect `bytes` more
    } else {
      token = full_bar.arrive();  // an arrival without bytes
    }
    course::bounded_wait(full_bar, std::move(token), {"full", 0, phase});  // all arrived, all bytes landed
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + first, smem_tile, bytes);
  }
}
/// [memcpy_async_tx]

/// [cp_async_bulk]
__global__ void __launch_bounds__(kBlockThreads)
    cp_async_bulk_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;  // a raw mbarrier: 8 bytes of shared memory, 8-byte aligned
  if (is_elected_leader()) {
    cuda::ptx::mbarrier_init(&full_bar, 1);  // one arrival per phase: the leader's, which carries the bytes
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread

  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes); tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    const std::size_t first = tile * kTileElems;
    if (is_elected_leader()) {
      // TUTORIAL: announce first, then copy. The phase completes when the pending arrival
      // count and the transaction count are both zero; arriving with expect-tx leaves the
      // arrivals at zero and the transactions at +bytes, and the copy counts them down.
      (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                 cuda::ptx::space_shared, &full_bar, bytes);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem_tile, gmem_in + first, bytes,
                               &full_bar);
    }
    // The other threads never arrive: they only wait for the phase by its parity.
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + first, smem_tile, bytes);
  }
}
/// [cp_async_bulk]

// ---- Multi-stage prefetch -----------------------------------------------------------------

/// [cursor]
// Where the next wait happens: which stage, and the parity of the phase that the stage's
// barrier completes when its tile has landed. Every kStages tiles the ring wraps and each
// barrier has completed one more phase, so the parity flips.
template <int kStages>
struct StageCursor {
  static_assert(kStages >= 1, "a ring needs at least one stage");
  int stage = 0;
  std::uint32_t phase = 0;
  __host__ __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};
/// [cursor]

// Dynamic shared memory of the prefetch kernel: kStages tiles, then one 8-byte barrier per stage.
constexpr std::size_t prefetch_smem_bytes(int stages, std::size_t stage_bytes) {
  return stages * stage_bytes + stages * sizeof(std::uint64_t);
}

/// [prefetch]
template <int kStages, std::size_t kStageTileBytes>
__global__ void __launch_bounds__(kBlockThreads)
    prefetch_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes) {
  static_assert(kStageTileBytes % kBulkAlignBytes == 0, "every stage's tile must start 16-byte aligned");
  static_assert(kStageTileBytes <= kMaxTxBytes, "one barrier phase counts at most 2^20 - 1 bytes");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                    // [kStages][kStageTileBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageTileBytes);  // [kStages]
  constexpr std::size_t kStageElems = kStageTileBytes / sizeof(std::uint32_t);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);

  // The leader announces the bytes and starts the load of `tile` into `stage`.
  auto load = [&](std::size_t tile, int stage) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               &full_bar[stage], bytes);  // the only arrival, with the tile's bytes
    cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem_tiles + stage * kStageTileBytes,
                             gmem_in + tile * kStageElems, bytes, &full_bar[stage]);
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full_bar[s], 1);  // one arrival per phase: the leader's
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);  // visible to the async proxy
    // Prime the ring: this block's first kStages tiles, one per stage.
    for (int s = 0; s < kStages; ++s) {
      if (blockIdx.x + s * gridDim.x < num_tiles) load(blockIdx.x + s * gridDim.x, s);
    }
  }
  __syncthreads();  // the initialised barriers are visible before anyone waits on them

  StageCursor<kStages> cursor;
  for (std::size_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, cursor.advance()) {
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageTileBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    modify_tile(smem_tile, bytes);
    // TUTORIAL: write_back_tile holds a block sync that every thread reaches after modifying
    // the stage, and the leader returns from it only once the store has read the stage. So
    // when the leader refills the stage below, every thread is done with it and has already
    // waited for its current phase: that sync does the job of an "empty" barrier. Meanwhile
    // the tiles of the other kStages - 1 stages are in flight.
    write_back_tile(gmem_out + tile * kStageElems, smem_tile, bytes);
    const std::size_t refill = tile + kStages * gridDim.x;
    if (refill < num_tiles && is_elected_leader()) load(refill, cursor.stage);  // completes the stage's next phase
  }
}
/// [prefetch]

/// [in_order]
// The same ring, but the tiles are not dealt out in advance (tile = block + k * grid). The
// leader takes the next untaken tile from a counter in global memory each time it fills a
// stage, and stores its index beside the stage for the block to read after the wait. Tiles are
// then taken in order: at any moment the tiles in flight, over all blocks, are nearly
// consecutive in memory, however far some blocks run ahead of others. With the fixed deal,
// blocks drift apart and their tiles in flight spread over an ever wider span.
template <int kStages, std::size_t kStageTileBytes>
__global__ void __launch_bounds__(kBlockThreads)
    in_order_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_bytes,
                    unsigned long long* next_tile) {
  // TUTORIAL: a stage's tile index is written by the leader after one block sync and read by
  // every thread after the stage's wait; with two stages or more, another block sync (the
  // next write-back's) lies between the two, so the plain shared variable is safe.
  static_assert(kStages >= 2, "the tile index of a stage is ordered by the block sync of the next stage");
  static_assert(kStageTileBytes % kBulkAlignBytes == 0 && kStageTileBytes <= kMaxTxBytes, "see prefetch_kernel");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* smem_tiles = smem;                                                    // [kStages][kStageTileBytes]
  std::uint64_t* full_bar = reinterpret_cast<std::uint64_t*>(smem + kStages * kStageTileBytes);  // [kStages]
  __shared__ unsigned long long stage_tile[kStages];  // which tile each stage holds (>= num_tiles: none left)
  constexpr std::size_t kStageElems = kStageTileBytes / sizeof(std::uint32_t);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);

  // The leader takes the next tile and starts its load; when none is left it still completes
  // the stage's phase (a plain arrival), so that the block wakes up and sees the end.
  auto take_and_load = [&](int stage) {
    const unsigned long long tile = atomicAdd(next_tile, 1ull);
    stage_tile[stage] = tile;
    if (tile < num_tiles) {
      const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
      (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                                 &full_bar[stage], bytes);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem_tiles + stage * kStageTileBytes,
                               gmem_in + tile * kStageElems, bytes, &full_bar[stage]);
    } else {
      (void)cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                       &full_bar[stage]);
    }
  };

  if (is_elected_leader()) {
    for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full_bar[s], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    for (int s = 0; s < kStages; ++s) take_and_load(s);
  }
  __syncthreads();  // barriers initialised, first tile indices written

  // Each block's tiles increase in ring order, so once a stage says "none left", every later
  // stage does too: no loaded tile is ever skipped.
  for (StageCursor<kStages> cursor;; cursor.advance()) {
    course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase, {"full", cursor.stage, cursor.phase});
    const unsigned long long tile = stage_tile[cursor.stage];
    if (tile >= num_tiles) break;  // the same answer in every thread
    std::uint32_t* smem_tile = reinterpret_cast<std::uint32_t*>(smem_tiles + cursor.stage * kStageTileBytes);
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kStageTileBytes);
    modify_tile(smem_tile, bytes);
    write_back_tile(gmem_out + tile * kStageElems, smem_tile, bytes);
    if (is_elected_leader()) take_and_load(cursor.stage);
  }
}
/// [in_order]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// Single-stage kernels: enough resident blocks to fill every SM, never more than tiles.
template <auto kKernel>
void launch_tiles(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);  // nothing that breaks a rule reaches the GPU
  if (num_bytes == 0) return;
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kKernel, kBlockThreads, 0));
  std::size_t grid = std::min<std::size_t>(static_cast<std::size_t>(num_sms) * blocks_per_sm,
                                           num_tiles_of(num_bytes, kTileBytes));
  grid = std::min<std::size_t>(grid, kMaxGlobalBarriers);  // one global-memory barrier per block at most
  kKernel<<<static_cast<unsigned>(grid), kBlockThreads>>>(gmem_in, gmem_out, num_bytes);
  COURSE_CHECK_LAUNCH();
}

// The ring kernels need more than 48 KiB of dynamic shared memory: an explicit opt-in, after
// checking the plan against what the device allows. Returns the grid: as many blocks as are
// resident at once, never more than tiles.
template <auto kKernel>
unsigned ring_grid(std::size_t smem_bytes, std::size_t num_tiles) {
  int device = 0, num_sms = 0, optin = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (std::optional<std::string> broken = smem_plan_problem(smem_bytes, optin)) throw course::UsageError(*broken);
  COURSE_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kKernel, kBlockThreads, smem_bytes));
  return static_cast<unsigned>(std::min<std::size_t>(static_cast<std::size_t>(num_sms) * blocks_per_sm, num_tiles));
}

// The counter of taken tiles lives in global memory and starts at zero on every launch: the
// reset is a memset on the same stream, ordered before the kernel. (Two launches running at
// once would share it: each launch would need its own counter.)
__device__ unsigned long long g_next_tile;

// A ring of kStages stages: tiles dealt out in advance (prefetch_kernel), or taken in order
// from the counter (in_order_kernel).
template <int kStages, std::size_t kStageTileBytes, bool kInOrder = false>
void launch_ring(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);
  if (num_bytes == 0) return;
  constexpr std::size_t smem_bytes = prefetch_smem_bytes(kStages, kStageTileBytes);
  const std::size_t num_tiles = num_tiles_of(num_bytes, kStageTileBytes);
  if constexpr (kInOrder) {
    constexpr auto kernel = in_order_kernel<kStages, kStageTileBytes>;
    const unsigned grid = ring_grid<kernel>(smem_bytes, num_tiles);
    void* counter = nullptr;
    COURSE_CHECK(cudaGetSymbolAddress(&counter, g_next_tile));
    COURSE_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long)));
    kernel<<<grid, kBlockThreads, smem_bytes>>>(gmem_in, gmem_out, num_bytes, static_cast<unsigned long long*>(counter));
  } else {
    constexpr auto kernel = prefetch_kernel<kStages, kStageTileBytes>;
    kernel<<<ring_grid<kernel>(smem_bytes, num_tiles), kBlockThreads, smem_bytes>>>(gmem_in, gmem_out, num_bytes);
  }
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems);

struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
  std::size_t tile_bytes;  // bytes per bulk copy (tests size their problems with it)
};
const Variant kVariants[] = {
    {"memcpy_async", "cuda::memcpy_async(aligned_size_t<16>), shared-memory barrier: the library's bulk copy",
     &launch_tiles<memcpy_async_kernel<16, false>>, kTileBytes},
    {"memcpy_async_tx", "cuda::device::memcpy_async_tx + barrier_arrive_tx: the leader arrives with the bytes",
     &launch_tiles<memcpy_async_tx_kernel>, kTileBytes},
    {"cp_async_bulk", "cuda::ptx::cp_async_bulk, raw mbarrier of count 1, arrive_expect_tx, parity wait",
     &launch_tiles<cp_async_bulk_kernel>, kTileBytes},
    {"memcpy_async_global_barrier", "the first call, barrier in global memory: LDGSTS + cp.async.wait_all",
     &launch_tiles<memcpy_async_kernel<16, true>>, kTileBytes},
    {"memcpy_async_align4", "the first call with aligned_size_t<4>: one thread issues 4-byte LDGSTS",
     &launch_tiles<memcpy_async_kernel<4, false>>, kTileBytes},
    {"memcpy_async_bytes", "the first call with char pointers, plain size: one thread copies bytes",
     &launch_tiles<memcpy_async_kernel<1, false>>, kTileBytes},
    {"prefetch_1_stage", "ring of 1 x 32 KiB: a block's next load waits for its store",
     &launch_ring<1, kStageBytes>, kStageBytes},
    {"prefetch_2_stages", "ring of 2 x 32 KiB, one barrier per stage, explicit parity",
     &launch_ring<2, kStageBytes>, kStageBytes},
    {"prefetch_3_stages", "ring of 3 x 32 KiB: two blocks per SM on an H100",
     &launch_ring<3, kStageBytes>, kStageBytes},
    {"prefetch_4_stages", "ring of 4 x 32 KiB: 128 KiB of loads in flight, one block per SM",
     &launch_ring<4, kStageBytes>, kStageBytes},
    {"in_order_3_stages", "ring of 3 x 32 KiB, tiles taken in order from a global counter",
     &launch_ring<3, kStageBytes, true>, kStageBytes},
    {"in_order_4_stages", "ring of 4 x 32 KiB, tiles taken in order from a global counter",
     &launch_ring<4, kStageBytes, true>, kStageBytes},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

// Input, expected output and device buffers for an array of `num_elems` uint32 elements.
struct Problem {
  explicit Problem(std::size_t num_elems)
      : num_elems(num_elems), host_in(num_elems), gmem_in(num_elems), gmem_out(num_elems) {
    course::fill_pattern(host_in);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
  }
  std::size_t num_elems;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  variant.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / sizeof(std::uint32_t));
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

// What the host checks and how the ring's waits go, printed before the GPU is needed.
void print_host_model(std::ostream& out) {
  out << "bulk-copy rules checked on the host (each breach is one line, nothing is launched):\n"
      << "  global addresses 16-byte aligned, sizes a multiple of 16 bytes, output = input or disjoint;\n"
      << "  shared buffers 16-byte aligned and barriers 8-byte aligned (compile time), at most "
      << kMaxTxBytes << " bytes per barrier phase\n"
      << "  example: " << *bulk_copy_problem(nullptr, nullptr, 4100) << '\n'
      << "prefetch ring of 4 stages, stage/parity of the waits for tiles 0..9 of a block: ";
  StageCursor<4> cursor;
  for (int k = 0; k < 10; ++k, cursor.advance()) out << cursor.stage << '/' << cursor.phase << ' ';
  out << '\n';
  // 9.0 has 228 KiB of shared memory per SM and reserves 1 KiB of it per block.
  constexpr std::size_t kSmemPerSm = 228 * 1024, kReservedPerBlock = 1024;
  for (int stages = 1; stages <= 4; ++stages) {
    const std::size_t smem = prefetch_smem_bytes(stages, kStageBytes);
    const std::size_t blocks = kSmemPerSm / (smem + kReservedPerBlock);
    out << "  ring of " << stages << " x " << kStageBytes / 1024 << " KiB: " << smem << " bytes per block, " << blocks
        << (blocks == 1 ? " block" : " blocks") << " per SM on 9.0, up to " << blocks * stages * kStageBytes / 1024
        << " KiB of loads in flight per SM\n";
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "tma_1d";
  info.title = "06 tma_1d: one-dimensional bulk copies (TMA), read-modify-write";
  info.explanation =
      "Every element x of a uint32 array becomes 3x + 1. Tiles go global -> shared with one bulk copy\n"
      "issued by one elected thread (cuda::memcpy_async, cuda::device::memcpy_async_tx, cuda::ptx::cp_async_bulk),\n"
      "are modified in shared memory, and go back with one bulk store after a proxy fence. Three more variants\n"
      "show what cuda::memcpy_async becomes when a bulk copy is not allowed, and a ring of 1 to 4 stages\n"
      "prefetches 32 KiB tiles with one barrier per stage.";
  info.requirement = {9, 0, false, "cp.async.bulk (TMA)"};
  info.verify_bytes = (8u << 20) + 3 * kBulkAlignBytes;  // a ragged end: the last tile holds 48 bytes
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kBulkAlignBytes, "--size must be a multiple of 16 bytes (bulk copies move 16-byte units)");
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
