// 05_warp_specialized: one producer warp copies, the other warps compute (guide 4.11.1.3).
// What you learn: warp specialisation. The block's first warp only issues asynchronous copies
// into a ring of shared-memory buffers; the other four warps only compute. They hand each
// buffer back and forth through two barriers, full_bar (the batch landed) and empty_bar (the
// buffer is free again), waited on by phase parity. Three versions: `minimal` (cuda::barrier
// pairs, plain waits), `pipeline` (a partitioned cuda::pipeline) and `mbarrier` (raw mbarriers,
// a {stage, phase} cursor and bounded waits: the ring chapters 06-09 build on).
// From 04: no thread both copies and computes any more. Needs compute capability 8.0+. Run:
// build/05_warp_specialized/warp_specialized [--bench] [--variant=NAME]; the lab: *_lab.
// Guide: 4.11.1.3 and 4.10 Pipelines, https://docs.nvidia.com/cuda/cuda-programming-guide/
//        04-special-topics/async-copies.html#producer-consumer-pattern-through-warp-specialization
// API: cuda::barrier, cuda::make_pipeline, cuda::ptx (nvidia.github.io/cccl/libcudacxx); PTX
//      mbarrier, cp.async.mbarrier.arrive: docs.nvidia.com/cuda/parallel-thread-execution
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstdint>
#include <vector>

#include "course/buffer.hpp"
#include "course/chapter.hpp"
#include "course/check.hpp"
#include "course/output.hpp"
#include "course/pattern.hpp"
#include "course/stage_cursor.hpp"
#include "course/wait.cuh"
#include "warp_specialized_model.hpp"  // the roles, the batch, the arrival counts, the copy plan

namespace cg = cooperative_groups;

// A __shared__ barrier's constructor never runs (init() and make_pipeline() do its work): quiet.
#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int kStages = 2;  // the ring's buffers: the guide's double buffering (the lab: 1 and 4)

// ---- The problem: chapter 01's ring smoothing, on 8 KiB batches ----------------------------

__host__ __device__ inline std::uint32_t smooth(std::uint32_t left, std::uint32_t centre,
                                                std::uint32_t right) {
  return left + 2u * centre + right;  // wraps modulo 2^32 on host and device alike
}

// Host reference: each batch is a ring; every output mixes an element with its two neighbours.
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

/// [consume]
// The consumers' work on one staged batch: each consumer thread computes four neighbouring
// outputs and writes them with one 16-byte store, so a warp writes 512 contiguous bytes.
__device__ void consume_batch(const std::uint32_t* smem_batch, std::uint32_t* gmem_out_batch,
                              int consumer_idx) {
  const uint4* smem_chunks = reinterpret_cast<const uint4*>(smem_batch);
  uint4* gmem_chunks = reinterpret_cast<uint4*>(gmem_out_batch);
  for (int c = consumer_idx; c < kBatchChunks; c += kConsumerThreads) {
    const uint4 mid = smem_chunks[c];
    const std::uint32_t left = smem_batch[(c * kChunkElems - 1) & (kBatchElems - 1)];
    const std::uint32_t right = smem_batch[(c * kChunkElems + kChunkElems) & (kBatchElems - 1)];
    gmem_chunks[c] = make_uint4(smooth(left, mid.x, mid.y), smooth(mid.x, mid.y, mid.z),
                                smooth(mid.y, mid.z, mid.w), smooth(mid.z, mid.w, right));
  }
}
/// [consume]

// ---- Variant 1: the minimal ring, standard API only -------------------------------------------

/// [minimal_kernel]
__global__ void __launch_bounds__(kBlockThreads)
    minimal_kernel(const std::uint32_t* gmem_in, std::uint32_t* gmem_out, std::size_t num_batches) {
  using barrier = cuda::barrier<cuda::thread_scope_block>;
  __shared__ alignas(16) std::uint32_t smem_batches[kStages][kBatchElems];
  __shared__ barrier full_bar[kStages];   // the batch in buffer `stage` has landed
  __shared__ barrier empty_bar[kStages];  // buffer `stage` may be overwritten
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      init(&full_bar[stage], kProducerThreads);   // every producer lane arrives once per batch
      init(&empty_bar[stage], kConsumerThreads);  // every consumer thread arrives once per batch
    }
    // 9.0: the copies are bulk copies completing through the async proxy: fence init() toward it
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  }
  __syncthreads();  // no thread touches a barrier before it is initialised
  const bool is_producer_warp = threadIdx.x < kWarpThreads;
  const auto warp = cg::tiled_partition<kWarpThreads>(cg::this_thread_block());
  int stage = 0;
  unsigned phase = 0;  // parity of the round through the ring: flips when `stage` wraps
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x) {
    if (is_producer_warp) {
      // Wait until the consumers released this buffer one round ago: the phase before ours.
      // In round 0 that is the phase "before phase 0", which a fresh barrier counts as done.
      empty_bar[stage].wait_parity(phase ^ 1);
      cuda::memcpy_async(warp, smem_batches[stage], gmem_in + batch * kBatchElems,
                         cuda::aligned_size_t<16>(kBatchBytes), full_bar[stage]);
      (void)full_bar[stage].arrive();  // the phase also waits for this lane's copies to land
    } else {
      full_bar[stage].wait_parity(phase);  // the whole batch has landed
      consume_batch(smem_batches[stage], gmem_out + batch * kBatchElems,
                    threadIdx.x - kProducerThreads);
      (void)empty_bar[stage].arrive();  // this thread no longer reads the buffer
    }
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
}
/// [minimal_kernel]

// ---- Variant 2: a partitioned cuda::pipeline (the guide's first version) --------------------

/// [pipeline_kernel]
template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    pipeline_kernel(const std::uint32_t* __restrict__ gmem_in, std::uint32_t* __restrict__ gmem_out,
                    std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batches[kStages][kBatchElems];  // the ring
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> shared_state;
  cg::thread_block block = cg::this_thread_block();
  // TUTORIAL: the partitioned overload. Thread 0 initialises two barriers per stage, one awaiting
  // a producer_commit from each of kProducerThreads threads, one a consumer_release from each of
  // the others; the block synchronises. The count must match the threads of the producer branch.
  cuda::pipeline<cuda::thread_scope_block> pipe =
      cuda::make_pipeline(block, &shared_state, kProducerThreads);
  const bool is_producer_warp = threadIdx.x / kWarpThreads == 0;

  course::StageCursor<kStages> cursor;  // the pipeline's stage is private: a cursor per role
  if (is_producer_warp) {
    const auto producer_warp = cg::tiled_partition<kWarpThreads>(block);
    for (std::size_t batch = blockIdx.x; batch < num_batches;
         batch += gridDim.x, cursor.advance()) {
      // Wait until every consumer released this buffer (round 0 passes at once). Not bounded:
      // none exists; were it stuck, the consumers' bounded wait for this batch would report it.
      pipe.producer_acquire();
      cuda::memcpy_async(producer_warp, smem_batches[cursor.stage], gmem_in + batch * kBatchElems,
                         cuda::aligned_size_t<kChunkBytes>(kBatchBytes), pipe);
      pipe.producer_commit();  // this lane's copies count towards the stage's "full" phase
    }
  } else {
    const int consumer_idx = threadIdx.x - kProducerThreads;
    for (std::size_t batch = blockIdx.x; batch < num_batches;
         batch += gridDim.x, cursor.advance()) {
      course::bounded_consumer_wait(pipe, {"full", cursor.stage, cursor.phase});  // all landed
      consume_batch(smem_batches[cursor.stage], gmem_out + batch * kBatchElems, consumer_idx);
      pipe.consumer_release();  // this thread no longer reads the buffer: it may be refilled
    }
  }
}
/// [pipeline_kernel]

// ---- Variant 3: raw mbarriers, full_bar and empty_bar per buffer (the guide's second) -------

/// [producer_steps]
// Producer, step 1: the buffer is free once empty_bar[stage] completed the phase before
// cursor.phase (round 0: at once, a fresh barrier counts the phase before phase 0 as complete).
template <int kStages>
__device__ void wait_until_free(std::uint64_t* empty_bar, course::StageCursor<kStages> cursor) {
  course::bounded_wait_parity(&empty_bar[cursor.stage], cursor.phase ^ 1u,
                              {"empty", cursor.stage, cursor.phase ^ 1u});
}
// Producer, step 2: this lane's share of the copy plan, kChunksPerProducer 16-byte LDGSTS.
__device__ void issue_copies(const std::uint32_t* gmem_in, std::uint32_t* smem_batches,
                             std::size_t batch, int stage, int lane_idx) {
  for (int k = 0; k < kChunksPerProducer; ++k) {
    const ChunkCopy copy = producer_chunk(batch, stage, lane_idx, k);
    __pipeline_memcpy_async(smem_batches + copy.smem_elem, gmem_in + copy.gmem_elem, kChunkBytes);
  }
}
// Producer, step 3: once every cp.async this thread has issued has landed, arrive on `bar` as
// one of its expected arrivals (.noinc: kFullArrivals counts it, no ordinary arrive follows; the
// plain form adds one to the count, and the thread must arrive itself, as cuda::pipeline does).
__device__ inline void arrive_when_copies_land(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];"
               ::"r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(bar))) : "memory");
}
/// [producer_steps]

/// [consumer_steps]
// Consumer, step 1: the batch is whole once all kFullArrivals producer lanes' copies landed.
template <int kStages>
__device__ void wait_until_full(std::uint64_t* full_bar, course::StageCursor<kStages> cursor) {
  course::bounded_wait_parity(&full_bar[cursor.stage], cursor.phase,
                              {"full", cursor.stage, cursor.phase});
}
// Consumer, step 3 (step 2 is consume_batch), made by one lane per warp: hand the buffer back.
// The arrive releases: the warp's reads (__syncwarp before it) happen before the refill.
__device__ void release_buffer(std::uint64_t* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }
/// [consumer_steps]

/// [mbarrier_producer]
template <int kStages>
__device__ void produce_batches(const std::uint32_t* gmem_in, std::uint32_t* smem_batches,
                                std::uint64_t* full_bar, std::uint64_t* empty_bar,
                                std::size_t num_batches, int lane_idx) {
  course::StageCursor<kStages> cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, cursor.advance()) {
    wait_until_free(empty_bar, cursor);                                  // 1. buffer free
    issue_copies(gmem_in, smem_batches, batch, cursor.stage, lane_idx);  // 2. this lane's copies
    arrive_when_copies_land(&full_bar[cursor.stage]);  // 3. one of kFullArrivals, when they land
  }
}
/// [mbarrier_producer]

/// [mbarrier_consumer]
template <int kStages>
__device__ void consume_batches(const std::uint32_t* smem_batches, std::uint32_t* gmem_out,
                                std::uint64_t* full_bar, std::uint64_t* empty_bar,
                                std::size_t num_batches, int consumer_idx) {
  course::StageCursor<kStages> cursor;
  for (std::size_t batch = blockIdx.x; batch < num_batches; batch += gridDim.x, cursor.advance()) {
    wait_until_full(full_bar, cursor);  // 1. the whole batch has landed
    consume_batch(smem_batches + cursor.stage * kBatchElems, gmem_out + batch * kBatchElems,
                  consumer_idx);  // 2. smooth it, store it
    __syncwarp();  // every lane of this warp has finished reading the buffer...
    if (consumer_idx % kWarpThreads == 0) {
      release_buffer(&empty_bar[cursor.stage]);  // 3. ...so one arrival speaks for the warp
    }
  }
}
/// [mbarrier_consumer]

/// [mbarrier_kernel]
template <int kStages>
__global__ void __launch_bounds__(kBlockThreads)
    mbarrier_kernel(const std::uint32_t* __restrict__ gmem_in, std::uint32_t* __restrict__ gmem_out,
                    std::size_t num_batches) {
  __shared__ alignas(16) std::uint32_t smem_batches[kStages * kBatchElems];  // [stage][elem]
  __shared__ alignas(8) std::uint64_t full_bar[kStages];   // buffer `stage` holds a whole batch
  __shared__ alignas(8) std::uint64_t empty_bar[kStages];  // buffer `stage` may be overwritten
  if (threadIdx.x == 0) {
    // (mbarrier_init takes the count by reference: pass a copy, not the host-side constant.)
    for (int stage = 0; stage < kStages; ++stage) {
      cuda::ptx::mbarrier_init(&full_bar[stage], std::uint32_t{kFullArrivals});    // producer lanes
      cuda::ptx::mbarrier_init(&empty_bar[stage], std::uint32_t{kEmptyArrivals});  // consumer warps
    }
  }
  __syncthreads();  // every thread sees initialised barriers before anyone arrives or waits
  const bool is_producer_warp = threadIdx.x / kWarpThreads == 0;  // warp 0
  if (is_producer_warp) {
    produce_batches<kStages>(gmem_in, smem_batches, full_bar, empty_bar, num_batches, threadIdx.x);
  } else {
    consume_batches<kStages>(smem_batches, gmem_out, full_bar, empty_bar, num_batches,
                             threadIdx.x - kProducerThreads);
  }
}
/// [mbarrier_kernel]

// ---- Launchers and the variant table -------------------------------------------------------

/// [launch]
// Chapter 01's grid rule: short-lived blocks of four batches (twice the ring: each buffer goes
// round more than once), started in index order, several per SM. `max_blocks` (if not 0) caps
// the grid, so that a test can send many batches through one block.
constexpr int kBatchesPerBlock = 4;

template <auto kKernel>
void launch_batch_grid(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                       std::size_t num_batches, unsigned max_blocks) {
  const unsigned grid = batch_grid(num_batches, kBatchesPerBlock, max_blocks);
  kKernel<<<grid, kBlockThreads>>>(gmem_in, gmem_out, num_batches);
  COURSE_CHECK_LAUNCH();
}
/// [launch]

using Launch = void (*)(const std::uint32_t* gmem_in, std::uint32_t* gmem_out,
                        std::size_t num_batches, unsigned max_blocks);

struct Variant { const char* name; const char* summary; Launch launch; };
const Variant kVariants[] = {
    {"minimal", "cuda::barrier full/empty pairs, plain waits", &launch_batch_grid<minimal_kernel>},
    {"pipeline", "partitioned cuda::pipeline", &launch_batch_grid<pipeline_kernel<kStages>>},
    {"mbarrier", "raw full/empty mbarriers", &launch_batch_grid<mbarrier_kernel<kStages>>},
};

// ---- run(): verify every variant, then time the correct ones ------------------------------
struct Problem {  // input, expected output and device buffers for `num_batches` batches
  explicit Problem(std::size_t num_batches, unsigned max_blocks = 0)
      : num_batches(num_batches), max_blocks(max_blocks), host_in(num_batches * kBatchElems),
        gmem_in(host_in.size()), gmem_out(host_in.size()) {
    course::fill_pattern(host_in);
    expected = reference(host_in);
    gmem_in.upload(host_in.data());
  }
  void launch(const Variant& v) {
    v.launch(gmem_in.data(), gmem_out.data(), num_batches, max_blocks);
  }
  std::size_t num_batches;
  unsigned max_blocks;
  std::vector<std::uint32_t> host_in, expected;
  course::DeviceBuffer<std::uint32_t> gmem_in;
  course::GuardedOutput<std::uint32_t> gmem_out;
};

// Poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& variant, Problem& problem) {
  problem.gmem_out.poison();
  problem.launch(variant);
  COURSE_CHECK(cudaDeviceSynchronize());
  return problem.gmem_out.check(problem.expected, kBatchElems);
}

// Every variant of a table (the lesson's or the lab's), verified and then timed.
template <std::size_t kCount>
void run_table(const Variant (&variants)[kCount], const course::Options& opts,
               course::Report& report) {
  Problem problem(opts.size_bytes / kBatchBytes);
  for (const Variant& v : variants) {
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); }, [&] { problem.launch(v); },
        2 * opts.size_bytes);  // each element read once and written once
  }
}

void run(const course::Options& opts, course::Report& report) {
  run_table(kVariants, opts, report);
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info;
  info.program = "warp_specialized";
  info.title = "05 warp_specialized: a producer warp and consumer warps around a ring of buffers";
  info.explanation =
      "The block's first warp copies 8 KiB batches into a ring of two shared-memory buffers; four\n"
      "consumer warps smooth each batch and store it. Buffers change hands through cuda::barrier\n"
      "pairs, a partitioned cuda::pipeline, or raw full/empty mbarriers.";
  info.requirement = {8, 0, false, "cp.async (LDGSTS) and mbarrier"};
  info.verify_bytes = 8u << 20;
  info.bench_bytes = 1u << 30;
  info.size_rule = course::whole_multiples_of(
      kBatchBytes, "--size must be a whole number of 8 KiB batches (2048 uint32 elements)");
  info.host_model = print_ring_model<kStages>;  // runs without a GPU
  info.in_flight = course::InFlightLaunch{"mbarrier", (const void*)mbarrier_kernel<kStages>,
                                          kBlockThreads, 0, kStages, kBatchBytes};  // static smem
  return info;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, chapter_info(), kVariants, run);
}
#endif
