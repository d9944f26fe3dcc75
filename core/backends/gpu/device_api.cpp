#include "device_api.h"

#include <algorithm>
#include <mutex>

#include "ktune/error.h"

namespace ktune::gpu {

void DeviceApi::check_usable() const {
  if (!lost_.empty())
    throw RunError("the GPU is unusable in this process: " + lost_ +
                   "; resume the run in a new process (ktune tune --resume)");
}

bool DeviceApi::reset() {
  std::unique_lock lock(mutex);
  std::string why;
  const bool ok = recreate(why);
  ++generation_;
  if (!ok) lost_ = "after a faulting kernel the driver refuses a new context (" + why + ")";
  return ok;
}

Buffer::Buffer(std::shared_ptr<DeviceApi> api, std::size_t bytes, const std::string& what)
    : api_(std::move(api)), bytes_(std::max<std::size_t>(bytes, 16)), generation_(api_->generation()) {
  try {
    ptr_ = api_->alloc(bytes_);
  } catch (const ApiError& e) {
    if (e.kind() != ApiError::Kind::OutOfMemory) throw;
    throw RunError("not enough GPU memory for " + what + " (" + std::to_string(bytes >> 20) +
                   " MiB): use a smaller problem");
  }
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    api_ = std::move(o.api_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
    generation_ = o.generation_;
  }
  return *this;
}

void Buffer::reset() noexcept {
  if (ptr_ && api_->alive(generation_)) api_->free(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

}  // namespace ktune::gpu
