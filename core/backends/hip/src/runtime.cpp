#include "runtime.h"

#include "ktune/error.h"
#include "ktune/measurement.h"

namespace ktune::hip {

std::string describe(hipError_t e) {
  const std::string name = hipGetErrorName(e), text = hipGetErrorString(e);
  return text.empty() || text == name ? name : name + " (" + text + ")";
}

void check(hipError_t e, const std::string& what) {
  if (e == hipSuccess) return;
  const TrialStatus status =
      e == hipErrorIllegalAddress || e == hipErrorLaunchFailure ? TrialStatus::Crashed : TrialStatus::LaunchError;
  throw TrialFailure(status, what + ": " + describe(e));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
  const hipError_t e = hipMalloc(&ptr_, std::max<std::size_t>(bytes, 16));
  if (e != hipSuccess) {
    ptr_ = nullptr;
    throw RunError("cannot allocate " + std::to_string(bytes) + " bytes of device memory for " + what + ": " +
                   describe(e) + " (use a smaller shape)");
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) (void)hipFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) (void)hipFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

}  // namespace ktune::hip
