#include "course/timeline.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace {

using course::timeline::Event;
using course::timeline::Kind;
using course::timeline::Role;

Event event(unsigned long long t_ns, std::uint32_t block, Role role, std::uint32_t iteration, Kind kind) {
  return Event{t_ns, block, 7, static_cast<std::uint32_t>(role), iteration % 2, iteration,
               static_cast<std::uint32_t>(kind)};
}

TEST(HostTimeline, UnwrittenSlotsAreDroppedAndTheRestSortedByTime) {
  const std::vector<Event> slots = {event(300, 1, Role::consumer, 0, Kind::land), Event{},
                                    event(100, 0, Role::producer, 0, Kind::issue),
                                    event(300, 0, Role::consumer, 0, Kind::land), Event{}};
  const std::vector<Event> events = course::timeline::recorded_in_order(slots);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].t_ns, 100u);
  EXPECT_EQ(events[1].block, 0u) << "equal times: the lower block first";
  EXPECT_EQ(events[2].block, 1u);
}

TEST(HostTimeline, SmallestStepIsThePositiveDifference) {
  const std::vector<Event> events = {event(1000, 0, Role::producer, 0, Kind::issue),
                                     event(1000, 1, Role::producer, 0, Kind::issue),
                                     event(1032, 0, Role::consumer, 0, Kind::land),
                                     event(1100, 0, Role::consumer, 0, Kind::consume)};
  EXPECT_EQ(course::timeline::smallest_step_ns(events), 32u);
  EXPECT_EQ(course::timeline::smallest_step_ns({}), 0u);
}

TEST(HostTimeline, CsvHasTheHeaderLinesThenOneRowPerEvent) {
  course::timeline::Header header;
  header.program = "fake_lab";
  header.variant = "ring_2";
  header.size_bytes = 1u << 20;
  header.device = "Some GPU (compute capability 9.0)";
  header.toolkit = "nvcc 13.0";
  header.date = "2025-01-31 14:05 UTC";
  header.notes = {"grid 132 blocks; recorded blocks 0-3"};
  header.role_names[0] = "sender";
  header.role_names[1] = "receiver";
  header.peer = "ring 8";
  std::ostringstream out;
  course::timeline::write_csv(out, header,
                              {event(1000, 0, Role::producer, 0, Kind::issue),
                               event(1500, 1, Role::consumer, 3, Kind::release)});
  EXPECT_EQ(out.str(),
            "# timeline: fake_lab, variant ring_2, size 1048576 bytes (1.00 MiB)\n"
            "# device: Some GPU (compute capability 9.0)\n"
            "# toolkit: nvcc 13.0; date: 2025-01-31 14:05 UTC\n"
            "# note: grid 132 blocks; recorded blocks 0-3\n"
            "# peer: ring 8\n"
            "# clock: %globaltimer in ns; smallest step between two recorded times: 500 ns\n"
            "# kinds: issue = copy (or send) started, land = wait on full returned, consume = compute done, "
            "release = stage handed back\n"
            "block,sm,role,stage,iteration,kind,t_ns\n"
            "0,7,sender,0,0,issue,1000\n"
            "1,7,receiver,1,3,release,1500\n");
}

// Two blocks, three round trips each, stages 0, 1, 0: what the chapters' GPU tests require.
std::vector<Event> good_recording() {
  std::vector<Event> events;
  for (std::uint32_t block = 0; block < 2; ++block) {
    for (std::uint32_t it = 0; it < 3; ++it) {
      const unsigned long long t = 1000 * (it + 1) + 10 * block;
      events.push_back(event(t, block, Role::producer, it, Kind::issue));
      events.push_back(event(t + 400, block, Role::consumer, it, Kind::land));
      events.push_back(event(t + 500, block, Role::consumer, it, Kind::consume));
      events.push_back(event(t + 600, block, Role::consumer, it, Kind::release));
    }
  }
  return events;
}

TEST(HostTimeline, RoundTripsInOrderPass) {
  EXPECT_EQ(course::timeline::round_trip_problems(good_recording(), 2), "");
}

TEST(HostTimeline, EachBrokenRoundTripIsNamed) {
  std::vector<Event> events = good_recording();
  events[1].t_ns = events[3].t_ns + 1;  // block 0, iteration 0: lands after its release
  EXPECT_NE(course::timeline::round_trip_problems(events, 2).find("block 0 iteration 0 land: land, consume"),
            std::string::npos);
  events = good_recording();
  events[6].kind = static_cast<std::uint32_t>(Kind::land);  // iteration 1 has a land but no consume
  events[6].t_ns = events[5].t_ns;
  EXPECT_NE(course::timeline::round_trip_problems(events, 2).find("no consume or release"), std::string::npos);
  events = good_recording();
  events[4].stage = 0;  // iteration 1 belongs in stage 1 of a 2-stage ring
  EXPECT_NE(course::timeline::round_trip_problems(events, 2).find("block 0 iteration 1 issue: stage 0"),
            std::string::npos);
  events = good_recording();
  events[0].t_ns = events[1].t_ns + 1;  // issued after its data landed
  EXPECT_NE(course::timeline::round_trip_problems(events, 2).find("later than the land it started"),
            std::string::npos);
}

TEST(HostTimeline, AnIssueIsComparedWithTheLandInTheBlockItIsSentTo) {
  std::vector<Event> events = good_recording();
  events[13].t_ns = 1005;  // block 1's first land: after block 0's issue (1000), before block 1's own (1010)
  const auto to_block_1 = [](std::uint32_t block) { return block + 1; };
  EXPECT_EQ(course::timeline::round_trip_problems(events, 2, to_block_1), "") << "block 0 sends to block 1";
  EXPECT_NE(course::timeline::round_trip_problems(events, 2).find("block 1 iteration 0 issue"), std::string::npos)
      << "within its own block, block 1's issue comes after that land";
  events[13].t_ns = 999;
  EXPECT_NE(course::timeline::round_trip_problems(events, 2, to_block_1).find("block 0 iteration 0 issue"),
            std::string::npos);
}

TEST(HostTimeline, AFileThatCannotBeWrittenIsNamed) {
  try {
    course::timeline::write_csv_file("/nonexistent-directory/t.csv", {}, {});
    FAIL() << "wrote into a directory that does not exist";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot open '/nonexistent-directory/t.csv'"), std::string::npos)
        << error.what();
  }
}

TEST(HostTimeline, UtcDateHasItsForm) {
  const std::string date = course::timeline::utc_now();
  ASSERT_EQ(date.size(), 20u) << date;
  EXPECT_EQ(date.substr(16), " UTC");
  EXPECT_EQ(date[4], '-');
  EXPECT_EQ(date[13], ':');
}

}  // namespace
