// Grades exercise 01.3: the kernel runs in a child process on 1, 7, 600 and 1320 batches of a
// position-dependent pattern (one batch per block, then up to ten batches per block), and its
// output is compared with the host's, element by element. For the first wrong element the test
// works out what the block read instead: the marker, or an element of the block's previous or
// next batch.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"

namespace {

using exercise::kBatchElems;

// What the three values an output was computed from may have been, instead of the batch's own.
enum class Source { batch, marker, previous, next };

// Which mix of sources gives `value` for element i of batch b (the first found), or false.
bool explain(const std::vector<std::uint32_t>& in, std::size_t b, int i, std::size_t stride, std::uint32_t value,
             Source (&found)[3]) {
  const std::size_t num_batches = in.size() / kBatchElems;
  const int index[3] = {(i - 1) & (kBatchElems - 1), i, (i + 1) & (kBatchElems - 1)};
  auto read = [&](Source s, int k, std::uint32_t& out) {
    switch (s) {
      case Source::batch: out = in[b * kBatchElems + index[k]]; return true;
      case Source::marker: out = exercise::kNotCopied; return true;
      case Source::previous:
        if (b < stride) return false;
        out = in[(b - stride) * kBatchElems + index[k]];
        return true;
      case Source::next:
        if (b + stride >= num_batches) return false;
        out = in[(b + stride) * kBatchElems + index[k]];
        return true;
    }
    return false;
  };
  const Source all[4] = {Source::batch, Source::marker, Source::previous, Source::next};
  for (Source l : all) {
    for (Source c : all) {
      for (Source r : all) {
        std::uint32_t vl, vc, vr;
        if (!read(l, 0, vl) || !read(c, 1, vc) || !read(r, 2, vr)) continue;
        if (exercise::smooth(vl, vc, vr) == value) {
          found[0] = l, found[1] = c, found[2] = r;
          return true;
        }
      }
    }
  }
  return false;
}

std::string what_was_read(const Source (&found)[3]) {
  const char* names[3] = {"its left neighbour", "the element itself", "its right neighbour"};
  std::string text;
  for (int k = 0; k < 3; ++k) {
    if (found[k] == Source::batch) continue;
    text += text.empty() ? ": for " : "; for ";
    text += names[k];
    if (found[k] == Source::marker) text += " the block read the marker, before that element had been copied";
    if (found[k] == Source::previous) {
      text += " it read the block's previous batch: this batch had not been copied there yet";
    }
    if (found[k] == Source::next) {
      text += " it read the block's next batch: the element was overwritten before this batch had been read";
    }
  }
  return text;
}

std::string attempt(std::size_t num_batches) {
  std::vector<std::uint32_t> in(num_batches * kBatchElems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(in.size());
  course::DeviceBuffer<std::uint32_t> gmem_out(in.size());
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_batch_syncs(gmem_in.data(), gmem_out.data(), num_batches);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(in.size());
  gmem_out.download(out.data());
  const std::size_t stride = exercise::grid_for(num_batches);  // between the batches of one block
  for (std::size_t b = 0; b < num_batches; ++b) {
    for (int i = 0; i < kBatchElems; ++i) {
      const std::size_t base = b * kBatchElems;
      const std::uint32_t want = exercise::smooth(in[base + ((i - 1) & (kBatchElems - 1))], in[base + i],
                                                  in[base + ((i + 1) & (kBatchElems - 1))]);
      const std::uint32_t got = out[base + i];
      if (got == want) continue;
      std::ostringstream line;
      line << num_batches << " batches: element " << i << " of batch " << b << " (block " << b % stride
           << ", its batch number " << b / stride << ") is 0x" << std::hex << got << ", expected 0x" << want;
      Source found[3];
      if (got == course::poison_value<std::uint32_t>()) {
        line << ": it was never written";
      } else if (explain(in, b, i, stride, got, found)) {
        line << what_was_read(found);
      }
      return line.str();
    }
  }
  return "";
}

class Sm75_ExerciseBatchSyncs : public course::GpuTest {
 protected:
  Sm75_ExerciseBatchSyncs() : GpuTest({7, 5, false, "the course's build (sm_75 is the oldest target)"}) {}
};

TEST_F(Sm75_ExerciseBatchSyncs, OneBatch) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1); }); }
TEST_F(Sm75_ExerciseBatchSyncs, SevenBatches) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(7); }); }
TEST_F(Sm75_ExerciseBatchSyncs, SeveralBatchesPerBlock) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(600); }); }
TEST_F(Sm75_ExerciseBatchSyncs, TenBatchesPerBlock) { COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1320); }); }

}  // namespace
