#include "course/buffer.hpp"

#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

namespace {

// Without a GPU only empty buffers can exist; they must not touch the runtime at all.
TEST(HostBuffer, EmptyBuffersAllocateNothing) {
  course::DeviceBuffer<float> device(0);
  EXPECT_EQ(device.data(), nullptr);
  EXPECT_EQ(device.size(), 0u);
  EXPECT_EQ(device.bytes(), 0u);
  course::PinnedBuffer<int> pinned(0);
  EXPECT_EQ(pinned.data(), nullptr);
  EXPECT_EQ(pinned.size(), 0u);
}

TEST(HostBuffer, OwnershipMovesAndIsNeverCopied) {
  static_assert(!std::is_copy_constructible_v<course::DeviceBuffer<int>>, "one owner per allocation");
  static_assert(!std::is_copy_assignable_v<course::PinnedBuffer<int>>, "one owner per allocation");
  static_assert(std::is_nothrow_move_constructible_v<course::DeviceBuffer<int>>, "moves cannot fail");
  course::DeviceBuffer<int> a;
  course::DeviceBuffer<int> b(std::move(a));
  EXPECT_EQ(b.data(), nullptr);
  a = std::move(b);
  EXPECT_EQ(a.size(), 0u);
}

}  // namespace
