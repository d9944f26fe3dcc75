#pragma once
// The CUDA driver API behind gpu::DeviceApi (cuda_api.cpp): one context of ktune's own per
// device, and cuBLAS as the vendor's gemm.
#include <memory>

#include "device_api.h"
#include "driver.h"

namespace ktune::cuda {

// A new context on device `index`; gpu::ApiError when the driver refuses one.
std::shared_ptr<gpu::DeviceApi> open_device(const Driver& d, int index);

}  // namespace ktune::cuda
