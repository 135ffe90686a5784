// Grades exercise 11.1: the footprint on a few blocks; blocks per SM for every percentage of every
// architecture in the guide's table against the chapter's model (carveout_model.hpp), and against
// the blocks the H100's SMs held in the lab's residency probe; the smallest sufficient percentage
// against a search with the model; the opt-in rule around 48 KiB and the device's limit.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <climits>
#include <sstream>
#include <string>

namespace {

std::string arch(const SharedCapacities& caps) {
  return std::to_string(caps.major) + "." + (caps.minor < 0 ? std::string("x") : std::to_string(caps.minor));
}

int model_blocks(const SharedCapacities& caps, int percent, std::size_t footprint) {
  return model_blocks_per_sm(caps, percent, footprint, INT_MAX).value_or(0);
}

constexpr std::size_t kReserved = kKiB;  // reservedSharedMemPerBlock on 8.0 and 9.0

// Fails with what the student's footprint_bytes() says for the block and why it is otherwise.
void expect_footprint(const BlockShared& block, std::size_t reserved, std::size_t want, const char* why) {
  const std::size_t got = footprint_bytes(block, reserved);
  if (got != want) ADD_FAILURE() << why << ": footprint_bytes() says " << got << " bytes";
}

TEST(HostExerciseCarveoutPlan, FootprintCountsEverythingAResidentBlockTakes) {
  expect_footprint({0, 30 * kKiB}, kReserved, 31 * kKiB,
                   "the lab's residency probe: 30 KiB of dynamic shared memory; the SM gives it more than that");
  expect_footprint({2 * kKiB, 0}, kReserved, 3 * kKiB, "a kernel with 2 KiB of __shared__ arrays only");
  expect_footprint({4 * kKiB, 64 * kKiB}, kReserved, 69 * kKiB,
                   "4 KiB of __shared__ arrays and 64 KiB of dynamic shared memory");
  expect_footprint({512, 4 * kKiB}, 0, 4608u, "a device that reserves nothing");
}

TEST(HostExerciseCarveoutPlan, WhatTheH100sSmsHeldInTheLab) {
  // The lab's probe: 30 KiB dynamic + 1 KiB reserved; the residency it measured on the H100.
  const SharedCapacities h100 = *shared_capacities(9, 0);
  const std::size_t probe = 31 * kKiB;
  const std::pair<int, int> measured[] = {{0, 1}, {10, 1}, {15, 2}, {50, 4}, {58, 5}, {75, 6}, {100, 7}};
  for (const auto& [percent, blocks] : measured) {
    const int got = blocks_per_sm(h100, percent, probe);
    if (got != blocks) {
      ADD_FAILURE() << "9.0 at " << percent << "%, blocks of 31 KiB: blocks_per_sm() says " << got
                    << ", not the residency the lab measured on the H100";
    }
  }
}

TEST(HostExerciseCarveoutPlan, TheGuidesExampleRoundsUp) {
  // 12.0 at 50 % asks for 50 KiB and gets 64 KiB: two 32 KiB blocks fit, not one.
  const int got = blocks_per_sm(*shared_capacities(12, 0), 50, 32 * kKiB);
  if (got != 2) {
    ADD_FAILURE() << "12.0 at 50%, blocks of 32 KiB: blocks_per_sm() says " << got
                  << "; the percentage asks for a size that the SM rounds to one of its capacities";
  }
}

TEST(HostExerciseCarveoutPlan, EveryPercentageOfEveryArchitecture) {
  const std::size_t footprints[] = {2 * kKiB, 5 * kKiB, 9 * kKiB, 31 * kKiB, 33 * kKiB, 65 * kKiB,
                                    101 * kKiB, 165 * kKiB, 228 * kKiB, 229 * kKiB};
  int wrong = 0;
  for (const SharedCapacities& caps : capacity_table()) {
    for (std::size_t footprint : footprints) {
      for (int percent = 0; percent <= 100 && wrong < 5; ++percent) {
        const int want = model_blocks(caps, percent, footprint);
        const int got = blocks_per_sm(caps, percent, footprint);
        if (got == want) continue;
        ++wrong;
        ADD_FAILURE() << arch(caps) << " at " << percent << "%, footprint " << footprint / double(kKiB) << " KiB: you say "
                      << got << " blocks per SM, the SM holds " << want;
      }
    }
  }
}

TEST(HostExerciseCarveoutPlan, TheSmallestPercentageForAnOccupancy) {
  const SharedCapacities h100 = *shared_capacities(9, 0);
  const auto says = [&](int wanted) {  // what the student's function answers, as words
    const std::optional<int> got = smallest_percent(h100, 31 * kKiB, wanted);
    return ": smallest_percent() says " + (got ? std::to_string(*got) + "%" : std::string("none"));
  };
  if (smallest_percent(h100, 31 * kKiB, 1) != std::optional<int>(0)) ADD_FAILURE()
      << "one 31 KiB block" << says(1) << "; even MaxL1 holds it, the driver raises the carveout";
  if (smallest_percent(h100, 31 * kKiB, 2) != std::optional<int>(15)) ADD_FAILURE()
      << "two 31 KiB blocks on 9.0" << says(2) << ", which is not the smallest that holds them";
  if (smallest_percent(h100, 31 * kKiB, 4) != std::optional<int>(44)) ADD_FAILURE()
      << "four 31 KiB blocks on 9.0" << says(4) << ": which capacity holds them, and which percentages select it?";
  if (smallest_percent(h100, 31 * kKiB, 8) != std::nullopt) ADD_FAILURE()
      << "eight 31 KiB blocks need 248 KiB" << says(8) << ", but no percentage holds them";
  int wrong = 0;
  for (const SharedCapacities& caps : capacity_table()) {
    for (std::size_t footprint : {3 * kKiB, 9 * kKiB, 17 * kKiB, 31 * kKiB, 65 * kKiB}) {
      for (int wanted = 1; wanted <= 12 && wrong < 5; ++wanted) {
        std::optional<int> want;
        for (int percent = 0; percent <= 100 && !want; ++percent) {
          if (model_blocks(caps, percent, footprint) >= wanted) want = percent;
        }
        const std::optional<int> got = smallest_percent(caps, footprint, wanted);
        if (got == want) continue;
        ++wrong;
        ADD_FAILURE() << arch(caps) << ", " << wanted << " blocks of " << footprint / kKiB << " KiB: you say "
                      << (got ? std::to_string(*got) + "%" : "none") << ", the smallest that holds them is "
                      << (want ? std::to_string(*want) + "%" : "none");
      }
    }
  }
}

TEST(HostExerciseCarveoutPlan, TheOptInRule) {
  constexpr std::size_t kOptin90 = 227 * kKiB;  // sharedMemPerBlockOptin on 9.0
  constexpr std::size_t kOptin80 = 163 * kKiB;  // on 8.0
  const auto name = [](LaunchRule r) {
    return r == LaunchRule::as_is ? "as is" : r == LaunchRule::after_opt_in ? "only after the opt-in" : "never";
  };
  struct Case {
    BlockShared block;
    std::size_t optin;
    LaunchRule want;
  };
  const Case cases[] = {
      {{0, 48 * kKiB}, kOptin90, LaunchRule::as_is},
      {{0, 48 * kKiB + 16}, kOptin90, LaunchRule::after_opt_in},
      {{0, 64 * kKiB}, kOptin90, LaunchRule::after_opt_in},
      {{8 * kKiB, 40 * kKiB}, kOptin90, LaunchRule::as_is},
      {{8 * kKiB, 41 * kKiB}, kOptin90, LaunchRule::after_opt_in},
      {{0, 227 * kKiB}, kOptin90, LaunchRule::after_opt_in},
      {{0, 227 * kKiB + 16}, kOptin90, LaunchRule::impossible},
      {{4 * kKiB, 224 * kKiB}, kOptin90, LaunchRule::impossible},
      {{4 * kKiB, 223 * kKiB}, kOptin90, LaunchRule::after_opt_in},
      {{0, 164 * kKiB}, kOptin80, LaunchRule::impossible},
      {{0, 163 * kKiB}, kOptin80, LaunchRule::after_opt_in},
      {{2 * kKiB, 16 * kKiB}, kOptin80, LaunchRule::as_is},
  };
  for (const Case& c : cases) {
    const LaunchRule got = launch_rule(c.block, c.optin);
    if (got != c.want) ADD_FAILURE() << c.block.static_bytes << " bytes of __shared__ arrays and " << c.block.dynamic_bytes
                           << " of dynamic shared memory, sharedMemPerBlockOptin " << c.optin / kKiB << " KiB: you say the launch works '"
                           << name(got) << "', it works '" << name(c.want) << "'";
  }
}

}  // namespace
