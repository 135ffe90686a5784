// 01_sync_copy: the copy-and-compute pattern with ordinary loads and stores.
//
// What you learn: how a block stages a batch of global memory in shared memory,
// why `smem[i] = gmem[j]` is really two instructions with a register in between
// (LDG then STS), why the batch loop needs two block-wide barriers, and how the launch
// deals the batches to blocks (a few per block, so the batches in flight are neighbours).
// What changed: this is the starting point; chapter 02 replaces the copy line with
// memcpy_async.
// Hardware: any GPU this toolkit builds for (compute capability 7.5+).
// Run: build/01_sync_copy/sync_copy [--bench] [--variant=NAME] [--size=64M]; load order, no
//      staging, the grid and register prefetch: build/01_sync_copy/sync_copy_lab.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
//        (section 4.11, the copy-and-compute pattern it starts from), and the CUDA 11
//        programming guide's "Without memcpy_async" example it is based on.
// API: cooperative_groups::thread_block::sync
// https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cooperative-groups.html
#include <cooperative_groups.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "sync_copy_model.hpp"  // the grid rule, a batch's instructions and bytes, Little's law

namespace cg = cooperative_groups;

constexpr int kBlockThreads = 256;
constexpr int kBatchElems = 1024;  // elements a block stages in shared memory at a time
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 4 KiB
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index below wraps with a mask");

/// [compute]
// Each output mixes an element with its two neighbours inside the batch (the batch is a
// ring, so every batch is independent of the others).
__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}
/// [compute]

// Host reference: what every variant must produce, bit for bit.
std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kBatchElems) {
    for (int i = 0; i < kBatchElems; ++i) {
      const int left = (i - 1) & (kBatchElems - 1), right = (i + 1) & (kBatchElems - 1);
      out[base + i] = smooth(in[base + left], in[base + i], in[base + right]);
    }
  }
  return out;
}

/// [compute_batch]
// The compute phase every kernel of chapters 01-02 shares. Neighbours were copied by *other*
// threads: that is why the batch goes through shared memory, and why the block must
// synchronise before computing.
__device__ void compute_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
    const int left = (i - 1) & (kBatchElems - 1), right = (i + 1) & (kBatchElems - 1);
    gmem_out_batch[i] = smooth(smem_batch[left], smem_batch[i], smem_batch[right]);
  }
}
/// [compute_batch]

/// [kernel]
// Block k handles batches k, k + gridDim.x, k + 2 * gridDim.x, ...
__global__ void sync_copy_kernel(const std::uint32_t* __restrict__ gmem_in,
                                 std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    // TUTORIAL: this one line compiles to a load into a register (LDG) and a
    // store from that register to shared memory (STS). The thread stalls on the
    // load before it can store, and the register is occupied for the round trip.
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) smem_batch[i] = gmem_batch[i];

    block.sync();  // every element of the batch is in shared memory before anyone reads a neighbour

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [kernel]

/// [kernel_uint4]
// The same pattern with 16-byte loads: four elements per thread per copy instruction.
// Still global -> register -> shared; only the width of the round trip changes.
__global__ void sync_copy_uint4_kernel(const std::uint32_t* __restrict__ gmem_in,
                                       std::uint32_t* __restrict__ gmem_out,
                                       std::size_t num_batches) {
  // uint4 stores need 16-byte alignment
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  constexpr int kVecs = kBatchBytes / sizeof(uint4);

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const uint4* gmem_vecs = reinterpret_cast<const uint4*>(gmem_in + batch * kBatchElems);
    uint4* smem_vecs = reinterpret_cast<uint4*>(smem_batch);
    for (int v = threadIdx.x; v < kVecs; v += blockDim.x) smem_vecs[v] = gmem_vecs[v];

    block.sync();  // the whole batch has landed before neighbours are read

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [kernel_uint4]

/// [launch]
constexpr int kBatchesPerBlock = 4;  // the grid grows with the input: one block per 4 batches

// TUTORIAL: the kernel's loop works for any grid, so the launch decides how the batches are
// dealt. A resident grid (as many blocks as fit at once, each looping over batches k,
// k + gridDim.x, ...) lets its blocks drift apart: a block that waited longer on one load
// stays behind, and the batches in flight at a given moment spread over memory. Here a block
// takes kBatchesPerBlock batches and the grid has as many blocks as that needs; the hardware
// starts blocks in index order as earlier ones finish, so the batches in flight stay
// neighbours in memory. Four, not one, so that the rings of chapters 03-05 still have batches
// to overlap inside a block; 01-05 share the rule. Chapter 06 measures the same effect with a
// tile counter; the lab's width_16_resident row keeps the resident grid to compare.
template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_batches) {
  kKernel<<<batch_grid(num_batches, kBatchesPerBlock), kBlockThreads>>>(gmem_in, gmem_out,
                                                                        num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_batches);
struct Variant {
  const char* name;
  const char* summary;
  Launch launch;
};
const Variant kVariants[] = {
    {"sync_copy", "smem[i] = gmem[j], 4 bytes per load, two block syncs per batch",
     &launch_batch_grid<sync_copy_kernel>},
    {"sync_copy_uint4", "the same through 16-byte registers (uint4)",
     &launch_batch_grid<sync_copy_uint4_kernel>},
};

// Input, expected output and device buffers for `num_batches` batches.
struct Problem {
  explicit Problem(std::size_t num_batches)
      : num_batches(num_batches), host_in(num_batches * kBatchElems), gmem_in(host_in.size()),
        gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
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
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "sync_copy";
  info.title = "01 sync_copy: copy-and-compute through registers";
  info.explanation =
      "Each block stages 4 KiB batches of the input in shared memory with ordinary loads and\n"
      "stores (global -> register -> shared), synchronises, computes every output from an element\n"
      "and its two neighbours in the batch, and synchronises again before the next batch\n"
      "overwrites shared memory.";
  info.requirement = {7, 5, false, "the course's build (sm_75 is the oldest target of CUDA 13)"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kBatchBytes, "--size must be a whole number of 4 KiB batches (1024 uint32 elements)");
  // What each variant keeps in flight, against what the memory needs.
  info.host_model = [](std::ostream& out) {
    const std::vector<CopyPlan> plans = copy_plans();
    print_batch_costs(out, {*find_plan(plans, "sync_copy"), *find_plan(plans, "sync_copy_uint4")},
                      kBatchBytes, kBlockThreads, MachineModel{});
    print_little_table(out, MachineModel{});
  };
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
