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
//   ldgsts_4_offset_4, ldgsts_16_offset_16, ldgsts_16_offset_64: the kernels of ldgsts_4 and ldgsts_16
//     on a source 4, 16 or 64 bytes past a 128-byte line (the guide's 128-byte alignment);
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

#include <cstdio>
#include <ostream>
#include <stdexcept>
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

// ---- Where a warp's copy falls in 128-byte lines ---------------------------------------------

/// [line_model]
// TUTORIAL: the guide asks for more than the 4, 8 or 16 bytes a copy width needs: LDGSTS performs
// best when both the global source and the shared destination are 128-byte aligned. The offset
// rows move the source alone; the destination is the lesson's shared batch. The collective
// copy hands consecutive units of the batch to consecutive threads, so one warp's LDGSTS
// instruction reads 32 * width contiguous bytes: 512 for 16-byte copies, 128 for 4-byte ones.
// Batches start 4 KiB apart, so every such request starts as far past a 128-byte boundary as the
// input does. Starting on the boundary, 512 bytes are exactly 4 lines; 16 or 64 bytes past it,
// the same bytes reach into a fifth. Memory moves in 32-byte sectors: 64 bytes past the boundary
// still covers exactly 16 sectors, 16 bytes past it 17.
constexpr std::size_t kLineBytes = 128;   // a cache line, the alignment the guide recommends
constexpr std::size_t kSectorBytes = 32;  // the unit a line is filled in
constexpr std::size_t kWarpLanes = 32;

// The `unit_bytes`-sized pieces of memory (lines or sectors) one warp's copy instruction touches
// when each of its 32 lanes copies `copy_bytes` contiguous bytes and lane 0 starts `offset_bytes`
// past a 128-byte boundary.
constexpr std::size_t units_per_warp_request(std::size_t offset_bytes, std::size_t copy_bytes, std::size_t unit_bytes) {
  const std::size_t first = offset_bytes % unit_bytes, span = kWarpLanes * copy_bytes;
  return (first + span + unit_bytes - 1) / unit_bytes;
}
/// [line_model]

// The rows of the alignment comparison, with the copy width their kernel proves.
struct LineRow {
  const char* variant;
  std::size_t copy_bytes;
  std::size_t src_offset_bytes;
};
constexpr LineRow kLineRows[] = {{"ldgsts_4", 4, 0},
                                 {"ldgsts_4_offset_4", 4, 4},
                                 {"ldgsts_16", 16, 0},
                                 {"ldgsts_16_offset_16", 16, 16},
                                 {"ldgsts_16_offset_64", 16, 64}};

void print_line_model(std::ostream& out) {
  out << "Lines of 128 B and sectors of 32 B one warp's LDGSTS instruction touches (32 lanes, contiguous):\n";
  for (const LineRow& row : kLineRows) {
    char line[160];
    const std::size_t lines = units_per_warp_request(row.src_offset_bytes, row.copy_bytes, kLineBytes);
    std::snprintf(line, sizeof line, "  %-26s %2zu-byte copies, source %2zu B past a line: %zu line%s, %2zu sectors\n",
                  row.variant, row.copy_bytes, row.src_offset_bytes, lines, lines == 1 ? "" : "s",
                  units_per_warp_request(row.src_offset_bytes, row.copy_bytes, kSectorBytes));
    out << line;
  }
}

// ---- The rows ---------------------------------------------------------------------------------

constexpr std::size_t kMisalignBytes = 4;  // the misaligned rows' source: this far past a 16-byte boundary

// A lesson row plus where its input starts.
struct Variant {
  const char* name;
  const char* summary;
  ::Launch launch;
  std::size_t src_offset_bytes = 0;  // read the copy of the input that starts this far past a 128-byte boundary
};
const Variant kVariants[] = {
    {"align4", "the lesson's cuda_memcpy_async_block with aligned_size_t<4>: 4-byte copies through L1",
     &launch_batch_grid<align4_kernel>},
    {"misaligned_cg", "source 4 bytes off, char pointers: cg picks 4-byte copies at run time",
     &launch_batch_grid<misaligned_cg_kernel>, kMisalignBytes},
    {"misaligned_cuda", "the same with cuda::memcpy_async: a synchronous byte-by-byte copy",
     &launch_batch_grid<misaligned_cuda_kernel>, kMisalignBytes},
    {"ldgsts_4", "cuda::memcpy_async, aligned_size_t<4>, thread-scope pipeline: 4-byte LDGSTS",
     &launch_batch_grid<ldgsts_width_kernel<4>>},
    {"ldgsts_8", "the same with aligned_size_t<8>: 8-byte LDGSTS", &launch_batch_grid<ldgsts_width_kernel<8>>},
    {"ldgsts_16", "the same with aligned_size_t<16>: 16-byte LDGSTS, on 9.0 too",
     &launch_batch_grid<ldgsts_width_kernel<16>>},
    {"ldgsts_4_offset_4", "ldgsts_4 from a source 4 bytes past a 128-byte line: 2 lines per warp request",
     &launch_batch_grid<ldgsts_width_kernel<4>>, 4},
    {"ldgsts_16_offset_16", "ldgsts_16 from a source 16 bytes past a 128-byte line: 5 lines per warp request",
     &launch_batch_grid<ldgsts_width_kernel<16>>, 16},
    {"ldgsts_16_offset_64", "ldgsts_16 from a source 64 bytes past a 128-byte line: 5 lines, 16 sectors",
     &launch_batch_grid<ldgsts_width_kernel<16>>, 64},
    {"cg_memcpy_async_wide", "the lesson's cg_memcpy_async, each thread storing four outputs at once (16 bytes)",
     &launch_batch_grid<cg_memcpy_async_wide_kernel>},
    {"cuda_memcpy_async_block_wide", "the lesson's cuda_memcpy_async_block with the same 16-byte stores",
     &launch_batch_grid<cuda_memcpy_async_block_wide_kernel>},
    {"cg_memcpy_async_resident", "the lesson's cg_memcpy_async on a resident grid: blocks loop over k, k + grid, ...",
     &launch_resident<cg_memcpy_async_kernel>},
};

// The wide rows and the resident row copy exactly as the lesson's rows they are named after, the
// offset rows as ldgsts_4 and ldgsts_16 from another address: the model's row for that copy, under
// the lab's name (neither the consumer, nor the grid, nor a source still aligned to the width is
// the model's subject).
struct LessonCopyRow {
  const char* variant;
  const char* lesson_variant;
};
constexpr LessonCopyRow kLessonCopyRows[] = {{"cg_memcpy_async_wide", "cg_memcpy_async"},
                                             {"cuda_memcpy_async_block_wide", "cuda_memcpy_async_block"},
                                             {"cg_memcpy_async_resident", "cg_memcpy_async"},
                                             {"ldgsts_4_offset_4", "ldgsts_4"},
                                             {"ldgsts_16_offset_16", "ldgsts_16"},
                                             {"ldgsts_16_offset_64", "ldgsts_16"}};

std::size_t src_offset_of(const std::string& variant) {
  for (const Variant& v : kVariants) {
    if (variant == v.name) return v.src_offset_bytes;
  }
  throw std::invalid_argument("no lab row named " + variant);
}

// The model's rows of the lesson and the lab, the wide, resident and offset rows included.
std::vector<VariantCopies> copy_rows() {
  const std::vector<VariantCopies> model = batch_copies(kBlockThreads, kBatchBytes);
  std::vector<VariantCopies> rows = model;
  for (const LessonCopyRow& same : kLessonCopyRows) {
    for (const VariantCopies& row : model) {
      if (std::string(row.variant) != same.lesson_variant) continue;
      VariantCopies copy = row;
      copy.program = "memcpy_async_lab";
      copy.variant = same.variant;
      for (CopyCall& call : copy.calls) call.src_offset = src_offset_of(same.variant) % 16;  // past a 16-byte boundary
      rows.push_back(copy);
    }
  }
  return rows;
}

// ---- run(): verify every row, then time the correct ones ----------------------------------

// The lesson's problem plus a second copy of the input that starts a row's offset past a 128-byte
// boundary: cudaMalloc returns 256-byte aligned memory, and the copy starts that many bytes into
// it. One copy at a time (the input is 1 GiB when timing): it is written again when a row asks for
// another offset, which happens in verify(), before any timing.
struct Problem : ::Problem {
  explicit Problem(std::size_t num_batches)
      : ::Problem(num_batches), gmem_in_shifted(host_in.size() + kLineBytes / sizeof(std::uint32_t)) {}
  const std::uint32_t* input_at(std::size_t offset_bytes) {
    if (offset_bytes == 0) return gmem_in.data();
    if (offset_bytes % sizeof(std::uint32_t) != 0 || offset_bytes >= kLineBytes) {
      throw std::invalid_argument("a row's input starts a whole number of uint32 words, under 128 bytes, past a line");
    }
    std::uint32_t* start = gmem_in_shifted.data() + offset_bytes / sizeof(std::uint32_t);
    if (offset_bytes != shifted_offset_bytes) {
      COURSE_CHECK(cudaMemcpy(start, host_in.data(), host_in.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
      shifted_offset_bytes = offset_bytes;
    }
    return start;
  }
  const std::uint32_t* input(const Variant& v) { return input_at(v.src_offset_bytes); }
  course::DeviceBuffer<std::uint32_t> gmem_in_shifted;
  std::size_t shifted_offset_bytes = 0;  // where gmem_in_shifted holds the input now (0: nowhere yet)
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
      "with 4-, 8- and 16-byte LDGSTS completing on a thread-scope cuda::pipeline, also from sources\n"
      "4, 16 and 64 bytes past a 128-byte line; two lesson kernels whose threads each store four\n"
      "outputs with one 16-byte store instead of four 4-byte stores; and the lesson's cg_memcpy_async\n"
      "on a resident grid whose blocks loop over the batches.";
  info.host_model = [](std::ostream& out) {
    print_copy_paths(out, copy_rows(), "memcpy_async_lab");
    print_line_model(out);
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
