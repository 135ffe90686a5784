// The hardware as the oracle for the host mbarrier model (course/mbarrier_model.hpp): random
// sequences of arrive, expect-tx, complete-tx and arrive.expect-tx (mbarrier_sequences.hpp), each
// run by one thread on its own mbarrier in shared memory, test_wait.parity read for both parities
// after init and after every operation; the host replays each sequence on the model and compares
// every reading. A failure names the first differing operation of the first differing sequence.
// Needs 9.0: expect_tx, complete_tx and arrive.expect_tx track transaction bytes.
// PTX ISA, mbarrier: https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#parallel-synchronization-and-communication-instructions-mbarrier
#include <cuda/ptx>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/mbarrier_model.hpp"
#include "course/testing.hpp"
#include "mbarrier_sequences.hpp"

namespace {

namespace ptx = cuda::ptx;
using mbarrier_sequences::kMaxSteps;
using mbarrier_sequences::Op;

constexpr int kWarpsPerBlock = 4;                 // one sequence per warp, run by its lane 0
constexpr int kReadings = kMaxSteps + 1;          // after init, then after every operation
constexpr std::uint8_t kUnwritten = 0xF0;         // the readings' poison: no parity bits

__device__ std::uint8_t read_parities(std::uint64_t* smem_bar) {
  const bool done0 = ptx::mbarrier_test_wait_parity(smem_bar, 0u);  // has the phase of parity 0 completed?
  const bool done1 = ptx::mbarrier_test_wait_parity(smem_bar, 1u);
  return static_cast<std::uint8_t>((done0 ? 1u : 0u) | (done1 ? 2u : 0u));
}

// gmem_steps: [num_sequences][kMaxSteps] encoded operations; gmem_readings: [num_sequences][kReadings].
__global__ void replay_sequences(const std::uint32_t* gmem_steps, const int* gmem_num_steps, const int* gmem_counts,
                                 int num_sequences, std::uint8_t* gmem_readings) {
  __shared__ std::uint64_t bar[kWarpsPerBlock];  // one mbarrier per warp
  const int warp_idx = static_cast<int>(threadIdx.x) / 32, lane_idx = static_cast<int>(threadIdx.x) % 32;
  const int seq = static_cast<int>(blockIdx.x) * kWarpsPerBlock + warp_idx;
  if (lane_idx != 0 || seq >= num_sequences) return;
  std::uint64_t* smem_bar = &bar[warp_idx];
  std::uint8_t* readings = gmem_readings + static_cast<std::size_t>(seq) * kReadings;
  const std::uint32_t* steps = gmem_steps + static_cast<std::size_t>(seq) * kMaxSteps;
  // No fence and no block sync after init: this thread alone uses the barrier, and no copy (the
  // async proxy) touches it; complete_tx stands in for the bytes a copy would deliver.
  ptx::mbarrier_init(smem_bar, static_cast<std::uint32_t>(gmem_counts[seq]));
  readings[0] = read_parities(smem_bar);
  for (int i = 0; i < gmem_num_steps[seq]; ++i) {
    const auto op = static_cast<Op>(steps[i] >> 24);
    const std::uint32_t amount = steps[i] & 0xFFFFFFu;
    switch (op) {
      case Op::arrive:  // the plain arrive for one arrival, the counted form (9.0) for more
        if (amount == 1) {
          (void)ptx::mbarrier_arrive(smem_bar);
        } else {
          (void)ptx::mbarrier_arrive(smem_bar, amount);
        }
        break;
      case Op::expect_tx:  // more bytes for the current phase, no arrival
        ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cta, ptx::space_shared, smem_bar, amount);
        break;
      case Op::complete_tx: {  // bytes landing, without a copy; CCCL 3.0 has no cuda::ptx spelling
        const auto smem_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_bar));
        asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr), "r"(amount)
                     : "memory");
        break;
      }
      case Op::arrive_expect_tx:  // the expect-tx, then one arrival, as one instruction
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, smem_bar, amount);
        break;
    }
    readings[i + 1] = read_parities(smem_bar);
  }
}

class Sm90_MbarrierOracle : public course::GpuTest {
 protected:
  Sm90_MbarrierOracle() : GpuTest({9, 0, false, "mbarrier.expect_tx and mbarrier.complete_tx"}) {}
};

TEST_F(Sm90_MbarrierOracle, TheHostModelPredictsEveryParityOfEveryRandomSequence) {
  using namespace mbarrier_sequences;
  const int num_sequences = static_cast<int>(kSweepSequences);
  std::vector<Sequence> sequences;
  std::vector<std::uint32_t> steps(static_cast<std::size_t>(num_sequences) * kMaxSteps, 0);
  std::vector<int> num_steps, counts;
  std::size_t num_ops = 0;
  for (int s = 0; s < num_sequences; ++s) {
    sequences.push_back(make_sequence(kSweepFirstSeed + static_cast<std::uint32_t>(s)));
    const Sequence& seq = sequences.back();
    for (std::size_t i = 0; i < seq.steps.size(); ++i) steps[s * kMaxSteps + i] = encode(seq.steps[i]);
    num_steps.push_back(static_cast<int>(seq.steps.size()));
    counts.push_back(seq.count);
    num_ops += seq.steps.size();
  }
  course::DeviceBuffer<std::uint32_t> gmem_steps(steps.size());
  course::DeviceBuffer<int> gmem_num_steps(num_steps.size()), gmem_counts(counts.size());
  course::DeviceBuffer<std::uint8_t> gmem_readings(static_cast<std::size_t>(num_sequences) * kReadings);
  gmem_steps.upload(steps.data());
  gmem_num_steps.upload(num_steps.data());
  gmem_counts.upload(counts.data());
  gmem_readings.fill_bytes(kUnwritten);
  const int blocks = (num_sequences + kWarpsPerBlock - 1) / kWarpsPerBlock;
  replay_sequences<<<blocks, kWarpsPerBlock * 32>>>(gmem_steps.data(), gmem_num_steps.data(), gmem_counts.data(),
                                                    num_sequences, gmem_readings.data());
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> readings(gmem_readings.size());
  gmem_readings.download(readings.data());

  std::string first;
  int differing = 0, unwritten_tail = 0;
  int completed_by[4] = {};  // phases the hardware completed, by the kind of operation
  for (int s = 0; s < num_sequences; ++s) {
    const std::uint8_t* observed = readings.data() + static_cast<std::size_t>(s) * kReadings;
    const std::string verdict = first_disagreement<course::MbarrierModel>(sequences[s], observed);
    if (!verdict.empty() && differing++ == 0) first = verdict;
    for (int i = 0; i < num_steps[s]; ++i) {
      completed_by[static_cast<int>(sequences[s].steps[i].op)] += observed[i + 1] != observed[i];
    }
    for (int i = num_steps[s] + 1; i < kReadings; ++i) unwritten_tail += observed[i] != kUnwritten;
  }
  std::printf("mbarrier oracle: %d sequences, %zu operations, %d differ from the model; phases completed by "
              "arrive %d, expect-tx %d, complete-tx %d, arrive.expect-tx %d\n",
              num_sequences, num_ops, differing, completed_by[0], completed_by[1], completed_by[2], completed_by[3]);
  EXPECT_EQ(differing, 0) << "first: " << first;
  EXPECT_EQ(unwritten_tail, 0) << "readings written past the end of their sequence";
}

}  // namespace
