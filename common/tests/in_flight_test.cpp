#include "course/in_flight.hpp"

#include <gtest/gtest.h>

namespace {

// The two GPUs the course measures on, by the clocks and bus widths their drivers report.
course::DeviceInfo gpu(int mem_clock_mhz, int bus_bits) {
  course::DeviceInfo device;
  device.present = true;
  device.sm_count = 132;
  device.mem_clock_mhz = mem_clock_mhz;
  device.mem_bus_bits = bus_bits;
  return device;
}
const course::DeviceInfo kH100 = gpu(2619, 5120);  // H100 SXM (HBM3)
const course::DeviceInfo kH200 = gpu(3201, 6016);  // H200 (HBM3e)

TEST(HostInFlight, PeakBandwidthIsTwoTransfersPerClockOverTheBus) {
  EXPECT_NEAR(course::peak_dram_gbps(2619, 5120), 3352.3, 0.1);  // the H100 SXM's 3.35 TB/s
  EXPECT_NEAR(course::peak_dram_gbps(3201, 6016), 4814.3, 0.1);  // the H200's 4.8 TB/s
  EXPECT_EQ(course::peak_dram_gbps(1000, 0), 0.0) << "no bus width reported: no bandwidth";
}

TEST(HostInFlight, EachSmNeedsItsShareOfReadBandwidthTimesLatency) {
  const course::InFlightNeed h100 = course::in_flight_need(kH100), h200 = course::in_flight_need(kH200);
  EXPECT_NEAR(h100.read_gbps, 1676.2, 0.1) << "a copy reads half of what moves";
  EXPECT_NEAR(h100.per_sm_bytes / 1024, 7.4, 0.05);
  EXPECT_NEAR(h200.per_sm_bytes / 1024, 10.7, 0.05);
  EXPECT_EQ(h200.latency_ns, course::kAssumedLoadLatencyNs);
  // Linear in both: twice the latency or half the SMs, twice the bytes per SM.
  EXPECT_DOUBLE_EQ(course::in_flight_need(1000, 100, 1200).per_sm_bytes, 2 * course::in_flight_need(1000, 100, 600).per_sm_bytes);
  EXPECT_DOUBLE_EQ(course::in_flight_need(1000, 50).per_sm_bytes, 2 * course::in_flight_need(1000, 100).per_sm_bytes);
  EXPECT_DOUBLE_EQ(course::in_flight_need(2.0, 1, 1.0).per_sm_bytes, 1.0) << "1 GB/s of reads x 1 ns = 1 byte";
}

TEST(HostInFlight, StagesTimesStageBytesTimesBlocksPerSm) {
  const course::KeptInFlight ring = course::stages_in_flight("ring", 4, 32768, 1);
  EXPECT_EQ(ring.per_sm_bytes, 131072.0);
  EXPECT_EQ(ring.how, "ring: 4 stages x 32 KiB x 1 block per SM");
  const course::KeptInFlight pipe = course::stages_in_flight("pipe", 1, 8192, 6);
  EXPECT_EQ(pipe.per_sm_bytes, 49152.0);
  EXPECT_EQ(pipe.how, "pipe: 1 stage x 8 KiB x 6 blocks per SM");
}

TEST(HostInFlight, OneLineSaysKeptNeededAndTheMargin) {
  EXPECT_EQ(course::in_flight_line(course::in_flight_need(kH200), course::stages_in_flight("ring", 4, 32768, 1)),
            "bytes in flight per SM: 128.0 KiB kept (ring: 4 stages x 32 KiB x 1 block per SM), 10.7 KiB needed "
            "(Little's law: 2407 GB/s of reads, half the 4814 GB/s peak, x 600 ns / 132 SMs): 12.0 x");
  EXPECT_EQ(course::in_flight_line(course::in_flight_need(kH100), course::stages_in_flight("ring", 2, 16384, 1)),
            "bytes in flight per SM: 32.0 KiB kept (ring: 2 stages x 16 KiB x 1 block per SM), 7.4 KiB needed "
            "(Little's law: 1676 GB/s of reads, half the 3352 GB/s peak, x 600 ns / 132 SMs): 4.3 x");
}

// The rule over the space it claims: every memory clock, bus width, SM count and latency the
// range below spans, against the law written out in base units (bytes per second x seconds).
TEST(HostInFlight, SweepMatchesTheLawInBaseUnits) {
  int checked = 0;
  for (int mem_clock_mhz : {1, 877, 1215, 2619, 3201, 5000}) {
    for (int bus_bits : {32, 64, 384, 4096, 5120, 6016, 8192}) {
      for (int num_sms : {1, 2, 16, 108, 132, 144, 1000}) {
        for (double latency_ns : {1.0, 200.0, 600.0, 1000.0}) {
          const double peak_bytes_per_s = 2.0 * mem_clock_mhz * 1e6 * bus_bits / 8;
          const double want = peak_bytes_per_s / 2 * latency_ns * 1e-9 / num_sms;
          const course::InFlightNeed need =
              course::in_flight_need(course::peak_dram_gbps(mem_clock_mhz, bus_bits), num_sms, latency_ns);
          ASSERT_NEAR(need.per_sm_bytes, want, want * 1e-12)
              << mem_clock_mhz << " MHz, " << bus_bits << " bits, " << num_sms << " SMs, " << latency_ns << " ns";
          ASSERT_DOUBLE_EQ(need.read_gbps * 2, need.peak_gbps);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 6 * 7 * 7 * 4);
}

// Every stage count, stage size and occupancy: the product, and "stage"/"block" in the singular
// exactly when there is one.
TEST(HostInFlight, SweepOfStagesStageBytesAndBlocks) {
  for (int stages = 1; stages <= 8; ++stages) {
    for (std::size_t stage_bytes : {std::size_t{16}, std::size_t{1024}, std::size_t{8192}, std::size_t{32768},
                                    std::size_t{1} << 20}) {
      for (int blocks = 0; blocks <= 32; ++blocks) {
        const course::KeptInFlight kept = course::stages_in_flight("k", stages, stage_bytes, blocks);
        EXPECT_EQ(kept.per_sm_bytes, double(stages) * double(stage_bytes) * blocks);
        EXPECT_EQ(kept.how.find(stages == 1 ? " 1 stage x" : " stages x") != std::string::npos, true) << kept.how;
        EXPECT_EQ(kept.how.find(blocks == 1 ? " 1 block per SM" : " blocks per SM") != std::string::npos, true)
            << kept.how;
      }
    }
  }
  // No bandwidth known (a device that reports no bus width): no margin is claimed.
  const std::string line = course::in_flight_line(course::in_flight_need(0, 132), course::stages_in_flight("k", 4, 8192, 6));
  EXPECT_NE(line.find("0.0 KiB needed"), std::string::npos) << line;
  EXPECT_NE(line.find("): 0.0 x"), std::string::npos) << line;
}

}  // namespace
