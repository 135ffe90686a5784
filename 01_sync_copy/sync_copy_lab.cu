// 01_sync_copy lab: the order of a thread's loads, a kernel without staging, the grid, and
// prefetch through registers.
//
// The lesson copies 4 or 16 bytes per load through a register and computes from shared memory.
// This program asks "what if":
//   width_4_loads_first: 4-byte loads, but a thread issues all four of its loads of a batch before
//     its first store, so 16 bytes are in flight per thread as with uint4, in four instructions;
//   direct, direct_uint4: no shared memory and no barrier: every thread reads its neighbours
//     straight from global memory (what the staging saves, or does not, when L1 holds the lines);
//   width_16_resident: the lesson's sync_copy_uint4 kernel on a resident grid: as many blocks as
//     fit at once, each looping over batches k, k + grid, ...;
//   prefetch_regs_1, _4: the uint4 copy with the next 1 or 4 batches of the block loaded into
//     registers before the current one is computed: software prefetch through registers, the
//     overlap that chapter 02 gets from memcpy_async without spending registers on it. They run
//     on the resident grid too: a block needs many batches for 4 of them to be ahead of it, so
//     width_16_resident is the row to compare them with.
// Every row is verified bit for bit before it is timed, as in the lesson.
// Hardware: any GPU this toolkit builds for (compute capability 7.5+), as the lesson.
// Run: build/01_sync_copy/sync_copy_lab [--bench] [--variant=NAME] [--size=N]
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html
#include "sync_copy.cu"  // the lesson: the batch, compute_batch, kernels, launch_batch_grid, verify

namespace lab {

/// [resident]
// The lesson's launch before the batch grid: every SM filled with resident blocks, never more
// blocks than batches; each block loops over batches k, k + gridDim.x, ... for the whole run.
template <auto kKernel>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                     std::size_t num_batches) {
  // Blocks per SM from the occupancy calculator, times the SMs (course/in_flight.hpp).
  const std::size_t resident = course::resident_blocks((const void*)kKernel, kBlockThreads);
  kKernel<<<static_cast<unsigned>(num_batches < resident ? num_batches : resident),
            kBlockThreads>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

/// [loads_first]
// 4-byte loads, all of a thread's loads of the batch issued before its first store: the loop
// has a trip count known at compile time (kBlockThreads, not blockDim.x, apart), so it unrolls
// into registers, and no store waits for a load other than its own.
__global__ void loads_first_kernel(const std::uint32_t* __restrict__ gmem_in,
                                   std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  constexpr int kPerThread = kBatchElems / kBlockThreads;  // 4 loads of 4 bytes
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    std::uint32_t staged[kPerThread];  // registers: the loads in flight
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) staged[k] = gmem_batch[k * kBlockThreads + threadIdx.x];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) smem_batch[k * kBlockThreads + threadIdx.x] = staged[k];

    block.sync();  // the whole batch has landed before neighbours are read

    compute_batch(smem_batch, gmem_out + batch * kBatchElems);

    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [loads_first]

/// [direct]
// No staging: each thread reads its element and both neighbours from global memory. Two of the
// three loads ask for bytes that another thread of the warp (or the next warp) also loads, so
// L1 usually serves them. No shared memory, so no barrier either.
__global__ void direct_kernel(const std::uint32_t* __restrict__ gmem_in,
                              std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    for (int i = threadIdx.x; i < kBatchElems; i += blockDim.x) {
      gmem_out[batch * kBatchElems + i] =
          smooth(gmem_batch[(i - 1) & (kBatchElems - 1)], gmem_batch[i],
                 gmem_batch[(i + 1) & (kBatchElems - 1)]);
    }
  }
}

// The same with a 16-byte load of four elements, two 4-byte loads of the elements beside them,
// and four outputs written with one 16-byte store.
__global__ void direct_uint4_kernel(const std::uint32_t* __restrict__ gmem_in,
                                    std::uint32_t* __restrict__ gmem_out, std::size_t num_batches) {
  constexpr int kVecs = kBatchBytes / sizeof(uint4);
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    const std::uint32_t* gmem_batch = gmem_in + batch * kBatchElems;
    for (int v = threadIdx.x; v < kVecs; v += blockDim.x) {
      const int first = v * 4;
      const uint4 centre = reinterpret_cast<const uint4*>(gmem_batch)[v];
      const std::uint32_t left = gmem_batch[(first - 1) & (kBatchElems - 1)];
      const std::uint32_t right = gmem_batch[(first + 4) & (kBatchElems - 1)];
      const uint4 out = {smooth(left, centre.x, centre.y), smooth(centre.x, centre.y, centre.z),
                         smooth(centre.y, centre.z, centre.w), smooth(centre.z, centre.w, right)};
      reinterpret_cast<uint4*>(gmem_out + batch * kBatchElems)[v] = out;
    }
  }
}
/// [direct]

/// [prefetch_regs]
// The uint4 copy with the loads of the block's next kAhead batches in flight while it computes
// the current one. A batch is one uint4 per thread (4 KiB = 256 x 16 bytes); ahead[d] holds
// this thread's uint4 of a batch still to be computed. The loop over d is unrolled, so each
// ahead[d] is a register of its own, and the store of batch b waits for a load issued kAhead
// batches earlier.
template <int kAhead>
__global__ void prefetch_regs_kernel(const std::uint32_t* __restrict__ gmem_in,
                                     std::uint32_t* __restrict__ gmem_out,
                                     std::size_t num_batches) {
  static_assert(kBatchBytes == kBlockThreads * sizeof(uint4),
                "one uint4 of every batch per thread");
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  const std::size_t stride = gridDim.x;  // between this block's batches
  auto load = [&](std::size_t batch) {  // this thread's uint4 of `batch`: one 16-byte LDG
    return reinterpret_cast<const uint4*>(gmem_in + batch * kBatchElems)[threadIdx.x];
  };

  uint4 ahead[kAhead] = {};  // [kAhead] batches of this thread's 16 bytes, in registers
#pragma unroll
  for (int d = 0; d < kAhead; ++d) {
    if (blockIdx.x + d * stride < num_batches) ahead[d] = load(blockIdx.x + d * stride);  // prime
  }
  for (std::size_t first = blockIdx.x; first < num_batches; first += kAhead * stride) {
#pragma unroll
    for (int d = 0; d < kAhead; ++d) {
      const std::size_t batch = first + d * stride;
      if (batch >= num_batches) break;  // the same for every thread of the block
      // The store waits for its load, issued kAhead batches ago.
      reinterpret_cast<uint4*>(smem_batch)[threadIdx.x] = ahead[d];
      block.sync();  // the whole batch has landed before neighbours are read
      const std::size_t next = batch + kAhead * stride;
      if (next < num_batches) ahead[d] = load(next);  // in flight while this batch is computed
      compute_batch(smem_batch, gmem_out + batch * kBatchElems);
      block.sync();  // the batch is no longer read when the next store overwrites it
    }
  }
}
/// [prefetch_regs]

// ---- The rows ---------------------------------------------------------------------------------

const ::Variant kVariants[] = {
    {"width_4_loads_first", "4-byte loads, a thread's four loads issued before its first store",
     &launch_batch_grid<loads_first_kernel>},
    {"direct", "no shared memory: neighbours read from global memory, 4-byte loads",
     &launch_batch_grid<direct_kernel>},
    {"direct_uint4", "no shared memory: a 16-byte load and two 4-byte neighbours",
     &launch_batch_grid<direct_uint4_kernel>},
    {"width_16_resident", "sync_copy_uint4 on a resident grid: blocks loop over batches",
     &launch_resident<sync_copy_uint4_kernel>},
    {"prefetch_regs_1", "uint4 copy, resident grid, the next batch in registers during the compute",
     &launch_resident<prefetch_regs_kernel<1>>},
    {"prefetch_regs_4", "uint4 copy, resident grid, the next 4 batches in registers",
     &launch_resident<prefetch_regs_kernel<4>>},
};

// ---- run(): verify every row, then time the correct ones ----------------------------------

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const ::Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v.launch, problem); },
        [&] { v.launch(problem.gmem_in.data(), problem.gmem_out.data(), problem.num_batches); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "sync_copy_lab";
  info.title = "01 sync_copy lab: load order, no staging, the grid, prefetch through registers";
  info.explanation =
      "The lesson's copy with a thread's 4-byte loads issued before its stores, without shared\n"
      "memory (neighbours read from global memory), on a resident grid whose blocks loop over the\n"
      "batches, and there with the next 1 or 4 batches of a block loaded into registers while the\n"
      "current one is computed.";
  info.host_model = [](std::ostream& out) {  // every row's batch, and what it keeps in flight
    const std::vector<CopyPlan> plans = copy_plans();
    std::vector<CopyPlan> rows;
    for (const ::Variant& v : kVariants) rows.push_back(*find_plan(plans, v.name));
    print_batch_costs(out, rows, kBatchBytes, kBlockThreads, MachineModel{});
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
