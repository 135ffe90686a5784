// 11_carveout: the split of each SM's unified data cache between L1 and shared memory.
//
// What you learn: how a kernel states its preferred shared-memory carveout (a percentage or
// one of three enums), which capacities a percentage can select on each architecture and how
// it rounds up, how to see what the driver granted (the runtime reports only the preference;
// occupancy shows the grant), what a small carveout costs a shared-memory copy, and the opt-in
// for more than 48 KiB per block.
// What changed from 02: the copy is 02's cg::memcpy_async batch copy, unchanged except that its
// batch lives in dynamic shared memory; what changes is the configuration it is launched with.
// Hardware: compute capability 8.0+ (a configurable carveout from 0 KiB, LDGSTS).
// Run: build/11_carveout/carveout [--bench] [--variant=NAME]; an L1-bound gather under three
//      carveouts, the residency probe and kernels with opposite wishes:
//      build/11_carveout/carveout_lab.
// Guide (3.2.6, "Configuring L1/Shared Memory Balance", and Table 32 "Shared Memory Capacity per
// Compute Capability"):
// https://docs.nvidia.com/cuda/cuda-programming-guide/03-advanced/advanced-kernel-programming.html
// https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html
// API: cudaFuncSetAttribute, cudaFuncGetAttributes
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html
//      cudaSharedCarveout  https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html
//      cudaOccupancyMaxActiveBlocksPerMultiprocessor
//        https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__OCCUPANCY.html
//      cooperative_groups::memcpy_async / wait
// https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "carveout_model.hpp"  // the guide's capacity table, the rounding rule, blocks per SM
#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"

namespace cg = cooperative_groups;

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;                                         // chapter 01's batch
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
constexpr int kBigStepBatches = 16;  // 64 KiB per block: needs the opt-in
constexpr std::size_t kBigStepBytes = kBigStepBatches * kBatchBytes;
constexpr std::size_t kStaticLimitBytes = 48 * kKiB;  // per block, without the opt-in
static_assert(kBigStepBytes > kStaticLimitBytes, "the big step exists to cross the 48 KiB line");
constexpr std::size_t kSizeQuantum = kBigStepBytes;  // --size: whole big steps

// ---- The copy: chapter 02's batch copy-and-compute, its batch in dynamic shared memory ----

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;
}

std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
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
// One step = kStepBatches batches, copied at once with 16-byte LDGSTS, then smoothed batch by
// batch: the loop of every block, as a device function so that the lab can launch the same
// loop from kernels of its own (a carveout belongs to a kernel function).
// TUTORIAL: a block waits for its own copy before it computes, so a copy like this one keeps
// the memory system busy only through many resident blocks. How many fit on an SM is the
// carveout divided by (dynamic shared memory + the driver's 1 KiB per block): 4 KiB steps at
// MaxL1 get a 8 KiB carveout and one block per SM; at MaxShared, 8 blocks (the thread limit).
template <int kStepBatches>
__device__ __forceinline__ void copy_and_compute_steps(const std::uint32_t* gmem_in,
                                                       std::uint32_t* gmem_out,
                                                       std::size_t num_steps) {
  extern __shared__ uint4 smem_step_raw[];  // [kStepBatches][kBatchElems] uint32: sized at launch
  auto* smem_step = reinterpret_cast<std::uint32_t*>(smem_step_raw);
  constexpr int kStepElems = kStepBatches * kBatchElems;
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t step = blockIdx.x; step < num_steps; step += gridDim.x) {
    cg::memcpy_async(block, smem_step, gmem_in + step * kStepElems,
                     cuda::aligned_size_t<16>(std::size_t{kStepElems} * sizeof(std::uint32_t)));
    cg::wait(block);  // this thread's copies landed, then the block joins: the step is visible
    for (int i = threadIdx.x; i < kStepElems; i += blockDim.x) {
      const std::uint32_t* batch = smem_step + (i / kBatchElems) * kBatchElems;
      const int k = i % kBatchElems;
      gmem_out[step * kStepElems + i] =
          smooth(batch[(k - 1) & (kBatchElems - 1)], batch[k], batch[(k + 1) & (kBatchElems - 1)]);
    }
    block.sync();  // the step is no longer read when the next copy overwrites it
  }
}

template <int kStepBatches>
__global__ void staged_copy_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                   std::size_t num_steps) {
  copy_and_compute_steps<kStepBatches>(gmem_in, gmem_out, num_steps);
}
/// [staged_copy]

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
  COURSE_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
}

// Fill every SM with as many blocks as it holds under the kernel's current preference:
// the occupancy query must come after the preference is set, or it answers for another split.
template <class Kernel, class... Args>
void launch_resident(Kernel kernel, std::size_t dynamic_bytes, std::size_t num_items,
                     cudaStream_t stream, Args... args) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads,
                                                             dynamic_bytes));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  kernel<<<static_cast<unsigned>(std::min(num_items, resident)), kBlockThreads, dynamic_bytes,
           stream>>>(args...);
  COURSE_CHECK_LAUNCH();
}
/// [set_carveout]

/// [opt_in]
template <int kStepBatches>
void opt_in_dynamic_shared(std::size_t bytes) {
  // TUTORIAL: a block may use more than 48 KiB of shared memory only as *dynamic* shared
  // memory (a static __shared__ array that large does not compile), and only after this
  // per-function opt-in. The value may be at most sharedMemPerBlockOptin minus the kernel's
  // static shared memory (227 KiB on 9.0); a launch asking for more than the value set here
  // fails with cudaErrorInvalidValue.
  COURSE_CHECK(cudaFuncSetAttribute(staged_copy_kernel<kStepBatches>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)));
}
/// [opt_in]

// The lesson's launchers: 02's copy in 4 KiB steps under a carveout, or in 64 KiB steps.
template <int kCarveout>
void launch_copy(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  prefer_carveout(staged_copy_kernel<1>, kCarveout);
  launch_resident(staged_copy_kernel<1>, kBatchBytes, num_batches, 0, gmem_in, gmem_out,
                  num_batches);
}

void launch_copy_big_step(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                          std::size_t num_batches) {
  opt_in_dynamic_shared<kBigStepBatches>(kBigStepBytes);
  prefer_carveout(staged_copy_kernel<kBigStepBatches>, cudaSharedmemCarveoutMaxShared);
  const std::size_t num_steps = num_batches / kBigStepBatches;
  launch_resident(staged_copy_kernel<kBigStepBatches>, kBigStepBytes, num_steps, 0, gmem_in,
                  gmem_out, num_steps);
}

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_batches);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"copy_max_l1", "02's batch copy, carveout MaxL1: one block per SM fits",
     &launch_copy<cudaSharedmemCarveoutMaxL1>},
    {"copy_default", "the same copy, no preference (the driver chooses)",
     &launch_copy<cudaSharedmemCarveoutDefault>},
    {"copy_max_shared", "the same copy, carveout MaxShared",
     &launch_copy<cudaSharedmemCarveoutMaxShared>},
    {"copy_big_step", "64 KiB steps: dynamic shared memory past 48 KiB, opted in",
     &launch_copy_big_step},
};

// ---- What was granted, and the opt-in --------------------------------------------------------

/// [granted]
// What the driver granted shows only as blocks per SM: cudaFuncGetAttributes reads back the
// preference, the occupancy API (asked after the preference is set) answers for the grant.
template <class Kernel>
void print_granted_row(std::ostream& log, const char* setting, Kernel kernel, int carveout,
                       std::size_t dynamic_bytes) {
  prefer_carveout(kernel, carveout);
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  int blocks_per_sm = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlockThreads,
                                                             dynamic_bytes));
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::optional<SharedCapacities> caps = shared_capacities(prop.major, prop.minor);
  const int thread_limit =
      std::min(prop.maxBlocksPerMultiProcessor, prop.maxThreadsPerMultiProcessor / kBlockThreads);
  // No model for "no preference", nor for a GPU outside the guide's table.
  std::optional<int> model;
  if (caps && carveout >= 0) {
    model = model_blocks_per_sm(*caps, carveout, dynamic_bytes + prop.reservedSharedMemPerBlock,
                                thread_limit);
  }
  log << "  " << std::left << std::setw(50) << setting << std::right << std::setw(11)
      << format_kib(dynamic_bytes / double(kKiB)) << std::setw(12)
      << attributes.preferredShmemCarveout << std::setw(15) << blocks_per_sm << std::setw(8)
      << (model ? std::to_string(*model) : "-") << '\n';
}
/// [granted]

void print_granted(std::ostream& log) {
  log << "what each variant asks for and what it was granted, in blocks per SM (model: by shared "
      << "memory\nand threads only):\n  " << std::left << std::setw(50)
      << "variant: kernel, setting" << std::right << std::setw(11) << "dynamic" << std::setw(12)
      << "read back" << std::setw(15) << "occupancy API" << std::setw(8) << "model" << '\n';
  print_granted_row(log, "copy_max_l1: staged_copy_kernel<1>, MaxL1", staged_copy_kernel<1>,
                    cudaSharedmemCarveoutMaxL1, kBatchBytes);
  print_granted_row(log, "copy_default: staged_copy_kernel<1>, Default", staged_copy_kernel<1>,
                    cudaSharedmemCarveoutDefault, kBatchBytes);
  print_granted_row(log, "copy_max_shared: staged_copy_kernel<1>, MaxShared", staged_copy_kernel<1>,
                    cudaSharedmemCarveoutMaxShared, kBatchBytes);
  // 64 KiB blocks: the occupancy API counts 0 without the opt-in.
  opt_in_dynamic_shared<kBigStepBatches>(kBigStepBytes);
  print_granted_row(log, "copy_big_step: staged_copy_kernel<16>, MaxShared",
                    staged_copy_kernel<kBigStepBatches>, cudaSharedmemCarveoutMaxShared,
                    kBigStepBytes);
}

// The 64 KiB step's limit before and after the opt-in, read back from the function, and the
// rule. (The refused launch itself is in the tests: a deliberate API error here would be
// reported by compute-sanitizer, which checks this program.)
void print_opt_in(std::ostream& log) {
  const auto kernel = staged_copy_kernel<kBigStepBatches>;
  cudaFuncAttributes before{}, after{};
  opt_in_dynamic_shared<kBigStepBatches>(kStaticLimitBytes);  // the default limit
  COURSE_CHECK(cudaFuncGetAttributes(&before, kernel));
  opt_in_dynamic_shared<kBigStepBatches>(kBigStepBytes);
  COURSE_CHECK(cudaFuncGetAttributes(&after, kernel));
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  log << "staged_copy_kernel<" << kBigStepBatches << "> needs "
      << format_kib(kBigStepBytes / double(kKiB))
      << " of dynamic shared memory per block; maxDynamicSharedSizeBytes: "
      << format_kib(before.maxDynamicSharedSizeBytes / double(kKiB))
      << " by default (a larger launch fails with "
      << "cudaErrorInvalidValue), " << format_kib(after.maxDynamicSharedSizeBytes / double(kKiB))
      << " after the opt-in\n  rule: more than " << format_kib(kStaticLimitBytes / double(kKiB))
      << " per block only as dynamic shared memory, after cudaFuncSetAttribute(kernel, "
         "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); at most "
      << format_kib(prop.sharedMemPerBlockOptin / double(kKiB))
      << " on this device (sharedMemPerBlockOptin)\n";
}

// ---- run(): verify every variant, then time the correct ones ------------------------------

struct Problem {
  explicit Problem(std::size_t size_bytes)
      : num_batches(size_bytes / kBatchBytes), host_in(size_bytes / sizeof(std::uint32_t)),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    course::fill_pattern(host_in, 1);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
  }
  std::size_t num_batches;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(Launch launch, Problem& problem) {
  problem.gmem_out.poison();
  launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  print_granted(log);
  print_opt_in(log);
  Problem problem(opts.size_bytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "carveout";
  info.title = "11 carveout: how much of the on-chip memory is shared memory";
  info.explanation =
      "L1 and shared memory share each SM's unified data cache; a per-kernel carveout preference\n"
      "splits it. The program shows which capacities a percentage selects (rounding up), what the\n"
      "driver granted each variant (blocks per SM, from the occupancy API, next to the model),\n"
      "the opt-in for more than 48 KiB per block, and chapter 02's shared-memory copy under\n"
      "MaxL1, no preference and MaxShared, and in 64 KiB steps.";
  info.requirement = {8, 0, false, "a configurable L1/shared carveout from 0 KiB and LDGSTS"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kSizeQuantum, "--size must be a whole number of 64 KiB steps (16 batches of 1024 uint32)");
  info.host_model = print_host_model;
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
