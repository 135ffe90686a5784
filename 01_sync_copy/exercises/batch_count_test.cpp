// Grades exercise 01.1: count_batch() against the chapter's model for the lesson's widths and the
// lab's loads-first row (256 threads, 4 KiB batches), then against counts worked out by hand for
// block sizes and batches the lesson does not use.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sync_copy_model.hpp"

namespace {

std::string describe(const CopyShape& s) {
  std::ostringstream text;
  text << s.batch_bytes << "-byte batch, " << s.block_threads << " threads, " << s.load_bytes << "-byte loads";
  return text.str();
}

void expect_count(const CopyShape& shape, const BatchCount& want) {
  const BatchCount got = count_batch(shape);
  if (got.thread_loads != want.thread_loads) ADD_FAILURE()
      << describe(shape) << ": thread_loads is " << got.thread_loads
      << "; every load moves load_bytes of the batch, and every byte is loaded once";
  if (got.trips != want.trips) ADD_FAILURE() << describe(shape) << ": trips is " << got.trips
                                   << "; the loop hands out one load per thread per trip until none is left";
  if (got.busy_threads != want.busy_threads) ADD_FAILURE()
      << describe(shape) << ": busy_threads is " << got.busy_threads
      << "; a thread whose first index is already past the last load never loads";
  if (got.warp_loads != want.warp_loads) ADD_FAILURE()
      << describe(shape) << ": warp_loads is " << got.warp_loads
      << "; a warp issues a trip's load when at least one of its 32 lanes takes part in that trip";
}

TEST(HostExerciseBatchCount, TheLessonsWidthsAgreeWithTheModel) {
  for (const char* variant : {"sync_copy", "sync_copy_uint4", "width_4_loads_first"}) {
    const CopyPlan* plan = find_plan(copy_plans(), variant);
    if (plan == nullptr) FAIL() << variant << ": the chapter's model has no such row";
    const CopyShape shape{4096, 256, plan->load_bytes};
    const BatchCost model = batch_cost(*plan, shape.batch_bytes, shape.block_threads);
    const BatchCount got = count_batch(shape);
    if (got.thread_loads != model.global_loads) ADD_FAILURE()
        << variant << " (" << describe(shape) << "): thread_loads is " << got.thread_loads
        << ", and the model counts a different number of global loads per batch";
    if (got.thread_loads != model.shared_stores) ADD_FAILURE()
        << variant << ": each load of the copy is stored to shared memory once";
  }
}

TEST(HostExerciseBatchCount, TheLessonsBlockAtEveryWidth) {
  expect_count({4096, 256, 4}, {1024, 32, 4, 256});
  expect_count({4096, 256, 8}, {512, 16, 2, 256});
  expect_count({4096, 256, 16}, {256, 8, 1, 256});
}

TEST(HostExerciseBatchCount, MoreThreadsThanLoads) {
  expect_count({4096, 1024, 16}, {256, 8, 1, 256});  // 24 of the 32 warps have nothing to load
  expect_count({4096, 1024, 4}, {1024, 32, 1, 1024});
  expect_count({16, 256, 16}, {1, 1, 1, 1});
  expect_count({48, 256, 4}, {12, 1, 1, 12});
}

TEST(HostExerciseBatchCount, UnevenTripsAndPartialWarps) {
  expect_count({4096, 96, 4}, {1024, 32, 11, 96});  // ten trips of 96, then 64
  expect_count({4096, 96, 16}, {256, 8, 3, 96});    // 96, 96, 64
  expect_count({4096, 100, 16}, {256, 10, 3, 100});  // 100, 100, 56 threads: 4, 4 and 2 warps
  expect_count({8192, 256, 16}, {512, 16, 2, 256});
  expect_count({8192, 160, 8}, {1024, 32, 7, 160});  // six trips of 5 warps, then 64 threads: 2
}

}  // namespace
