// 02_memcpy_async lab: what happens when the alignment cannot be proven, and where a copy falls in
// 128-byte lines.
//
// The lesson proves 16-byte alignment everywhere. This program asks "what if":
//   misaligned_cg, misaligned_cuda: the source 4 bytes past a 16-byte boundary, passed as char
//     pointers with a plain size. cooperative_groups compares the addresses at run time and still
//     issues 4-byte LDGSTS; cuda::memcpy_async, told 1 byte, copies byte by byte, synchronously;
//   ldgsts_16, ldgsts_16_offset_16: 16-byte LDGSTS completing on a thread-scope cuda::pipeline
//     (commit and wait groups; on a shared-memory barrier the copy would be a bulk copy on 9.0),
//     from an input on a 128-byte line and from one 16 bytes past it (the guide's 128-byte
//     alignment): the same instructions, one 32-byte sector more per warp request.
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
// One collective cuda::memcpy_async per batch with 16 bytes proven, completing on a thread-scope
// pipeline: 16-byte LDGSTS on 8.0 and 9.0 alike (on the lesson's block barrier, 9.0 would make it
// a bulk copy). A thread-scope pipeline is only this thread's commit and wait groups.
__global__ void ldgsts_pipeline_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                                       std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batch[kBatchElems];
  cg::thread_block block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    pipe.producer_acquire();
    cuda::memcpy_async(block, smem_batch, gmem_in + batch * kBatchElems,
                       cuda::aligned_size_t<16>(kBatchBytes), pipe);
    pipe.producer_commit();  // cp.async.commit_group: close this thread's group of copies
    pipe.consumer_wait();    // cp.async.wait_group: this thread's copies landed, nobody else's
    block.sync();            // so the block synchronises before reading what other threads copied
    compute_batch(smem_batch, gmem_out + batch * kBatchElems);
    pipe.consumer_release();
    block.sync();  // nobody still reads this batch when the next iteration overwrites it
  }
}
/// [ldgsts_width]

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
constexpr LineRow kLineRows[] = {{"ldgsts_16", 16, 0}, {"ldgsts_16_offset_16", 16, 16}};

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
    {"misaligned_cg", "source 4 bytes off, char pointers: cg picks 4-byte copies at run time",
     &launch_batch_grid<misaligned_cg_kernel>, kMisalignBytes},
    {"misaligned_cuda", "the same with cuda::memcpy_async: a synchronous byte-by-byte copy",
     &launch_batch_grid<misaligned_cuda_kernel>, kMisalignBytes},
    {"ldgsts_16", "cuda::memcpy_async, aligned_size_t<16>, thread-scope pipeline: 16-byte LDGSTS",
     &launch_batch_grid<ldgsts_pipeline_kernel>},
    {"ldgsts_16_offset_16", "ldgsts_16 from a source 16 bytes past a 128-byte line: 17 sectors",
     &launch_batch_grid<ldgsts_pipeline_kernel>, 16},
};

// The offset row copies exactly as ldgsts_16, from another address: the model's row for that
// copy, under the lab's name (a source still aligned to the width is not the model's subject).
struct LessonCopyRow {
  const char* variant;
  const char* lesson_variant;
};
constexpr LessonCopyRow kLessonCopyRows[] = {{"ldgsts_16_offset_16", "ldgsts_16"}};

std::size_t src_offset_of(const std::string& variant) {
  for (const Variant& v : kVariants) {
    if (variant == v.name) return v.src_offset_bytes;
  }
  throw std::invalid_argument("no lab row named " + variant);
}

// The model's rows of the lesson and the lab, the offset row included.
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
      "The lesson's batches from a source 4 bytes off a 16-byte boundary through char pointers\n"
      "(cooperative_groups and cuda::memcpy_async), and with 16-byte LDGSTS completing on a\n"
      "thread-scope cuda::pipeline, from an input on a 128-byte line and 16 bytes past one.";
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
