#pragma once
// The HIP runtime behind gpu::DeviceApi (hip_api.cpp), with ktune's reference gemm kernel as
// the vendor's gemm (rocBLAS is not in Debian 12's packages).
#include <hip/hip_runtime_api.h>

#include <memory>
#include <string>

#include "device_api.h"

namespace ktune::hip {

// "hipErrorNoDevice (description)"; the description only where the runtime has one (HIP 5.2's
// hipGetErrorString returns the name again).
std::string describe(hipError_t e);

// Device `index`; gpu::ApiError when the runtime refuses it.
std::shared_ptr<gpu::DeviceApi> open_device(int index);

}  // namespace ktune::hip
