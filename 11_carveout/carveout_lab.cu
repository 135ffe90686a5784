// 11_carveout lab: what the SMs really hold, what a carveout costs an L1-bound kernel, and kernels
// with opposite wishes.
//
// The lesson launches 02's copy under four settings and reads the grant from the occupancy API.
// This program asks "what if":
//   the residency probe: blocks count themselves in and out on their SM (%smid), so the blocks
//     an SM held at once are measured, for eight carveout settings and the three cache configs,
//     next to the model and the occupancy API;
//   the gather sweep: a kernel that uses no shared memory and lives on L1 hits (32 gathers per
//     output from a 128 KiB table) under MaxL1, 50 % and MaxShared;
//   the switching study: the copy (wants shared memory) and the gather (wants L1) alternate,
//     their wishes stated as a hint (cudaFuncSetAttribute) or with cudaFuncSetCacheConfig, the
//     same 32 launches interleaved or (with cudaFuncSetCacheConfig) grouped.
// Every row is verified bit for bit before it is timed, as in the lesson.
// Hardware: compute capability 8.0+, as the lesson.
// Run: build/11_carveout/carveout_lab [--bench] [--variant=NAME] [--size=N]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/03-advanced/advanced-kernel-programming.html#configuring-l1-shared-memory-balance
//        https://docs.nvidia.com/cuda/cuda-programming-guide/03-advanced/advanced-host-programming.html#advanced-host-implicit-synchronization
// API: cudaFuncSetCacheConfig  https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
//      cuda::ptx::get_sreg_smid / get_sreg_globaltimer
//        https://nvidia.github.io/cccl/libcudacxx/ptx/instructions/special_registers.html
#include "carveout.cu"  // the lesson: the copy loop, prefer_carveout, launch_resident, launchers

#include <cuda/ptx>

#include <tuple>
#include <utility>

namespace lab {

// Which API states the kernel's wish. A function's carveout attribute and its cache
// configuration are two settings of the same function, so each API gets its own instantiation
// of every kernel here and the two experiments never see each other's settings.
enum class Api { attribute, cache_config };

// ---- The residency probe: what the SMs held ---------------------------------------------------

constexpr int kMaxSmIds = 1024;  // %smid is below this on every GPU the course targets
constexpr int kProbeThreads = 64;

/// [residency_probe]
// Every block counts itself in on its SM, records the peak, stays for `hold_ns` so that the
// blocks the SM can hold at once overlap, and counts itself out. Its dynamic shared memory is
// never touched: only its size matters, because it decides how many blocks fit.
template <Api kApi>
__global__ void residency_kernel(int* live_per_sm, int* peak_per_sm, unsigned long long hold_ns) {
  if (threadIdx.x != 0) return;
  const std::uint32_t sm = cuda::ptx::get_sreg_smid();
  if (sm >= kMaxSmIds) return;
  const int now = atomicAdd(&live_per_sm[sm], 1) + 1;
  atomicMax(&peak_per_sm[sm], now);
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (cuda::ptx::get_sreg_globaltimer() - start < hold_ns) {
  }
  atomicSub(&live_per_sm[sm], 1);
}
/// [residency_probe]

struct Granted {
  int preference = 0;     // cudaFuncAttributes::preferredShmemCarveout: what was asked
  int occupancy_api = 0;  // cudaOccupancyMaxActiveBlocksPerMultiprocessor: what the driver plans
  int measured_min = 0;   // blocks resident together, over the SMs: what happened
  int measured_max = 0;
};

/// [measure_granted]
// Call after setting the kernel's preference: the occupancy query and the launch both see it.
template <Api kApi>
Granted measure_granted(std::size_t dynamic_bytes) {
  const auto kernel = residency_kernel<kApi>;
  Granted granted;
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  granted.preference = attributes.preferredShmemCarveout;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&granted.occupancy_api, kernel, kProbeThreads,
                                                              dynamic_bytes));
  int device = 0, num_sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  course::DeviceBuffer<int> live(kMaxSmIds), peak(kMaxSmIds);
  live.fill_bytes(0);
  peak.fill_bytes(0);
  // 40 blocks per SM for every block the SM could hold at most: the peak is reached everywhere.
  kernel<<<num_sms * 40, kProbeThreads, dynamic_bytes>>>(live.data(), peak.data(), 20000);
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<int> per_sm(kMaxSmIds);
  peak.download(per_sm.data());
  granted.measured_min = kMaxSmIds;
  for (int count : per_sm) {
    if (count == 0) continue;  // an SM id that does not exist
    granted.measured_min = std::min(granted.measured_min, count);
    granted.measured_max = std::max(granted.measured_max, count);
  }
  return granted;
}
/// [measure_granted]

/// [granted_table]
// A block of 30 KiB dynamic shared memory (31 KiB with the driver's reservation) under each
// setting: what the model predicts, what the occupancy API plans, what the SMs really held.
void print_residency(std::ostream& log) {
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::size_t dynamic_bytes = 30 * kKiB;
  const std::size_t block_bytes = dynamic_bytes + prop.reservedSharedMemPerBlock;
  const int other_limit = std::min(prop.maxBlocksPerMultiProcessor, prop.maxThreadsPerMultiProcessor / kProbeThreads);
  const std::optional<SharedCapacities> caps = shared_capacities(prop.major, prop.minor);
  log << "shared memory on this device: " << format_kib(prop.sharedMemPerMultiprocessor / double(kKiB))
      << " per SM at most, " << format_kib(prop.sharedMemPerBlock / double(kKiB)) << " per block without opt-in, "
      << format_kib(prop.sharedMemPerBlockOptin / double(kKiB)) << " with it, "
      << format_kib(prop.reservedSharedMemPerBlock / double(kKiB)) << " reserved by the driver per block\n";
  if (!caps) log << "compute capability " << prop.major << '.' << prop.minor << " is not in the guide's table\n";
  log << "what the driver granted to a block of " << format_kib(dynamic_bytes / double(kKiB)) << " (+"
      << format_kib(prop.reservedSharedMemPerBlock / double(kKiB)) << " reserved), in blocks per SM:\n"
      << "  " << std::left << std::setw(58) << "setting" << std::right
      << "   asks for  model: capacity  blocks  occupancy API  measured\n";
  auto row = [&](const std::string& label, std::optional<int> percent, const Granted& g) {
    std::ostringstream line;
    line << "  " << std::left << std::setw(58) << label << std::right;
    std::optional<int> capacity, blocks;
    if (caps && percent) {
      capacity = launch_capacity_kib(*caps, *percent, block_bytes);
      blocks = model_blocks_per_sm(*caps, *percent, block_bytes, other_limit);
    }
    line << std::setw(11) << (caps && percent ? format_kib(caps->max_kib() * *percent / 100.0) : "-")
         << std::setw(17) << (capacity ? format_kib(*capacity) : "-") << std::setw(8)
         << (blocks ? std::to_string(*blocks) : "-") << std::setw(15) << g.occupancy_api << std::setw(10)
         << (g.measured_min == g.measured_max ? std::to_string(g.measured_max)
                                              : std::to_string(g.measured_min) + ".." + std::to_string(g.measured_max))
         << '\n';
    log << line.str();
  };
  for (int carveout : {int{cudaSharedmemCarveoutDefault}, int{cudaSharedmemCarveoutMaxL1}, 10, 15, 50, 58, 75,
                       int{cudaSharedmemCarveoutMaxShared}}) {
    COURSE_CHECK(cudaFuncSetAttribute(residency_kernel<Api::attribute>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      carveout));
    const std::optional<int> percent = carveout >= 0 ? std::optional<int>(carveout) : std::nullopt;
    row("cudaFuncSetAttribute " + carveout_name(carveout), percent, measure_granted<Api::attribute>(dynamic_bytes));
  }
  for (auto [config, name] : {std::pair{cudaFuncCachePreferL1, "PreferL1"}, std::pair{cudaFuncCachePreferEqual, "PreferEqual"},
                              std::pair{cudaFuncCachePreferShared, "PreferShared"}}) {
    COURSE_CHECK(cudaFuncSetCacheConfig(residency_kernel<Api::cache_config>, config));
    row(std::string("cudaFuncSetCacheConfig ") + name, std::nullopt, measure_granted<Api::cache_config>(dynamic_bytes));
  }
}
/// [granted_table]

// ---- The copy, once per API: the lesson's staged_copy_kernel<1> -------------------------------

// The lesson's copy loop in a kernel of its own for each API, so that the switching study's
// settings stay apart from each other and from the lesson's (a carveout belongs to a function).
template <int kStepBatches, Api kApi>
__global__ void staged_copy_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                   std::size_t num_steps) {
  ::copy_and_compute_steps<kStepBatches>(gmem_in, gmem_out, num_steps);
}

// ---- The L1-bound kernel: repeated gathers from a 128 KiB read-only table -----------------

constexpr std::size_t kTableBytes = 128 * kKiB;  // gather table: fits L1 only when the carveout is small
constexpr int kLaneBytes = sizeof(uint4);         // each lane reads 16 bytes per gather
constexpr int kChunkBytes = 32 * kLaneBytes;      // one warp's gather: 512 contiguous bytes
constexpr std::uint32_t kTableChunks = kTableBytes / kChunkBytes;
constexpr int kGatherRounds = 32;  // gathers per output element: the table is read 32x more than the output written
constexpr int log2_exact(std::uint32_t v) { return v == 1 ? 0 : 1 + log2_exact(v / 2); }
constexpr int kChunkShift = 32 - log2_exact(kTableChunks);  // top bits of the LCG state pick the chunk
static_assert((kTableChunks & (kTableChunks - 1)) == 0, "chunk selection uses the top bits of a 32-bit state");

constexpr int kSwitchPieces = 16;  // the hint-versus-requirement sequences: 16 copy and 16 gather launches
static_assert(kSizeQuantum % (kSwitchPieces * kBatchBytes) == 0, "every piece is whole batches");

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

// ---- Launchers: the copy problem and the gather problem, and a piece of each ------------------
// enqueue_*: one launch on a stream; launch_*: a row of the table.

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
void enqueue_copy(const Work& w) {
  launch_resident(staged_copy_kernel<1, kApi>, kBatchBytes, w.num_batches, 0, w.copy_in, w.copy_out,
                  w.num_batches);
}
template <Api kApi>
void enqueue_gather(const Work& w) {
  launch_resident(gather_kernel<kApi>, 0, (w.num_lanes + kBlockThreads - 1) / kBlockThreads, 0, w.table,
                  w.gather_out, w.num_lanes, w.first_lane);
}

template <int kCarveout>
void launch_gather_under(const Work& w) {
  prefer_carveout(gather_kernel<Api::attribute>, kCarveout);
  enqueue_gather<Api::attribute>(w);
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

enum class Order { interleaved, grouped };

template <Api kApi, Order kOrder>
void launch_switch(const Work& w) {
  state_opposite_wishes<kApi>();
  if constexpr (kOrder == Order::interleaved) {  // copy, gather, copy, gather, ...
    for (int p = 0; p < kSwitchPieces; ++p) {
      enqueue_copy<kApi>(w.piece(p, kSwitchPieces));
      enqueue_gather<kApi>(w.piece(p, kSwitchPieces));
    }
  } else {  // all copies, then all gathers
    for (int p = 0; p < kSwitchPieces; ++p) enqueue_copy<kApi>(w.piece(p, kSwitchPieces));
    for (int p = 0; p < kSwitchPieces; ++p) enqueue_gather<kApi>(w.piece(p, kSwitchPieces));
  }
}
/// [switch]

// ---- The rows ---------------------------------------------------------------------------------

struct Variant {
  const char* name;
  const char* summary;
  void (*launch)(const Work&);
  bool copies;   // writes the copy output
  bool gathers;  // writes the gather output
};
const Variant kVariants[] = {
    {"gather_max_l1", "gathers from a 128 KiB table, carveout MaxL1",
     &launch_gather_under<cudaSharedmemCarveoutMaxL1>, false, true},
    {"gather_pct50", "the same gathers, carveout 50%", &launch_gather_under<50>, false, true},
    {"gather_max_shared", "the same gathers, carveout MaxShared",
     &launch_gather_under<cudaSharedmemCarveoutMaxShared>, false, true},
    {"switch_hint_interleaved", "copy(MaxShared) and gather(MaxL1) hints, alternating",
     &launch_switch<Api::attribute, Order::interleaved>, true, true},
    {"switch_config_interleaved", "cudaFuncSetCacheConfig PreferShared / PreferL1, alternating",
     &launch_switch<Api::cache_config, Order::interleaved>, true, true},
    {"switch_config_grouped", "the same launches, all copies then all gathers",
     &launch_switch<Api::cache_config, Order::grouped>, true, true},
};

// ---- Problem, verify(), run() -----------------------------------------------------------------

struct Problem {
  explicit Problem(std::size_t size_bytes)
      : copy(size_bytes), num_lanes(size_bytes / kLaneBytes), table(kTableBytes / sizeof(std::uint32_t)),
        gmem_table(table.size()), gmem_gather_out(4 * num_lanes) {
    course::fill_pattern(table, 2);
    gather_expected = gather_reference(table, num_lanes);
    gmem_table.upload(table.data());
  }
  Work work() const {
    return {copy.gmem_in.data(), copy.gmem_out.data(), copy.num_batches,
            reinterpret_cast<const uint4*>(gmem_table.data()), reinterpret_cast<uint4*>(gmem_gather_out.data()),
            num_lanes, 0};
  }
  ::Problem copy;  // the lesson's: input, expected output, guarded output
  std::size_t num_lanes;
  std::vector<std::uint32_t> table, gather_expected;
  course::DeviceBuffer<std::uint32_t> gmem_table;
  course::GuardedOutput<std::uint32_t> gmem_gather_out;
};

course::Comparison verify(const Variant& v, Problem& p) {
  p.copy.gmem_out.poison();
  p.gmem_gather_out.poison();
  v.launch(p.work());
  COURSE_CHECK(cudaDeviceSynchronize());
  course::Comparison result;
  for (auto [used, out, expected] : {std::tuple{v.copies, &p.copy.gmem_out, &p.copy.expected},
                                     std::tuple{v.gathers, &p.gmem_gather_out, &p.gather_expected}}) {
    if (!used) continue;
    const course::Comparison part = out->check(*expected, kBatchElems);
    result.count += part.count, result.mismatches += part.mismatches, result.untouched += part.untouched;
    result.first += part.first;
  }
  return result;
}

// Bytes a row reads plus writes: the copy reads and writes the input size; the gather reads
// kGatherRounds times its output size (mostly from L1 or L2) and writes the output.
std::size_t bytes_moved(const Variant& v, std::size_t size_bytes) {
  return (v.copies ? 2 * size_bytes : 0) + (v.gathers ? (kGatherRounds + 1) * size_bytes : 0);
}

void run(const course::Options& opts, course::Report& report) {
  print_residency(opts.format == course::Format::text ? std::cout : std::cerr);
  Problem problem(opts.size_bytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { v.launch(problem.work()); },
        bytes_moved(v, opts.size_bytes));
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "carveout_lab";
  info.title = "11 carveout lab: residency, an L1-bound gather, kernels with opposite wishes";
  info.explanation =
      "What the SMs held under eight carveouts and three cache configs (a residency probe, next to\n"
      "the model and the occupancy API); an L1-bound gather from a 128 KiB table under three\n"
      "carveouts; and the copy (wants shared memory) alternating with the gather (wants L1), their\n"
      "wishes stated as a hint or with cudaFuncSetCacheConfig, interleaved or grouped.";
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
