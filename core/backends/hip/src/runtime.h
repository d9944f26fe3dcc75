#pragma once
// HIP runtime helpers shared by the session and the backend: error mapping and owned device
// memory.
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <string>

namespace ktune::hip {

// "hipErrorNoDevice (description)"; the description only where the runtime has one (HIP 5.2's
// hipGetErrorString returns the name again).
std::string describe(hipError_t e);

// Throws TrialFailure(LaunchError) "<what>: hipErrorX (description)" unless e is hipSuccess.
void check(hipError_t e, const std::string& what);

// Device memory owned by value; running out is a RunError naming `what`.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace ktune::hip
