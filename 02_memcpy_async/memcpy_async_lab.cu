// 02_memcpy_async lab: copy widths, what happens when the alignment cannot be proven, and
// 16-byte stores on the compute side.
//
// The lesson proves 16-byte alignment everywhere. This program asks "what if":
//   align4: the lesson's cuda_memcpy_async_block with aligned_size_t<4>: 1024 four-byte LDGSTS
//     through L1 per batch, on 9.0 too (a bulk copy needs 16 bytes proven);
//   misaligned_cg, misaligned_cuda: the source 4 bytes past a 16-byte boundary, passed as char
//     pointers with a plain size. cooperative_groups compares the addresses at run time and still
//     issues 4-byte LDGSTS; cuda::memcpy_async, told 1 byte, copies byte by byte, synchronously;
//   ldgsts_4, ldgsts_8, ldgsts_16: the copy width alone. cuda::memcpy_async with
//     aligned_size_t<4>, <8> and <16>, completing on a thread-scope cuda::pipeline (commit and
//     wait groups, chapter 04), because on a shared-memory barrier the 16-byte copy would become
//     a bulk copy on 9.0: with the pipeline all three are LDGSTS on 8.0 and on 9.0;
//   cg_memcpy_async_wide, cuda_memcpy_async_block_wide: the lesson's kernels with only the
//     consumer changed. Each of the 256 threads computes four neighbouring outputs and writes
//     them with one 16-byte store (st.global.v4) instead of four 4-byte stores: a quarter of the
//     store instructions for the same bytes. The copy is the lesson's, instruction for instruction;
//   cg_memcpy_async_resident: the lesson's cg_memcpy_async on the grid the lesson had before it took
//     chapter 01's batch grid: as many blocks as fit at once, each looping over batches k, k + grid, ...
// Every row is verified bit for bit before it is timed, as in the lesson.
// Hardware: compute capability 8.0+ (LDGSTS), as the lesson.
// Run: build/02_memcpy_async/memcpy_async_lab [--bench] [--variant=NAME] [--size=N]
// API: cuda::pipeline  https://nvidia.github.io/cccl/libcudacxx/extended_api/synchronization_primitives/pipeline.html
#include <cuda/pipeline>

#include <string>
#include <vector>

#include "memcpy_async.cu"  // the lesson: the batch, compute_batch, launch_batch_grid, Problem, the model

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

/// [align4]
// The lesson's cuda_memcpy_async_block_kernel, line for line, with 4-byte alignment promised (and
// without the proxy fence, which only the bulk copy of 16 bytes on 9.0 needs).
__global__ void align4_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // its phase completes when the batch has landed
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // one thread initialises: every thread arrives
  block.sync();  // nobody touches the barrier before its initialisation is visible

  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    // aligned_size_t<4>: cp.async.ca of 4 bytes, through L1, on 9.0 as well.
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<4>(kBatchBytes),
                       full_bar);
    full_bar.arrive_and_wait();  // every thread arrived and every bound copy landed
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [align4]

/// [misaligned]
// The source is 4 bytes past a 16-byte boundary, and char pointers prove 1-byte alignment.
// cooperative_groups looks at the two addresses at run time and picks the widest copy they
// allow (4 bytes here); cuda::memcpy_async decides at compile time from the 1 byte it was told:
// a synchronous byte-by-byte copy through registers.
__global__ void misaligned_cg_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cg::memcpy_async(block, reinterpret_cast<char*>(smem_batch),
                     reinterpret_cast<const char*>(gmem_in + batch * kBatchElems), std::size_t{kBatchBytes});
    cg::wait(block);  // this thread's copies landed, then the block joins
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}

__global__ void misaligned_cuda_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // every thread arrives once per batch
  block.sync();  // nobody touches the barrier before its initialisation is visible
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cuda::memcpy_async(block, reinterpret_cast<char*>(smem_batch),
                       reinterpret_cast<const char*>(gmem_in + batch * kBatchElems), std::size_t{kBatchBytes},
                       full_bar);
    full_bar.arrive_and_wait();  // the (synchronous) copies are done and every thread arrived
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [misaligned]

/// [ldgsts_width]
// One collective cuda::memcpy_async per batch with kCopyBytes proven: LDGSTS of that width on
// 8.0 and 9.0 alike. A thread-scope pipeline is only this thread's commit and wait groups.
template <std::size_t kCopyBytes>
__global__ void ldgsts_width_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  static_assert(kCopyBytes == 4 || kCopyBytes == 8 || kCopyBytes == 16, "LDGSTS copies 4, 8 or 16 bytes");
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    pipe.producer_acquire();
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<kCopyBytes>(kBatchBytes), pipe);
    pipe.producer_commit();  // cp.async.commit_group: close this thread's group of copies
    pipe.consumer_wait();    // cp.async.wait_group: this thread's copies landed, nobody else's
    block.sync();            // so the block synchronises before reading what other threads copied
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    pipe.consumer_release();
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [ldgsts_width]

/// [wide_consumer]
// The lesson's compute_batch with four outputs per thread: one 16-byte shared load of the
// thread's four elements plus the word on each side, and one 16-byte global store (st.global.v4)
// where the lesson issues four 4-byte ones. Same formula, same ring at the batch's two edges.
__device__ void compute_batch_wide(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch) {
  static_assert(kBatchBytes % sizeof(uint4) == 0, "the batch is a whole number of 16-byte chunks");
  const uint4* smem_chunks = reinterpret_cast<const uint4*>(smem_batch);  // smem_batch is alignas(16)
  uint4* gmem_chunks = reinterpret_cast<uint4*>(gmem_out_batch);  // batches start 4 KiB apart in the output
  for (int c = threadIdx.x; c < kBatchElems / kChunkElems; c += blockDim.x) {  // once per thread at 256 threads
    const int first = c * kChunkElems;
    const uint4 mid = smem_chunks[c];
    const std::uint32_t left = smem_batch[(first - 1) & (kBatchElems - 1)];
    const std::uint32_t right = smem_batch[(first + kChunkElems) & (kBatchElems - 1)];
    gmem_chunks[c] = make_uint4(smooth(left, mid.x, mid.y), smooth(mid.x, mid.y, mid.z), smooth(mid.y, mid.z, mid.w),
                                smooth(mid.z, mid.w, right));
  }
}

// The lesson's cg_memcpy_async_kernel, line for line, with compute_batch_wide.
__global__ void cg_memcpy_async_wide_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                            std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cg::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes));
    cg::wait(block);  // this thread's copies landed, then the block joins: the whole batch is visible
    compute_batch_wide(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}

// The lesson's cuda_memcpy_async_block_kernel, line for line, with compute_batch_wide (a bulk
// copy on 9.0, 16-byte LDGSTS on 8.0, as in the lesson).
__global__ void cuda_memcpy_async_block_wide_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                                    std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  __shared__ block_barrier full_bar;  // its phase completes when the batch has landed
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&full_bar, block.size());  // one thread initialises: every thread arrives
  fence_barrier_init_for_tma();  // 9.0: the initialised barrier, visible to the bulk copy's completion
  block.sync();  // nobody touches the barrier before its initialisation is visible
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems, cuda::aligned_size_t<16>(kBatchBytes),
                       full_bar);
    full_bar.arrive_and_wait();  // every thread arrived and every bound copy landed
    compute_batch_wide(smem_batch, gmem_out + batch * kBatchElems);
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [wide_consumer]

// ---- The rows ---------------------------------------------------------------------------------

constexpr std::size_t kMisalignBytes = 4;  // the misaligned rows' source: this far past a 16-byte boundary

// A lesson row plus where its input starts.
struct Variant {
  const char* name;
  const char* summary;
  ::Launch launch;
  bool misaligned_input = false;  // read the copy of the input that starts kMisalignBytes off
};
const Variant kVariants[] = {
    {"align4", "the lesson's cuda_memcpy_async_block with aligned_size_t<4>: 4-byte copies through L1",
     &launch_batch_grid<align4_kernel>},
    {"misaligned_cg", "source 4 bytes off, char pointers: cg picks 4-byte copies at run time",
     &launch_batch_grid<misaligned_cg_kernel>, true},
    {"misaligned_cuda", "the same with cuda::memcpy_async: a synchronous byte-by-byte copy",
     &launch_batch_grid<misaligned_cuda_kernel>, true},
    {"ldgsts_4", "cuda::memcpy_async, aligned_size_t<4>, thread-scope pipeline: 4-byte LDGSTS",
     &launch_batch_grid<ldgsts_width_kernel<4>>},
    {"ldgsts_8", "the same with aligned_size_t<8>: 8-byte LDGSTS", &launch_batch_grid<ldgsts_width_kernel<8>>},
    {"ldgsts_16", "the same with aligned_size_t<16>: 16-byte LDGSTS, on 9.0 too",
     &launch_batch_grid<ldgsts_width_kernel<16>>},
    {"cg_memcpy_async_wide", "the lesson's cg_memcpy_async, each thread storing four outputs at once (16 bytes)",
     &launch_batch_grid<cg_memcpy_async_wide_kernel>},
    {"cuda_memcpy_async_block_wide", "the lesson's cuda_memcpy_async_block with the same 16-byte stores",
     &launch_batch_grid<cuda_memcpy_async_block_wide_kernel>},
    {"cg_memcpy_async_resident", "the lesson's cg_memcpy_async on a resident grid: blocks loop over k, k + grid, ...",
     &launch_resident<cg_memcpy_async_kernel>},
};

// The wide rows and the resident row copy exactly as the lesson's rows they are named after: the
// model's row for that copy, under the lab's name (neither the consumer nor the grid is the model's
// subject).
struct LessonCopyRow {
  const char* variant;
  const char* lesson_variant;
};
constexpr LessonCopyRow kLessonCopyRows[] = {{"cg_memcpy_async_wide", "cg_memcpy_async"},
                                             {"cuda_memcpy_async_block_wide", "cuda_memcpy_async_block"},
                                             {"cg_memcpy_async_resident", "cg_memcpy_async"}};

// The model's rows of the lesson and the lab, the wide and resident rows included.
std::vector<VariantCopies> copy_rows() {
  const std::vector<VariantCopies> model = batch_copies(kBlockThreads, kBatchBytes);
  std::vector<VariantCopies> rows = model;
  for (const LessonCopyRow& wide : kLessonCopyRows) {
    for (const VariantCopies& row : model) {
      if (std::string(row.variant) != wide.lesson_variant) continue;
      VariantCopies copy = row;
      copy.program = "memcpy_async_lab";
      copy.variant = wide.variant;
      rows.push_back(copy);
    }
  }
  return rows;
}

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem plus a second copy of the input that starts kMisalignBytes past the
// 16-byte aligned start of its allocation.
struct Problem : ::Problem {
  explicit Problem(std::size_t num_batches)
      : ::Problem(num_batches), gmem_in_misaligned(host_in.size() + kChunkElems) {
    COURSE_CHECK(cudaMemcpy(misaligned_input(), host_in.data(), host_in.size() * sizeof(std::uint32_t),
                            cudaMemcpyHostToDevice));
  }
  std::uint32_t* misaligned_input() { return gmem_in_misaligned.data() + kMisalignBytes / sizeof(std::uint32_t); }
  const std::uint32_t* input(const Variant& v) { return v.misaligned_input ? misaligned_input() : gmem_in.data(); }
  course::DeviceBuffer<std::uint32_t> gmem_in_misaligned;
};

course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  variant.launch(problem.input(variant), problem.gmem_out.data(), problem.num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

void run(const course::Options& opts, course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : kVariants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(problem.input(v), problem.gmem_out.data(), problem.num_batches); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "memcpy_async_lab";
  info.title = "02 memcpy_async lab: copy widths, and sources whose alignment cannot be proven";
  info.explanation =
      "The lesson's batches copied with 4-byte alignment promised on a barrier, from a source 4 bytes\n"
      "off a 16-byte boundary through char pointers (cooperative_groups and cuda::memcpy_async), and\n"
      "with 4-, 8- and 16-byte LDGSTS completing on a thread-scope cuda::pipeline; two lesson kernels\n"
      "whose threads each store four outputs with one 16-byte store instead of four 4-byte stores; and\n"
      "the lesson's cg_memcpy_async on a resident grid whose blocks loop over the batches.";
  info.host_model = [](std::ostream& out) { print_copy_paths(out, copy_rows(), "memcpy_async_lab"); };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
