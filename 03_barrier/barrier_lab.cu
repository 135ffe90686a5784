// 03_barrier lab: the guide's plain byte count, and rings of one to four buffers.
//
// The lesson passes cuda::aligned_size_t<16> and keeps two buffers. This program asks "what if":
//   arrive_and_wait_plain_size: the lesson's arrive_and_wait with the CUDA 11 guide's plain
//     std::size_t byte count, which proves only 4-byte alignment: 4-byte LDGSTS through L1 on
//     8.0 and on 9.0 (no bulk copy), 1024 copy instructions per batch instead of 256 or one;
//   parity_s1 .. parity_s4, noinc_s1 .. noinc_s4: the lesson's parity and noinc kernels with the
//     number of buffers as a template parameter (the _s2 rows are the lesson's kernels). The
//     lesson's StageCursor walks every ring; the prime loads kStages - 1 batches ahead. One buffer
//     overlaps nothing inside a block; more keep more bytes in flight per block, on top of the
//     eight blocks an SM holds anyway. parity is a bulk copy on 9.0, noinc stays LDGSTS. On the
//     lesson's grid a block has four batches, so four buffers take them all at once;
//   parity_s2_resident: the lesson's parity on the grid the lesson had before it took chapter 01's
//     batch grid: as many blocks as fit at once, each looping over batches k, k + grid, ...
// Every row is verified bit for bit before it is timed, as in the lesson.
// Hardware: compute capability 8.0+ (mbarrier, LDGSTS), as the lesson.
// Run: build/03_barrier/barrier_lab [--bench] [--variant=NAME] [--size=N]
// Guide: https://docs.nvidia.com/cuda/archive/11.8.0/cuda-c-programming-guide/index.html#asynchronous-data-copies-using-cuda-barrier
#include "barrier.cu"  // the lesson: the batch, compute_batch, StageCursor, the kernels, launch_batch_grid, Problem, verify

namespace lab {

/// [resident]
// The lesson's launch before the batch grid: every SM filled with resident blocks, never more
// blocks than batches; each block loops over batches k, k + gridDim.x, ... for the whole run.
template <auto kKernel>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  int device = 0, num_sms = 0, blocks_per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kKernel, kBlockThreads, 0));
  const std::size_t resident = static_cast<std::size_t>(num_sms) * blocks_per_sm;
  kKernel<<<static_cast<unsigned>(num_batches < resident ? num_batches : resident), kBlockThreads>>>(gmem_in, gmem_out,
                                                                                                    num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

/// [plain_size]
// The lesson's arrive_and_wait_kernel, line for line, with the guide's plain byte count.
__global__ void arrive_and_wait_plain_size_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                                  std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // phase k completes when batch k of this block has landed
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // each thread arrives once per phase
  fence_barrier_init_for_tma();  // as in the lesson (this kernel's 4-byte copies stay LDGSTS on 9.0)
  block.sync();  // nobody touches the barrier before its initialisation is visible

  std::uint32_t phase = 0;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, phase ^= 1u) {
    // A std::size_t proves only alignof(std::uint32_t): 4-byte LDGSTS (cp.async.ca), also on 9.0.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, kBatchBytes, full_bar);
    course::bounded_wait(full_bar, full_bar.arrive(), {"full", 0, phase});  // every thread's copies landed
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // the batch is no longer read when the next copy overwrites it
  }
}
/// [plain_size]

// ---- The lesson's ring kernels with the number of buffers as a template parameter ------------
// Line for line the lesson's, with kStages a template parameter instead of the lesson's constant.

template <int kStages>
__global__ void parity_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ block_barrier full_bar[kStages];
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    for (int s = 0; s < kStages; ++s) init(&full_bar[s], block.size());  // each thread arrives once per phase
  }
  fence_barrier_init_for_tma();  // 9.0: the initialised barriers, visible to the bulk copies' completion
  block.sync();  // every barrier initialised before first use

  StageCursor<kStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    cuda::memcpy_async(block, smem_batch[load_at.stage], gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), full_bar[load_at.stage]);
    (void)full_bar[load_at.stage].arrive();  // arrival only: the wait below names the phase by its parity
    load_at.advance();
  };

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  StageCursor<kStages> wait_at;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    load(batch + (kStages - 1) * std::size_t{gridDim.x});
    std::uint64_t* full_mbar = cuda::device::barrier_native_handle(full_bar[wait_at.stage]);
    course::bounded_wait_parity(full_mbar, wait_at.phase, {"full", wait_at.stage, wait_at.phase});  // batch landed
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems);
    block.sync();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
}

template <int kStages>
__global__ void noinc_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kStages][kBatchElems];
  __shared__ std::uint64_t full_bar[kStages];  // raw mbarriers: 8 bytes of shared memory each
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full_bar[s], 2 * blockDim.x);  // own + .noinc arrivals
  }
  __syncthreads();  // every barrier initialised before first use

  const int chunk = threadIdx.x * kChunkElems;
  StageCursor<kStages> load_at;
  auto load = [&](std::size_t batch) {
    if (batch >= num_batches) return;
    __pipeline_memcpy_async(&smem_batch[load_at.stage][chunk], gmem_in + batch * kBatchElems + chunk, kChunkBytes);
    cuda::ptx::cp_async_mbarrier_arrive_noinc(&full_bar[load_at.stage]);  // arrives when this thread's copies have landed
    (void)cuda::ptx::mbarrier_arrive(&full_bar[load_at.stage]);            // this thread's own arrival
    load_at.advance();
  };

  for (int s = 0; s < kStages - 1; ++s) load(blockIdx.x + s * std::size_t{gridDim.x});  // prime
  StageCursor<kStages> wait_at;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, wait_at.advance()) {
    load(batch + (kStages - 1) * std::size_t{gridDim.x});
    course::bounded_wait_parity(&full_bar[wait_at.stage], wait_at.phase, {"full", wait_at.stage, wait_at.phase});  // landed
    compute_batch(smem_batch[wait_at.stage], gmem_out + batch * kBatchElems);
    __syncthreads();  // smem_batch[stage] is no longer read: the next iteration refills it
  }
  if (threadIdx.x == 0) {  // every wait returned, no copy pending: the barriers may be invalidated
    for (int s = 0; s < kStages; ++s) __mbarrier_inval(&full_bar[s]);
  }
}

// ---- The rows ---------------------------------------------------------------------------------

const ::Variant kVariants[] = {
    {"arrive_and_wait_plain_size", "the lesson's arrive_and_wait with the guide's plain byte count: 4-byte LDGSTS",
     &launch_batch_grid<arrive_and_wait_plain_size_kernel>},
    {"parity_s1", "parity waits, one buffer: nothing overlaps inside a block", &launch_batch_grid<parity_kernel<1>>},
    {"parity_s2", "parity waits, two buffers (the lesson's parity)", &launch_batch_grid<parity_kernel<2>>},
    {"parity_s3", "parity waits, three buffers", &launch_batch_grid<parity_kernel<3>>},
    {"parity_s4", "parity waits, four buffers", &launch_batch_grid<parity_kernel<4>>},
    {"noinc_s1", "raw mbarriers and .noinc, one buffer", &launch_batch_grid<noinc_kernel<1>>},
    {"noinc_s2", "raw mbarriers and .noinc, two buffers (the lesson's noinc)", &launch_batch_grid<noinc_kernel<2>>},
    {"noinc_s3", "raw mbarriers and .noinc, three buffers", &launch_batch_grid<noinc_kernel<3>>},
    {"noinc_s4", "raw mbarriers and .noinc, four buffers", &launch_batch_grid<noinc_kernel<4>>},
    {"parity_s2_resident", "parity_s2 on a resident grid: blocks loop over batches k, k + grid, ...",
     &launch_resident<parity_kernel<2>>},
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
  info.program = "barrier_lab";
  info.title = "03 barrier lab: the guide's plain byte count, and rings of one to four buffers";
  info.explanation =
      "The lesson's arrive_and_wait with the CUDA 11 guide's plain byte count (4-byte LDGSTS, on 9.0\n"
      "too), the lesson's parity and noinc kernels with 1, 2, 3 and 4 buffers of 4 KiB, a load\n"
      "cursor and a wait cursor walking each ring, and the lesson's parity on a resident grid.";
  info.host_model = [](std::ostream& out) {  // where each ring's waits go: batch b in buffer b % S
    print_cursor_walk<StageCursor<1>>(out, "one buffer", 6);
    print_cursor_walk<StageCursor<2>>(out, "two buffers", 6);
    print_cursor_walk<StageCursor<3>>(out, "three buffers", 9);
    print_cursor_walk<StageCursor<4>>(out, "four buffers", 12);
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
