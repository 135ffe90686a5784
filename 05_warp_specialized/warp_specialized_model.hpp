// 05_warp_specialized, the model: the block's roles, the arrival counts, the producer's copy
// plan and the ring of buffers, on the host.
//
// A block is one producer warp and four consumer warps around a ring of kStages buffers with
// a full_bar and an empty_bar each. This header holds what needs no GPU: the block's shape and
// batch, the arrival count each barrier expects per phase, which chunk each producer lane
// copies (the kernels call producer_chunk()), a check that a copy plan fills every element of
// its buffer exactly once (and the guide's two plans, which do not), and the ring itself run
// step by step on host models of the mbarriers (course/mbarrier_model.hpp) with the cursors
// the kernels keep (course/stage_cursor.hpp): it finds a wrong count or parity as the first
// wait that can never return, and records the order in which batches are filled and taken.
// And the launch rule, chapter 01's batch grid.
// Host code only (producer_chunk() is __host__ __device__ under nvcc): warp_specialized.cu
// includes it, warp_specialized_test.cu checks it on the CPU.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#producer-consumer-pattern-through-warp-specialization
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/batch_grid.hpp"
#include "course/mbarrier_model.hpp"
#include "course/stage_cursor.hpp"

// The launch rule of chapters 01-05 (chapter 01 introduces it): course/batch_grid.hpp.
using course::batch_grid;

// producer_chunk() is called by the producer lanes too; a plain host function without nvcc.
#ifdef __CUDACC__
#define WARP_SPECIALIZED_HOST_DEVICE __host__ __device__
#else
#define WARP_SPECIALIZED_HOST_DEVICE
#endif

constexpr int kWarpThreads = 32;
constexpr int kProducerThreads = kWarpThreads;                      // one producer warp: the block's first
constexpr int kConsumerWarps = 4;
constexpr int kConsumerThreads = kConsumerWarps * kWarpThreads;     // 128
constexpr int kBlockThreads = kProducerThreads + kConsumerThreads;  // 160
constexpr int kBatchElems = 2048;                                   // one batch fills one buffer (stage)
constexpr std::size_t kBatchBytes = kBatchElems * sizeof(std::uint32_t);  // 8 KiB
constexpr int kChunkBytes = 16;                                     // one LDGSTS, one 16-byte store
constexpr int kChunkElems = kChunkBytes / sizeof(std::uint32_t);
constexpr int kBatchChunks = kBatchBytes / kChunkBytes;              // 512
constexpr int kChunksPerProducer = kBatchChunks / kProducerThreads;  // 16 copies per producer lane per batch
static_assert((kBatchElems & (kBatchElems - 1)) == 0, "the ring index of the smoothing wraps with a mask");
static_assert(kBatchChunks % kProducerThreads == 0, "every producer lane copies the same number of chunks");
static_assert(kBatchChunks % kConsumerThreads == 0, "every consumer thread computes the same number of chunks");

/// [arrival_counts]
// full_bar[stage]: one arrival per producer lane. The lane does not arrive itself: its
// cp.async.mbarrier.arrive.noinc makes the hardware arrive once all of that lane's copies
// have landed. The phase completes when the whole batch is in shared memory.
constexpr std::uint32_t kFullArrivals = kProducerThreads;  // 32
// empty_bar[stage]: one arrival per consumer warp (lane 0, after __syncwarp), once no lane
// of the warp reads the buffer any more. The phase completes when the buffer is free.
constexpr std::uint32_t kEmptyArrivals = kConsumerWarps;  // 4
/// [arrival_counts]

/// [copy_plan]
// Which 16-byte chunk producer lane `lane_idx` copies in its k-th copy of `batch`, which lands
// in buffer `stage`: element offsets into smem_batches (all stages) and into the input.
// Lanes take neighbouring chunks, so each step of the warp reads 512 contiguous bytes.
struct ChunkCopy {
  int smem_elem;
  std::size_t gmem_elem;
};
WARP_SPECIALIZED_HOST_DEVICE constexpr ChunkCopy producer_chunk(std::size_t batch, int stage, int lane_idx, int k) {
  const int elem = (k * kProducerThreads + lane_idx) * kChunkElems;
  return {stage * kBatchElems + elem, batch * kBatchElems + elem};
}
/// [copy_plan]

// ---- A copy plan, checked element by element ------------------------------------------------

// Which elements of the ring of buffers one producer lane writes for one batch, and from where.
struct ElementCopy {
  long smem_elem;  // index into all the ring's buffers
  long gmem_elem;  // index into the input
};
using CopyPlan = std::function<std::vector<ElementCopy>(std::size_t batch, int stage, int lane)>;

// The first problem with a plan for batch `batch` (held in buffer batch % stages): every element
// of that buffer written exactly once, from the same position of the batch, nothing outside it.
// "" when there is none.
inline std::string plan_problem(const CopyPlan& plan, std::size_t batch, int stages) {
  const int stage = static_cast<int>(batch % stages);
  std::vector<int> writes(static_cast<std::size_t>(stages) * kBatchElems, 0);
  for (int lane = 0; lane < kProducerThreads; ++lane) {
    for (const ElementCopy& c : plan(batch, stage, lane)) {
      if (c.smem_elem < 0 || c.smem_elem >= static_cast<long>(writes.size())) {
        return "batch " + std::to_string(batch) + " writes element " + std::to_string(c.smem_elem) + ", past the " +
               std::to_string(stages) + " buffers (" + std::to_string(writes.size()) + " elements)";
      }
      const long offset = c.smem_elem - static_cast<long>(stage) * kBatchElems;
      if (offset < 0 || offset >= kBatchElems) return "batch " + std::to_string(batch) + " writes another buffer";
      if (c.gmem_elem != static_cast<long>(batch) * kBatchElems + offset) {
        return "batch " + std::to_string(batch) + " fills element " + std::to_string(offset) + " from the wrong input";
      }
      ++writes[c.smem_elem];
    }
  }
  int unwritten = 0;
  for (int i = 0; i < kBatchElems; ++i) {
    const int count = writes[static_cast<std::size_t>(stage) * kBatchElems + i];
    if (count > 1) return "batch " + std::to_string(batch) + " writes element " + std::to_string(i) + " twice";
    unwritten += count == 0 ? 1 : 0;
  }
  if (unwritten > 0) {
    return "batch " + std::to_string(batch) + ": " + std::to_string(unwritten) + " of " +
           std::to_string(kBatchElems) + " elements of its buffer never written";
  }
  return "";
}

// This chapter's producer: kChunksPerProducer 16-byte chunks per lane (producer_chunk()).
inline std::vector<ElementCopy> chapter_plan(std::size_t batch, int stage, int lane) {
  std::vector<ElementCopy> copies;
  for (int k = 0; k < kChunksPerProducer; ++k) {
    const ChunkCopy chunk = producer_chunk(batch, stage, lane, k);
    for (int e = 0; e < kChunkElems; ++e) {
      copies.push_back({chunk.smem_elem + e, static_cast<long>(chunk.gmem_elem) + e});
    }
  }
  return copies;
}

// The guide's cuda::pipeline version, transcribed: each producer lane copies one float,
// `buffer + stage * buffer_len + threadIdx.x` from `in + batch * buffer_len + threadIdx.x`.
inline std::vector<ElementCopy> guide_pipeline_plan(std::size_t batch, int stage, int lane) {
  return {{static_cast<long>(stage) * kBatchElems + lane, static_cast<long>(batch) * kBatchElems + lane}};
}

// The guide's primitives version, transcribed: `buffer + i * buffer_len + threadIdx.x`, where i
// is the batch, not the buffer.
inline std::vector<ElementCopy> guide_primitives_plan(std::size_t batch, int /*stage*/, int lane) {
  return {{static_cast<long>(batch) * kBatchElems + lane, static_cast<long>(batch) * kBatchElems + lane}};
}

// ---- The ring, run on host models of its barriers ---------------------------------------------

/// [ring_model]
// What the kernels set up: the count each barrier expects per phase, and the parity the
// producer waits for on empty_bar (the phase before its cursor's: phase ^ 1).
struct RingProtocol {
  int full_arrivals = kFullArrivals;
  int empty_arrivals = kEmptyArrivals;
  bool producer_waits_phase_before = true;
};

// One step of the ring: the producer filled `batch` into buffer `stage` in the round of parity
// `phase`, or the consumers took it from there.
struct RingStep {
  bool fill;
  int batch;
  int stage;
  std::uint32_t phase;
};

// The ring of one block over `num_batches` batches, with the kernels' loops, cursors, parities
// and arrivals. The producer runs ahead as far as the barriers let it (the consumers at their
// slowest); then the consumers take one batch. `problem` is "" when every batch was filled and
// taken in order, else the first wait that can never return, or a buffer overwritten too early.
struct RingRun {
  std::vector<RingStep> steps;
  std::string problem;
};

template <int kStages>
RingRun run_ring(int num_batches, const RingProtocol& protocol = {}) {
  RingRun run;
  course::MbarrierModel full_bar[kStages], empty_bar[kStages];
  for (int s = 0; s < kStages; ++s) {
    full_bar[s].init(protocol.full_arrivals);
    empty_bar[s].init(protocol.empty_arrivals);
  }
  course::StageCursor<kStages> producer, consumer;
  int filled = 0, taken = 0;
  int holds[kStages];  // the batch each buffer holds, -1 when free
  for (int& h : holds) h = -1;
  const auto empty_parity = [&] { return protocol.producer_waits_phase_before ? producer.phase ^ 1u : producer.phase; };
  while (taken < num_batches) {
    bool moved = false;
    while (filled < num_batches && empty_bar[producer.stage].phase_done(empty_parity())) {
      if (holds[producer.stage] != -1) {
        run.problem = "the producer overwrote batch " + std::to_string(holds[producer.stage]) + " before it was taken";
        return run;
      }
      holds[producer.stage] = filled;
      run.steps.push_back({true, filled++, producer.stage, producer.phase});
      for (int lane = 0; lane < kProducerThreads; ++lane) full_bar[producer.stage].arrive();  // its copies landed
      producer.advance();
      moved = true;
    }
    if (full_bar[consumer.stage].phase_done(consumer.phase)) {
      if (holds[consumer.stage] != taken) {
        run.problem = "the consumers took buffer " + std::to_string(consumer.stage) + " before batch " +
                      std::to_string(taken) + " was in it";
        return run;
      }
      holds[consumer.stage] = -1;
      run.steps.push_back({false, taken++, consumer.stage, consumer.phase});
      for (int warp = 0; warp < kConsumerWarps; ++warp) empty_bar[consumer.stage].arrive();  // lane 0 of each warp
      consumer.advance();
      moved = true;
    }
    if (!moved) {
      run.problem = "stuck: ";
      if (filled < num_batches) {
        run.problem += "producer waits on 'empty' stage " + std::to_string(producer.stage) + " parity " +
                       std::to_string(empty_parity()) + ", ";
      }
      run.problem += "consumers wait on 'full' stage " + std::to_string(consumer.stage) + " phase " +
                     std::to_string(consumer.phase);
      return run;
    }
  }
  return run;
}
/// [ring_model]

// ---- The guide's 4.11.1.3 kernels, transcribed: what their counts and loop bounds do ----------

// The guide's cuda::pipeline version run on host models of the pipeline's barriers, with the
// guide's loop: the producer warp prefills batches 0 and 1, then in iteration b produces batch
// b + 2 while the consumers consume batch b. make_pipeline(block, &state, 32) expects 32
// producer arrivals per stage and block.size() - 32 consumer releases. With a block of one warp
// there is no consumer: nobody ever releases a stage, and the producer's acquire for batch 2
// waits forever. "" when every batch was produced and consumed, else the wait that never returns.
inline std::string run_guide_pipeline(int num_warps, int num_batches) {
  constexpr int kGuideStages = 2;
  const int consumer_threads = (num_warps - 1) * kWarpThreads;
  course::MbarrierModel produced[kGuideStages], consumed[kGuideStages];
  for (int s = 0; s < kGuideStages; ++s) {
    produced[s].init(kWarpThreads);
    consumed[s].init(consumer_threads);  // 0 with one warp: no thread will ever arrive
  }
  course::StageCursor<kGuideStages> producer, consumer;
  int produced_batches = 0, consumed_batches = 0;
  const int consumers_do = consumer_threads > 0 ? num_batches : 0;  // no consumer thread, no loop
  while (produced_batches < num_batches || consumed_batches < consumers_do) {
    bool moved = false;
    // producer_acquire: the phase before the cursor's (a fresh pipeline passes in round 0).
    if (produced_batches < num_batches && consumed[producer.stage].phase_done(producer.phase ^ 1u)) {
      for (int lane = 0; lane < kWarpThreads; ++lane) produced[producer.stage].arrive();  // commit
      ++produced_batches;
      producer.advance();
      moved = true;
    }
    if (consumed_batches < consumers_do && produced[consumer.stage].phase_done(consumer.phase)) {
      for (int t = 0; t < consumer_threads; ++t) consumed[consumer.stage].arrive();  // release
      ++consumed_batches;
      consumer.advance();
      moved = true;
    }
    if (!moved) {
      std::string problem = "stuck: ";
      if (produced_batches < num_batches) {
        problem += "producer_acquire of batch " + std::to_string(produced_batches) + " (stage " +
                   std::to_string(producer.stage) + ") waits for a release";
      }
      if (consumed_batches < consumers_do) {
        problem += std::string(produced_batches < num_batches ? ", " : "") + "consumer_wait of batch " +
                   std::to_string(consumed_batches) + " waits";
      }
      return problem;
    }
  }
  return "";
}

// The guide's loop bound, transcribed: num_batches = N / buffer_len. The elements of the last,
// partial batch are never copied nor consumed; how many of the N elements the loop processes.
inline std::size_t guide_elements_processed(std::size_t n, std::size_t buffer_len) {
  const std::size_t num_batches = n / buffer_len;
  std::size_t processed = 0;
  for (std::size_t batch = 0; batch < num_batches; ++batch) processed += buffer_len;
  return processed;
}

// What the programs print before they need a GPU: the block and its counts, ...
inline void print_block_model(std::ostream& out) {
  out << "block: 1 producer warp + " << kConsumerWarps << " consumer warps (" << kBlockThreads
      << " threads); batches of " << kBatchBytes / 1024 << " KiB, " << kChunksPerProducer
      << " 16-byte copies per producer lane per batch\n"
      << "full_bar[stage]  expects " << kFullArrivals
      << " arrivals: one cp.async.mbarrier.arrive.noinc per producer lane\n"
      << "empty_bar[stage] expects " << kEmptyArrivals << " arrivals: one per consumer warp\n";
}

// ... and for a ring of kStages buffers, the cursor's walk and the order of fills and takes.
template <int kStages>
void print_ring_walk(std::ostream& out) {
  out << "batch -> {stage, phase} with " << kStages << (kStages == 1 ? " buffer:" : " buffers:");
  course::StageCursor<kStages> cursor;
  for (int batch = 0; batch < 5; ++batch, cursor.advance()) {
    out << ' ' << batch << "->{" << cursor.stage << ',' << cursor.phase << '}';
  }
  out << "\n  the producer as far ahead as the barriers allow:";
  const RingRun run = run_ring<kStages>(5);
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    out << (i ? ", " : " ") << (run.steps[i].fill ? "fill " : "take ") << run.steps[i].batch;
  }
  out << (run.problem.empty() ? "" : "; " + run.problem) << '\n';
}

template <int kStages>
void print_ring_model(std::ostream& out) {
  print_block_model(out);
  print_ring_walk<kStages>(out);
}

// ---- The concept figure: the full/empty hand-off, drawn from run_ring ------------------------

// One row per step of run_ring<kStages>(num_batches), top to bottom in the order the ring allows
// (the producer as far ahead as the barriers let it): on the left the producer warp's fills, on
// the right the consumer warps' takes, each with the barrier it waits on (and the parity) and
// the one it arrives at. A solid arrow: the fill's arrivals complete full_bar's phase that the
// take waits for. A dashed arrow: the take's releases complete the empty_bar phase that the fill
// of the same buffer one round later waits for. Deterministic text, a viewBox 720 wide.
template <int kStages>
std::string handoff_svg(int num_batches) {
  static const char* const kFills[4] = {"#dbe9f6", "#fde2cf", "#dcefd9", "#efe3f4"};
  static const char* const kEdges[4] = {"#4477aa", "#cc6633", "#228833", "#aa3377"};
  const RingRun run = run_ring<kStages>(num_batches);
  constexpr int kWidth = 720, kTop = 92, kRow = 62, kBoxH = 54, kBoxW = 306, kLeftX = 12, kRightX = 402;
  const int rows = static_cast<int>(run.steps.size());
  const int height = kTop + rows * kRow + 72;
  std::string svg;
  char text[640];
  auto put = [&](const char* format, auto... args) {
    std::snprintf(text, sizeof text, format, args...);
    svg += text;
  };
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
      kWidth, height);
  svg += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
         "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333333\"/>"
         "</marker></defs>\n";
  put("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", kWidth, height);
  put("<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">The full/empty hand-off: %d buffers, "
      "%d batches</text>\n",
      kLeftX, kStages, num_batches);
  put("<text x=\"%d\" y=\"44\" font-size=\"12\">time runs down; stage s = batch %% %d, phase p = parity of "
      "the round</text>\n",
      kLeftX, kStages);
  put("<text x=\"%d\" y=\"74\" font-size=\"14\" font-weight=\"bold\">producer warp (warp 0)</text>\n", kLeftX);
  put("<text x=\"%d\" y=\"74\" font-size=\"14\" font-weight=\"bold\">consumer warps (1 to %d)</text>\n", kRightX,
      kConsumerWarps);
  std::vector<int> fill_row(num_batches, -1), take_row(num_batches, -1);
  for (int r = 0; r < rows; ++r) {
    const RingStep& step = run.steps[r];
    (step.fill ? fill_row : take_row)[step.batch] = r;
    const int x = step.fill ? kLeftX : kRightX, y = kTop + r * kRow;
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\" fill=\"%s\" stroke=\"%s\"/>\n", x, y, kBoxW,
        kBoxH, kFills[step.stage % 4], kEdges[step.stage % 4]);
    if (step.fill) {
      put("<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">fill batch %d: stage %d, phase %u</text>\n",
          x + 8, y + 17, step.batch, step.stage, step.phase);
      const bool first_round = step.batch < kStages;
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">wait empty_bar[%d], parity %u%s</text>\n", x + 8, y + 33,
          step.stage, step.phase ^ 1u, first_round ? " (fresh: passes)" : "");
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">copy, then arrive on full_bar[%d]</text>\n", x + 8, y + 48,
          step.stage);
    } else {
      put("<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">take batch %d: stage %d, phase %u</text>\n",
          x + 8, y + 17, step.batch, step.stage, step.phase);
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">wait full_bar[%d], parity %u</text>\n", x + 8, y + 33,
          step.stage, step.phase);
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">compute, then arrive on empty_bar[%d]</text>\n", x + 8,
          y + 48, step.stage);
    }
  }
  for (int b = 0; b < num_batches; ++b) {
    if (fill_row[b] < 0 || take_row[b] < 0) continue;
    // full_bar: the fill's arrivals complete the phase the take waits for.
    put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" stroke-width=\"1.5\" "
        "marker-end=\"url(#arrow)\"/>\n",
        kLeftX + kBoxW, kTop + fill_row[b] * kRow + kBoxH / 2, kRightX, kTop + take_row[b] * kRow + kBoxH / 2);
    // empty_bar: the take's releases complete the phase the refill of its buffer waits for.
    if (b + kStages < num_batches && fill_row[b + kStages] >= 0) {
      put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" stroke-width=\"1.5\" "
          "stroke-dasharray=\"6 4\" marker-end=\"url(#arrow)\"/>\n",
          kRightX, kTop + take_row[b] * kRow + kBoxH - 6, kLeftX + kBoxW, kTop + fill_row[b + kStages] * kRow + 8);
    }
  }
  const int legend_y = kTop + rows * kRow + 14;
  put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" stroke-width=\"1.5\" "
      "marker-end=\"url(#arrow)\"/>\n",
      kLeftX, legend_y, kLeftX + 40, legend_y);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">full_bar[s] completes: the batch landed, the consumers may read"
      "</text>\n",
      kLeftX + 50, legend_y + 4);
  put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"6 4\" marker-end=\"url(#arrow)\"/>\n",
      kLeftX, legend_y + 22, kLeftX + 40, legend_y + 22);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">empty_bar[s] completes: the buffer is free, the producer may "
      "refill it</text>\n",
      kLeftX + 50, legend_y + 26);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">Drawn from run_ring (warp_specialized_model.hpp) by "
      "warp_specialized_figures.</text>\n",
      kLeftX, legend_y + 46);
  svg += "</svg>\n";
  return svg;
}
