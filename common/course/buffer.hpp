/// @file
/// @brief RAII owners for device memory (`cudaMalloc`) and pinned host memory (`cudaMallocHost`).
#pragma once

#include <cstddef>
#include <utility>

#include "course/check.hpp"

namespace course {

/// Move-only owner of `count` elements of device memory.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) COURSE_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Copies `size()` elements from host memory.
  void upload(const T* host) { COURSE_CHECK(cudaMemcpy(data_, host, bytes(), cudaMemcpyHostToDevice)); }
  /// Copies `size()` elements to host memory.
  void download(T* host) const { COURSE_CHECK(cudaMemcpy(host, data_, bytes(), cudaMemcpyDeviceToHost)); }
  /// Sets every byte to @p byte (output poisoning, see pattern.hpp).
  void fill_bytes(unsigned char byte) { COURSE_CHECK(cudaMemset(data_, byte, bytes())); }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFree(data_);  // errors here would come from an earlier failure
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// Move-only owner of `count` elements of page-locked host memory.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) COURSE_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace course
