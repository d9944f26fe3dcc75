#pragma once
// The CUDA driver API, loaded with dlopen at run time: a build with CUDA must start on a machine
// with no GPU and no driver (CI, laptops); there the backend reports no devices and keeps the
// reason for the message. Types come from the toolkit's cuda.h; no symbol is linked.
#include <cuda.h>

#include <string>

namespace ktune::cuda {

#define KTUNE_CUDA_DRIVER_FUNCTIONS(X)                                                                                 \
  X(cuInit)                                                                                                            \
  X(cuDriverGetVersion)                                                                                                \
  X(cuDeviceGetCount)                                                                                                  \
  X(cuDeviceGet)                                                                                                       \
  X(cuDeviceGetName) X(cuDeviceGetPCIBusId) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuCtxCreate) X(cuCtxDestroy) \
      X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal)             \
          X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemAlloc) X(cuMemFree) \
              X(cuMemcpyHtoDAsync) X(cuMemcpyDtoH) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuStreamCreate)            \
                  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)        \
                      X(cuEventElapsedTime) X(cuEventQuery) X(cuStreamBeginCapture) X(cuStreamEndCapture)              \
                          X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)      \
                              X(cuGetErrorName) X(cuGetErrorString) X(cuTensorMapEncodeTiled)

struct Driver {
#define KTUNE_DECLARE(name) decltype(&::name) name = nullptr;
  KTUNE_CUDA_DRIVER_FUNCTIONS(KTUNE_DECLARE)
#undef KTUNE_DECLARE
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The process-wide driver, loaded and initialised once. nullptr when unavailable; `why` then
// says what is missing ("libcuda.so.1 not found: no NVIDIA driver", "cuInit failed: ...").
const Driver* driver(std::string* why = nullptr);
// Like driver(), but throws RunError with the reason.
const Driver& require_driver();

// The context is unusable after these: the launch faulted on the device.
bool sticky(CUresult r);

std::string error_text(CUresult r);

}  // namespace ktune::cuda
