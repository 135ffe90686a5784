// 03_barrier lab: what more buffers, and what the grid, are worth to the lesson's parity kernel.
//
// The lesson keeps two buffers and chapter 01's grid (four batches per block). This program asks "what if":
//   parity_s1, parity_s4: the lesson's parity_kernel instantiated for rings of one and four buffers
//     (the lesson's row is parity_s2). One buffer overlaps nothing inside a block; four keep three
//     batches in flight while one is computed, on top of the eight blocks an SM holds anyway. On the
//     lesson's grid a block has four batches, so four buffers take them all at once;
//   parity_s2_resident: the lesson's parity on a resident grid: as many blocks as fit at once, each
//     looping over batches k, k + grid, ... for the whole input.
// Every row is verified bit for bit before it is timed, as in the lesson.
// Hardware: compute capability 8.0+ (mbarrier, LDGSTS), as the lesson; on 9.0 the copies are bulk copies.
// Run: build/03_barrier/barrier_lab [--bench] [--variant=NAME] [--size=N]
#include "barrier.cu"  // the lesson: the batch, compute_batch, StageCursor, the kernels, launch_batch_grid, Problem, verify

namespace lab {

/// [resident]
// The lesson's launch before the batch grid: every SM filled with resident blocks, never more
// blocks than batches; each block loops over batches k, k + gridDim.x, ... for the whole run.
template <auto kKernel>
void launch_resident(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  // Blocks per SM from the occupancy calculator, times the SMs (course/in_flight.hpp).
  const std::size_t resident = course::resident_blocks((const void*)kKernel, kBlockThreads);
  kKernel<<<static_cast<unsigned>(num_batches < resident ? num_batches : resident), kBlockThreads>>>(gmem_in, gmem_out,
                                                                                                    num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [resident]

// ---- The rows ---------------------------------------------------------------------------------

const ::Variant kVariants[] = {
    {"parity_s1", "the lesson's parity with one buffer: nothing overlaps inside a block",
     &launch_batch_grid<parity_kernel<1>>},
    {"parity_s4", "the lesson's parity with four buffers: three batches in flight per block",
     &launch_batch_grid<parity_kernel<4>>},
    {"parity_s2_resident", "the lesson's parity on a resident grid: blocks loop over batches k, k + grid, ...",
     &launch_resident<parity_kernel<kStages>>},
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
  info.title = "03 barrier lab: rings of one and four buffers, and a resident grid";
  info.explanation =
      "The lesson's parity kernel with one and four buffers of 4 KiB (a load cursor and a wait\n"
      "cursor walking each ring), and on a resident grid instead of four batches per block.";
  info.host_model = [](std::ostream& out) {  // where each ring's waits go: batch b in buffer b % S
    print_cursor_walk<StageCursor<1>>(out, "one buffer", 6);
    print_cursor_walk<StageCursor<4>>(out, "four buffers", 12);
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) { return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run); }
#endif
