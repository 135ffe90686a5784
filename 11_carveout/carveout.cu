// 11_carveout: the split of each SM's unified data cache between L1 and shared memory.
//
// What you learn: how a kernel states its preferred shared-memory carveout (a percentage or
// one of three enums), which capacities a percentage can select on each architecture and how
// it rounds up, how to see what the driver granted (the runtime reports only the preference;
// occupancy shows the grant), what a small carveout costs a shared-memory copy and what a
// large one costs an L1-bound kernel, hint (cudaFuncSetAttribute) versus cudaFuncSetCacheConfig
// when kernels with opposite wishes alternate, and the opt-in for more than 48 KiB per block.
// What changed from 02: the copy is 02's cg::memcpy_async batch copy, unchanged except that its
// batch lives in dynamic shared memory; what changes is the configuration it is launched with.
// Hardware: compute capability 8.0+ (a configurable carveout from 0 KiB, LDGSTS).
// Run: build/11_carveout/carveout [--bench] [--variant=NAME]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/03-advanced/advanced-kernel-programming.html#configuring-l1-shared-memory-balance
//        (3.2.6) and Table 32 "Shared Memory Capacity per Compute Capability":
//        https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html#compute-capabilities-table-shared-memory-capacity-per-compute-capability
// API: cudaFuncSetAttribute, cudaFuncGetAttributes, cudaFuncSetCacheConfig
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
//      cudaSharedCarveout  https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html
//      cudaOccupancyMaxActiveBlocksPerMultiprocessor
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__OCCUPANCY.html
//      cuda::ptx::get_sreg_smid  https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/special_registers.html
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"

#include "carveout_model.hpp"    // the guide's capacity table and the rounding rule (host)
#include "carveout_granted.cuh"  // blocks per SM: the occupancy API and a residency probe

namespace cg = cooperative_groups;

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;                                          // chapter 01's batch
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kBigStepBatches = 16;                                        // 64 KiB per block: needs the opt-in
constexpr std::size_t kBigStepBytes = kBigStepBatches * kBatchBytes;
constexpr std::size_t kStaticLimitBytes = 48 * kKiB;  // per block, without the opt-in
static_assert(kBigStepBytes > kStaticLimitBytes, "the big step exists to cross the 48 KiB line");

constexpr std::size_t kTableBytes = 128 * kKiB;  // gather table: fits L1 only when the carveout is small
constexpr int kLaneBytes = sizeof(uint4);         // each lane reads 16 bytes per gather
constexpr int kChunkBytes = 32 * kLaneBytes;      // one warp's gather: 512 contiguous bytes
constexpr std::uint32_t kTableChunks = kTableBytes / kChunkBytes;
constexpr int kGatherRounds = 32;  // gathers per output element: the table is read 32x more than the output written
constexpr int log2_exact(std::uint32_t v) { return v == 1 ? 0 : 1 + log2_exact(v / 2); }
constexpr int kChunkShift = 32 - log2_exact(kTableChunks);  // top bits of the LCG state pick the chunk
static_assert((kTableChunks & (kTableChunks - 1)) == 0, "chunk selection uses the top bits of a 32-bit state");

constexpr int kSwitchPieces = 16;  // the hint-versus-requirement sequences: 16 copy and 16 gather launches
constexpr std::size_t kSizeQuantum = kBigStepBytes;
static_assert(kSizeQuantum % (kSwitchPieces * kBatchBytes) == 0, "every piece is whole batches");

// ---- The copy: chapter 02's batch copy-and-compute, its batch in dynamic shared memory ----

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre, std::uint32_t right) {
  return left + 2u * centre + right;
}

std::vector<std::uint32_t> copy_reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      out[base + i] = smooth(in[base + ((i - 1) & (kBatchElems - 1))], in[base + i],
                             in[base + ((i + 1) & (kBatchElems - 1))]);
    }
  }
  return out;
}

/// [staged_copy]
// One step = kStepBatches batches, copied at once with 16-byte LDGSTS, then smoothed batch by batch.
// TUTORIAL: a block waits for its own copy before it computes, so a copy like this one keeps
// the memory system busy only through many resident blocks. How many fit on an SM is the
// carveout divided by (dynamic shared memory + the driver's 1 KiB per block): 4 KiB steps at
// MaxL1 get a 8 KiB carveout and one block per SM; at MaxShared, 8 blocks (the thread limit).
template <int kStepBatches, Api kApi>
__global__ void staged_copy_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_steps) {
  extern __shared__ uint4 smem_step_raw[];  // [kStepBatches][kBatchElems] uint32: sized at launch
  auto* smem_step = reinterpret_cast<std::uint32_t*>(smem_step_raw);
  constexpr int kStepElems = kStepBatches * kBatchElems;
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t step = blockIdx.x; step < num_steps; step += gridDim.x) {
    cg::memcpy_async(block, smem_step, gmem_in + step * kStepElems,
                     cuda::aligned_size_t<16>(std::size_t{kStepElems} * sizeof(std::uint32_t)));
    cg::wait(block);  // this thread's copies landed, then the block joins: the whole step is visible
    for (int i = threadIdx.x; i < kStepElems; i += blockDim.x) {
      const std::uint32_t* batch = smem_step + (i / kBatchElems) * kBatchElems;
      const int k = i % kBatchElems;
      gmem_out[step * kStepElems + i] =
          smooth(batch[(k - 1) & (kBatchElems - 1)], batch[k], batch[(k + 1) & (kBatchElems - 1)]);
    }
    block.sync();  // the step is no longer read when the next copy overwrites it
  }
}
/// [staged_copy]

// ---- The L1-bound kernel: repeated gathers from a 128 KiB read-only table -----------------

__host__ __device__ inline std::uint32_t warp_seed(std::uint64_t warp) {
  return static_cast<std::uint32_t>(warp) * 2654435761u + 12345u;
}
__host__ __device__ inline std::uint32_t next_chunk(std::uint32_t& state) {
  state = state * 1664525u + 1013904223u;  // a 32-bit LCG per warp; its top bits pick the chunk
  return state >> kChunkShift;
}

// out[4 * i + c] = sum over the rounds of component c of table[chunk(warp, round) * 32 + lane].
std::vector<std::uint32_t> gather_reference(const std::vector<std::uint32_t>& table, std::size_t num_lanes) {
  std::vector<std::uint32_t> out(4 * num_lanes, 0);
  for (std::size_t i = 0; i < num_lanes; ++i) {
    std::uint32_t state = warp_seed(i / 32);
    for (int round = 0; round < kGatherRounds; ++round) {
      const std::uint32_t* value = &table[4 * (next_chunk(state) * 32 + i % 32)];
      for (int c = 0; c < 4; ++c) out[4 * i + c] += value[c];
    }
  }
  return out;
}

/// [gather]
// Each warp reads one 512-byte chunk per round: one load instruction, four 128-byte lines,
// served by L1 when the table is resident there and by L2 when it is not.
// TUTORIAL: the kernel uses no shared memory, so every KiB the carveout gives to shared memory
// is taken from its L1. On 9.0 (256 KiB unified): MaxL1 leaves 256 KiB of L1, 25 % (64 KiB of
// shared memory) 192 KiB, 50 % (rounded up to 132 KiB) 124 KiB, MaxShared 28 KiB. The 128 KiB
// table fits the first two, just misses the third and thrashes the fourth.
// `first_lane` numbers the lanes of a piece of the output (the alternating sequences below).
template <Api kApi>
__global__ void gather_kernel(const uint4* __restrict__ gmem_table, uint4* gmem_out, std::size_t num_lanes,
                              std::size_t first_lane) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < num_lanes;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t state = warp_seed((first_lane + i) / 32);
    const unsigned lane = i % 32;
    uint4 sum = make_uint4(0, 0, 0, 0);
#pragma unroll 8
    for (int round = 0; round < kGatherRounds; ++round) {
      const uint4 value = __ldg(gmem_table + next_chunk(state) * 32 + lane);  // read-only: may stay in L1
      sum.x += value.x, sum.y += value.y, sum.z += value.z, sum.w += value.w;
    }
    gmem_out[i] = sum;
  }
}
/// [gather]

// ---- More than 48 KiB per block: a kernel that uses every byte it is given ---------------

// Thread t writes words t, t + blockDim.x, ... of the dynamic shared memory, then every word
// is read back by another thread (mirrored) and stored: the whole allocation must be usable.
__global__ void shared_extent_kernel(std::uint32_t* gmem_out, std::size_t num_words) {
  extern __shared__ std::uint32_t smem_words[];
  for (std::size_t w = threadIdx.x; w < num_words; w += blockDim.x) smem_words[w] = static_cast<std::uint32_t>(w) * 7u + 1u;
  __syncthreads();  // every word written before any is read back
  for (std::size_t w = threadIdx.x; w < num_words; w += blockDim.x) gmem_out[w] = smem_words[num_words - 1 - w];
}

// ---- Launchers --------------------------------------------------------------------------

/// [set_carveout]
template <class Kernel>
void prefer_carveout(Kernel kernel, int carveout) {
  if (auto problem = carveout_problem(carveout)) throw std::invalid_argument(*problem);
  // TUTORIAL: the preference belongs to the function (each template instantiation is its own
  // function) and holds for every later launch of it, until it is set again. It is a
  // percentage of the largest capacity (cudaDevAttrMaxSharedMemoryPerMultiprocessor), rounded
  // up to a capacity the architecture supports; the driver grants more when one block would
  // not fit otherwise. cudaFuncGetAttributes reads back the preference, never the grant.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
}

// Fill every SM with as many blocks as it holds under the kernel's current preference:
// the occupancy query must come after the preference is set, or it answers for another split.
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, std::size_t dynamic_bytes, std::size_t num_items, cudaStream_t stream,
                     Args... args) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads, dynamic_bytes));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  kernel<<<static_cast<unsigned>(std::min(num_items, resident)), kBlockThreads, dynamic_bytes, stream>>>(args...);
  COURSE_CHECK_LAUNCH();
}
/// [set_carveout]

/// [opt_in]
template <int kStepBatches, Api kApi>
void opt_in_dynamic_shared(std::size_t bytes) {
  // TUTORIAL: a block may use more than 48 KiB of shared memory only as *dynamic* shared
  // memory (a static __shared__ array that large does not compile), and only after this
  // per-function opt-in. The value may be at most sharedMemPerBlockOptin minus the kernel's
  // static shared memory (227 KiB on 9.0); a launch asking for more than the value set here
  // fails with cudaErrorInvalidValue.
  COURSE_CHECK(cudaFuncSetAttribute(staged_copy_kernel<kStepBatches, kApi>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}
/// [opt_in]

// What the variants launch on: the copy problem and the gather problem, and a piece of each.
struct Work {
  const std::uint32_t* copy_in;
  std::uint32_t* copy_out;
  std::size_t num_batches;
  const uint4* table;
  uint4* gather_out;
  std::size_t num_lanes;
  std::size_t first_lane;
  Work piece(int index, int count) const {
    const std::size_t batches = num_batches / count, lanes = num_lanes / count;
    return {copy_in + index * batches * kBatchElems, copy_out + index * batches * kBatchElems, batches,
            table, gather_out + index * lanes, lanes, first_lane + index * lanes};
  }
};

template <Api kApi>
void launch_copy(const Work& w, cudaStream_t stream = 0) {
  launch_resident(staged_copy_kernel<1, kApi>, kBatchBytes, w.num_batches, stream, w.copy_in, w.copy_out,
                  w.num_batches);
}
template <Api kApi>
void launch_gather(const Work& w, cudaStream_t stream = 0) {
  launch_resident(gather_kernel<kApi>, 0, (w.num_lanes + kBlockThreads - 1) / kBlockThreads, stream, w.table,
                  w.gather_out, w.num_lanes, w.first_lane);
}

template <int kCarveout>
void copy_variant(const Work& w) {
  prefer_carveout(staged_copy_kernel<1, Api::attribute>, kCarveout);
  launch_copy<Api::attribute>(w);
}

void copy_big_step_variant(const Work& w) {
  opt_in_dynamic_shared<kBigStepBatches, Api::attribute>(kBigStepBytes);
  prefer_carveout(staged_copy_kernel<kBigStepBatches, Api::attribute>, cudaSharedmemCarveoutMaxShared);
  const std::size_t num_steps = w.num_batches / kBigStepBatches;
  launch_resident(staged_copy_kernel<kBigStepBatches, Api::attribute>, kBigStepBytes, num_steps, 0, w.copy_in,
                  w.copy_out, num_steps);
}

template <int kCarveout>
void gather_variant(const Work& w) {
  prefer_carveout(gather_kernel<Api::attribute>, kCarveout);
  launch_gather<Api::attribute>(w);
}

/// [switch]
// The copy wants shared memory, the gather wants L1. Each API states the two wishes; the
// sequences then run the same 16 copy and 16 gather launches in three orders.
template <Api kApi>
void state_opposite_wishes() {
  if constexpr (kApi == Api::attribute) {
    prefer_carveout(staged_copy_kernel<1, kApi>, cudaSharedmemCarveoutMaxShared);
    prefer_carveout(gather_kernel<kApi>, cudaSharedmemCarveoutMaxL1);
  } else {
    // The guide calls this a hard requirement that serialises launches; the runtime's header
    // calls it a preference. The README reports what the H100 did with it.
    COURSE_CHECK(cudaFuncSetCacheConfig(staged_copy_kernel<1, kApi>, cudaFuncCachePreferShared));
    COURSE_CHECK(cudaFuncSetCacheConfig(gather_kernel<kApi>, cudaFuncCachePreferL1));
  }
}

enum class Order { interleaved, grouped, two_streams };

template <Api kApi, Order kOrder>
void switch_variant(const Work& w) {
  state_opposite_wishes<kApi>();
  if constexpr (kOrder == Order::interleaved) {  // copy, gather, copy, gather, ...
    for (int p = 0; p < kSwitchPieces; ++p) {
      launch_copy<kApi>(w.piece(p, kSwitchPieces));
      launch_gather<kApi>(w.piece(p, kSwitchPieces));
    }
  } else if constexpr (kOrder == Order::grouped) {  // all copies, then all gathers
    for (int p = 0; p < kSwitchPieces; ++p) launch_copy<kApi>(w.piece(p, kSwitchPieces));
    for (int p = 0; p < kSwitchPieces; ++p) launch_gather<kApi>(w.piece(p, kSwitchPieces));
  } else {  // copies on one stream, gathers on another: free to run at the same time
    // Created once and kept for the life of the process: timed runs repeat the sequence.
    static cudaStream_t copies = nullptr, gathers = nullptr;
    static cudaEvent_t fork = nullptr, copies_done = nullptr, gathers_done = nullptr;
    if (copies == nullptr) {
      COURSE_CHECK(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking));
      COURSE_CHECK(cudaStreamCreateWithFlags(&gathers, cudaStreamNonBlocking));
      for (cudaEvent_t* e : {&fork, &copies_done, &gathers_done}) {
        COURSE_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
      }
    }
    COURSE_CHECK(cudaEventRecord(fork, 0));  // both streams start after earlier work on the default stream
    COURSE_CHECK(cudaStreamWaitEvent(copies, fork));
    COURSE_CHECK(cudaStreamWaitEvent(gathers, fork));
    for (int p = 0; p < kSwitchPieces; ++p) {
      launch_copy<kApi>(w.piece(p, kSwitchPieces), copies);
      launch_gather<kApi>(w.piece(p, kSwitchPieces), gathers);
    }
    COURSE_CHECK(cudaEventRecord(copies_done, copies));  // the default stream (and the timing) waits for both
    COURSE_CHECK(cudaEventRecord(gathers_done, gathers));
    COURSE_CHECK(cudaStreamWaitEvent(0, copies_done));
    COURSE_CHECK(cudaStreamWaitEvent(0, gathers_done));
  }
}
/// [switch]

// ---- The variant table ----------------------------------------------------------------------

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const Work&);
  bool copies;   // writes the copy output
  bool gathers;  // writes the gather output
};
const Variant kVariants[] = {
    {"copy_max_l1", "02's batch copy, carveout MaxL1: one block per SM fits", &copy_variant<cudaSharedmemCarveoutMaxL1>,
     true, false},
    {"copy_default", "the same copy, no preference (the driver chooses)", &copy_variant<cudaSharedmemCarveoutDefault>,
     true, false},
    {"copy_max_shared", "the same copy, carveout MaxShared", &copy_variant<cudaSharedmemCarveoutMaxShared>, true,
     false},
    {"copy_big_step", "64 KiB steps: dynamic shared memory past 48 KiB, opted in", &copy_big_step_variant, true,
     false},
    {"gather_max_l1", "gathers from a 128 KiB table, carveout MaxL1", &gather_variant<cudaSharedmemCarveoutMaxL1>,
     false, true},
    {"gather_default", "the same gathers, no preference", &gather_variant<cudaSharedmemCarveoutDefault>, false, true},
    {"gather_pct25", "the same gathers, carveout 25%", &gather_variant<25>, false, true},
    {"gather_pct50", "the same gathers, carveout 50%", &gather_variant<50>, false, true},
    {"gather_max_shared", "the same gathers, carveout MaxShared", &gather_variant<cudaSharedmemCarveoutMaxShared>,
     false, true},
    {"switch_hint_interleaved", "copy(MaxShared) and gather(MaxL1) hints, alternating",
     &switch_variant<Api::attribute, Order::interleaved>, true, true},
    {"switch_hint_grouped", "the same launches, all copies then all gathers",
     &switch_variant<Api::attribute, Order::grouped>, true, true},
    {"switch_hint_streams", "the same launches on two streams", &switch_variant<Api::attribute, Order::two_streams>,
     true, true},
    {"switch_config_interleaved", "cudaFuncSetCacheConfig PreferShared / PreferL1, alternating",
     &switch_variant<Api::cache_config, Order::interleaved>, true, true},
    {"switch_config_grouped", "the same launches, all copies then all gathers",
     &switch_variant<Api::cache_config, Order::grouped>, true, true},
    {"switch_config_streams", "the same launches on two streams",
     &switch_variant<Api::cache_config, Order::two_streams>, true, true},
};

// ---- Problem, verify(), run() -----------------------------------------------------------------

struct Problem {
  explicit Problem(std::size_t size_bytes)
      : num_batches(size_bytes / kBatchBytes), num_lanes(size_bytes / kLaneBytes),
        copy_in(size_bytes / sizeof(std::uint32_t)), table(kTableBytes / sizeof(std::uint32_t)),
        gmem_copy_in(copy_in.size()), gmem_table(table.size()), gmem_copy_out(copy_in.size()),
        gmem_gather_out(4 * num_lanes) {
    course::fill_pattern(copy_in, 1);
    course::fill_pattern(table, 2);
    copy_expected = copy_reference(copy_in);
    gather_expected = gather_reference(table, num_lanes);
    gmem_copy_in.upload(copy_in.data());
    gmem_table.upload(table.data());
  }
  Work work() const {
    return {gmem_copy_in.data(), gmem_copy_out.data(), num_batches, reinterpret_cast<const uint4*>(gmem_table.data()),
            reinterpret_cast<uint4*>(gmem_gather_out.data()), num_lanes, 0};
  }
  std::size_t num_batches, num_lanes;
  std::vector<std::uint32_t> copy_in, table, copy_expected, gather_expected;
  course::DeviceBuffer<std::uint32_t> gmem_copy_in, gmem_table;
  course::GuardedOutput<std::uint32_t> gmem_copy_out, gmem_gather_out;
};

course::Comparison verify(const Variant& v, Problem& p) {
  p.gmem_copy_out.poison();
  p.gmem_gather_out.poison();
  v.launch(p.work());
  COURSE_CHECK(cudaDeviceSynchronize());
  course::Comparison result;
  for (auto [used, out, expected] : {std::tuple{v.copies, &p.gmem_copy_out, &p.copy_expected},
                                     std::tuple{v.gathers, &p.gmem_gather_out, &p.gather_expected}}) {
    if (!used) continue;
    const course::Comparison part = out->check(*expected, kBatchElems);
    result.count += part.count, result.mismatches += part.mismatches, result.untouched += part.untouched;
    result.first += part.first;
  }
  return result;
}

// Bytes a variant reads plus writes: the copy reads and writes the input size; the gather
// reads kGatherRounds times its output size (mostly from L1 or L2) and writes the output.
std::size_t bytes_moved(const Variant& v, std::size_t size_bytes) {
  return (v.copies ? 2 * size_bytes : 0) + (v.gathers ? (kGatherRounds + 1) * size_bytes : 0);
}

void print_opt_in(std::ostream& log);

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  print_granted(log);
  print_opt_in(log);
  Problem problem(opts.size_bytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(problem.work()); },
        bytes_moved(v, opts.size_bytes));
  }
}

// ---- What the program prints besides the report ---------------------------------------------

// The 64 KiB step's limit before and after the opt-in, read back from the function, and the
// rule. (The refused launch itself is in the tests: a deliberate API error here would be
// reported by compute-sanitizer, which checks this program.)
void print_opt_in(std::ostream& log) {
  const auto kernel = staged_copy_kernel<kBigStepBatches, Api::attribute>;
  cudaFuncAttributes before{}, after{};
  opt_in_dynamic_shared<kBigStepBatches, Api::attribute>(kStaticLimitBytes);  // the default limit
  COURSE_CHECK(cudaFuncGetAttributes(&before, kernel));
  opt_in_dynamic_shared<kBigStepBatches, Api::attribute>(kBigStepBytes);
  COURSE_CHECK(cudaFuncGetAttributes(&after, kernel));
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  log << "staged_copy_kernel<" << kBigStepBatches << "> needs " << format_kib(kBigStepBytes / double(kKiB))
      << " of dynamic shared memory per block; maxDynamicSharedSizeBytes: "
      << format_kib(before.maxDynamicSharedSizeBytes / double(kKiB)) << " by default (a larger launch fails with "
      << "cudaErrorInvalidValue), " << format_kib(after.maxDynamicSharedSizeBytes / double(kKiB))
      << " after the opt-in\n  rule: more than " << format_kib(kStaticLimitBytes / double(kKiB))
      << " per block only as dynamic shared memory, after cudaFuncSetAttribute(kernel, "
         "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); at most "
      << format_kib(prop.sharedMemPerBlockOptin / double(kKiB)) << " on this device (sharedMemPerBlockOptin)\n";
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "carveout";
  info.title = "11 carveout: how much of the on-chip memory is shared memory";
  info.explanation =
      "L1 and shared memory share each SM's unified data cache; a per-kernel carveout preference\n"
      "splits it. The program shows which capacities a percentage selects (rounding up), what the\n"
      "driver granted (blocks per SM, from the occupancy API and from the SMs themselves), the\n"
      "opt-in for more than 48 KiB per block, a shared-memory copy and an L1-bound gather under\n"
      "several carveouts, and kernels with opposite wishes alternating (hint vs cache config).";
  info.requirement = {8, 0, false, "a configurable L1/shared carveout from 0 KiB and LDGSTS"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule =
      course::whole_multiples_of(kSizeQuantum, "--size must be a whole number of 64 KiB steps (16 batches of 1024 uint32)");
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, chapter_info(), kVariants, run); }
#endif
