// 06_tma_1d, further lesson: spellings from the guide's TMA section that tma_1d.cu only names.
//
// What you learn: cuda::device::memcpy_async_tx, a bulk copy that announces nothing, with the
// leader's arrival carrying the bytes (barrier_arrive_tx); expect-tx *without* arriving
// (cuda::device::barrier_expect_tx), then a plain arrival from every thread, and why the expect-tx
// must come before the phase could complete; the two waits for a bulk store: ".read" (the shared
// source may be reused) and the full one (the writes are done and visible to the issuing thread,
// which reads them back).
// What changed from tma_1d.cu: the same problem, tiles and write-back; the library's other call.
// Hardware: compute capability 9.0+ (cp.async.bulk, mbarrier transaction counts, elect.sync).
// Run: build/06_tma_1d/bulk_spellings [--bench] [--variant=NAME] [--size=8M]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//        (4.11.2.1: using TMA to transfer one-dimensional arrays)
// API: cuda::device::memcpy_async_tx, barrier_arrive_tx, barrier_expect_tx:
//        https://nvidia.github.io/cccl/libcudacxx/extended_api/
//      cuda::ptx::cp_async_bulk_wait_group(_read): https://nvidia.github.io/cccl/libcudacxx/ptx/
//      PTX: https://docs.nvidia.com/cuda/parallel-thread-execution/
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/elect.cuh"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"
// the problem (modify, reference), the rules of a bulk copy, the tile plan
#include "tma_1d_model.hpp"

namespace ptx = cuda::ptx;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;
// a __shared__ cuda::barrier is set up by init()
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 1024;  // single-stage kernels: the guide's 4 KiB buffer
constexpr std::size_t kTileBytes = kTileElems * sizeof(std::uint32_t);
static_assert(is_legal_tile(kTileBytes), "a tile: 16-byte units, < 1 MiB per phase");

// ---- Device building blocks (as in tma_1d.cu) --------------------------------------------------
// One lane of warp 0, elected with elect.sync: tma_1d.cu teaches why; its test checks this copy
// elects alike.
__device__ inline bool is_elected_leader() { return course::elect_tma_leader(); }

// Every thread modifies 16-byte vectors of the tile in place, in shared memory.
__device__ void modify_tile(std::uint32_t* smem_tile, std::uint32_t tile_bytes) {
  uint4* smem_vecs = reinterpret_cast<uint4*>(smem_tile);
  for (unsigned v = threadIdx.x; v < tile_bytes / sizeof(uint4); v += blockDim.x) {
    const uint4 x = smem_vecs[v];
    smem_vecs[v] = {modify(x.x), modify(x.y), modify(x.z), modify(x.w)};
  }
}

/// [read_back]
// The words of a stored tile that differ between its global destination and its shared source.
__device__ std::uint32_t count_differing(const std::uint32_t* gmem, const std::uint32_t* smem,
                                         std::uint32_t bytes) {
  std::uint32_t differing = 0;
#pragma unroll 4
  for (std::uint32_t v = 0; v < bytes / sizeof(uint4); ++v) {
    const uint4 g = reinterpret_cast<const uint4*>(gmem)[v],
                s = reinterpret_cast<const uint4*>(smem)[v];
    differing += (g.x != s.x) + (g.y != s.y) + (g.z != s.z) + (g.w != s.w);
  }
  return differing;
}
/// [read_back]

/// [write_back]
// Shared -> global with one bulk store, as in tma_1d.cu; the issuing thread then waits in one of
// two ways.
template <bool kReadBack>
__device__ std::uint32_t write_back_tile(std::uint32_t* gmem_dst, const std::uint32_t* smem_tile,
                                         std::uint32_t bytes) {
  // my writes to the tile become visible to the async proxy
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();  // every thread has written and fenced its part before the store is issued
  std::uint32_t differing = 0;
  if (is_elected_leader()) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_dst, smem_tile, bytes);
    ptx::cp_async_bulk_commit_group();  // the store becomes one bulk async-group of this thread
    if constexpr (!kReadBack) {
      // ".read": the tile has been read, may be refilled
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
    } else {
      // TUTORIAL: without ".read" the wait returns once the store's writes to global memory are
      // complete and visible to this thread (and the tile has been read). wait_group_read returns
      // once the tile has been read, the writes maybe still on their way: a read-back there could
      // see the old bytes. The guarantee is this thread's alone; others need more synchronisation.
      ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
      // the tile is intact: only I refill it
      differing = count_differing(gmem_dst, smem_tile, bytes);
      // my reads of the tile come before the next load writes it
      ptx::fence_proxy_async(ptx::space_shared);
    }
  }
  return differing;
}
/// [write_back]

/// [memcpy_async_tx]
__global__ void __launch_bounds__(kBlockThreads)
    memcpy_async_tx_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                           std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    init(&full_bar, blockDim.x);  // every thread arrives once per tile
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes);
       tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    block_barrier::arrival_token token;
    if (is_elected_leader()) {
      // Always a bulk copy; it announces nothing: the leader's arrival announces the bytes.
      cuda::device::memcpy_async_tx(smem_tile, gmem_in + tile * kTileElems,
                                    cuda::aligned_size_t<16>(bytes), full_bar);
      token = cuda::device::barrier_arrive_tx(full_bar, 1, bytes);  // arrive, expect `bytes`
    } else {
      token = full_bar.arrive();  // an arrival without bytes
    }
    course::bounded_wait(full_bar, std::move(token), {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    write_back_tile<false>(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [memcpy_async_tx]

/// [expect_tx_then_arrive]
__global__ void __launch_bounds__(kBlockThreads)
    expect_tx_then_arrive_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                 std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ block_barrier full_bar;
  if (threadIdx.x == 0) {
    // every thread arrives once per tile, the leader too; the bytes come on top
    init(&full_bar, blockDim.x);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes);
       tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    if (is_elected_leader()) {
      // TUTORIAL: expect-tx alone raises the phase's transaction count by `bytes`, without
      // arriving. It must happen while the phase cannot complete yet: here this thread's own
      // arrival, below, is still missing, whatever the others have done. Were the leader to
      // arrive first, the last arrival could find the count at zero and complete the phase before
      // a byte was announced: the block would read a tile that is not there, and the bytes would
      // count in the next phase. A phase counts at most 2^20 - 1 bytes; the count may dip below
      // zero when bytes land before their expect-tx: "copy, then expect" is legal.
      cuda::device::barrier_expect_tx(full_bar, bytes);  // announce, without arriving
      cuda::device::memcpy_async_tx(smem_tile, gmem_in + tile * kTileElems,
                                    cuda::aligned_size_t<16>(bytes), full_bar);
    }
    // Every thread arrives plainly, the leader after its expect-tx; the phase needs all, and bytes.
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});
    modify_tile(smem_tile, bytes);
    write_back_tile<false>(gmem_out + tile * kTileElems, smem_tile, bytes);
  }
}
/// [expect_tx_then_arrive]

// What the issuing threads of wait_group read back, over the whole grid; zeroed before each
// verification.
// words read back; of them, differing from the tile
struct ReadbackTally {
  unsigned long long words, mismatches;
};
__device__ ReadbackTally gmem_readback;

/// [wait_group]
__global__ void __launch_bounds__(kBlockThreads)
    wait_group_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                      std::size_t num_bytes) {
  __shared__ alignas(16) std::uint32_t smem_tile[kTileElems];
  __shared__ std::uint64_t full_bar;  // a raw mbarrier, as in tma_1d.cu's cp_async_bulk
  if (is_elected_leader()) {
    // one arrival per phase: the leader's, which carries the bytes
    ptx::mbarrier_init(&full_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the async proxy
  }
  __syncthreads();  // the initialised barrier is visible to every thread
  // this block's tally, kept by every thread, added by the leader
  unsigned long long read_back = 0, differing = 0;
  std::uint32_t phase = 0;
  for (std::size_t tile = blockIdx.x; tile < num_tiles_of(num_bytes, kTileBytes);
       tile += gridDim.x, phase ^= 1u) {
    const std::uint32_t bytes = tile_bytes_of(tile, num_bytes, kTileBytes);
    // the phase's only arrival, carrying the tile's bytes; then the copy
    if (is_elected_leader()) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                           &full_bar, bytes);
      ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_tile,
                         gmem_in + tile * kTileElems, bytes, &full_bar);
    }
    course::bounded_wait_parity(&full_bar, phase, {"full", 0, phase});  // the tile has landed
    modify_tile(smem_tile, bytes);
    // 0 outside the leader
    differing += write_back_tile<true>(gmem_out + tile * kTileElems, smem_tile, bytes);
    read_back += bytes / sizeof(std::uint32_t);
  }
  if (is_elected_leader() && read_back > 0) {  // one update per block, not per tile
    atomicAdd(&gmem_readback.words, read_back);
    atomicAdd(&gmem_readback.mismatches, differing);
  }
}
/// [wait_group]

// ---- Launchers and the variant table -------------------------------------------------------

// A persistent grid over the tiles (as in tma_1d.cu): as many blocks as are resident, never more
// than tiles.
template <class Kernel, class... Extra>
void launch_resident(Kernel kernel, std::size_t smem_bytes, std::size_t tile_bytes,
                     const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems,
                     Extra... extra) {
  const std::size_t num_bytes = num_elems * sizeof(std::uint32_t);
  // nothing that breaks a rule reaches the GPU
  require_bulk_copy_rules(gmem_in, gmem_out, num_bytes);
  if (num_bytes == 0) return;
  int device = 0, optin = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (std::optional<std::string> broken = smem_plan_problem(smem_bytes, optin))
    throw course::UsageError(*broken);
  // The kernel opted in above 48 KiB, then blocks per SM x SMs (course/in_flight.hpp).
  const std::size_t resident =
      course::resident_blocks((const void*)kernel, kBlockThreads, smem_bytes);
  const unsigned grid =
      static_cast<unsigned>(std::min(resident, num_tiles_of(num_bytes, tile_bytes)));
  kernel<<<grid, kBlockThreads, smem_bytes>>>(gmem_in, gmem_out, num_bytes, extra...);
  COURSE_CHECK_LAUNCH();
}

template <auto kKernel>
void launch_single_stage(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                         std::size_t num_elems) {
  launch_resident(kKernel, 0, kTileBytes, gmem_in, gmem_out, num_elems);
}

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_elems);
  std::size_t tile_bytes;  // bytes per bulk copy (tests size their problems with it)
};
const Variant kVariants[] = {
    {"memcpy_async_tx",
     "cuda::device::memcpy_async_tx + barrier_arrive_tx: the leader's arrival has the bytes",
     &launch_single_stage<memcpy_async_tx_kernel>, kTileBytes},
    {"expect_tx_then_arrive",
     "leader: barrier_expect_tx (no arrival) + memcpy_async_tx; every thread: plain arrive()",
     &launch_single_stage<expect_tx_then_arrive_kernel>, kTileBytes},
    {"wait_group",
     "bulk store waited for without .read; the issuing thread reads its tile back from global "
     "memory",
     &launch_single_stage<wait_group_kernel>, kTileBytes},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct Problem {  // input, expected output and device buffers for `num_elems` uint32 elements
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

// Poison, launch, synchronise, compare bit-exactly (guard bands, and wait_group's own read-back,
// included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  const ReadbackTally zero{};
  COURSE_CHECK(cudaMemcpyToSymbol(gmem_readback, &zero, sizeof zero));
  problem.gmem_out.poison();
  variant.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_elems);
  COURSE_CHECK(cudaDeviceSynchronize());
  course::Comparison result = problem.gmem_out.check(problem.expected);
  ReadbackTally tally{};
  COURSE_CHECK(cudaMemcpyFromSymbol(&tally, gmem_readback, sizeof tally));
  if (tally.mismatches > 0) {
    result.mismatches += tally.mismatches;
    result.first +=
        "  read back after the full wait: " + std::to_string(tally.mismatches) + " words differ\n";
  }
  return result;
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

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "bulk_spellings";
  info.title =
      "06 bulk_spellings: memcpy_async_tx, expect-tx without arriving, the two waits of a bulk "
      "store";
  info.explanation =
      "tma_1d's x -> 3x + 1: a bulk copy that announces nothing, the leader's arrival carrying the "
      "bytes;\n"
      "bytes announced with barrier_expect_tx, then plain arrivals; a bulk store waited for "
      "without .read\n"
      "and read back by its issuing thread.";
  info.requirement = {9, 0, false, "cp.async.bulk (TMA)"};
  info.verify_bytes = (8u << 20) + 3 * kBulkAlignBytes;  // a 48-byte last tile
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kBulkAlignBytes, "--size must be a multiple of 16 bytes (bulk copies move 16-byte units)");
  info.host_model = [](std::ostream& out) {
    out << "bulk-copy rules checked on the host: " << *bulk_copy_problem(nullptr, nullptr, 4100)
        << '\n'
        << "expect-tx without arriving: before the issuing thread's own arrival, at most "
        << kMaxTxBytes << " bytes per phase\n";
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
