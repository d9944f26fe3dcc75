#pragma once
// Every backend compiled into this binary. Each reports its own devices at run time, so a
// build with CUDA runs fine on a machine without a GPU (the CUDA backend then lists none).
#include <memory>
#include <vector>

#include "ktune/backend.h"
#include "ktune/backends/cpu.h"
#ifdef KTUNE_HAVE_CUDA
#include "ktune/backends/cuda.h"
#endif
#ifdef KTUNE_HAVE_HIP
#include "ktune/backends/hip.h"
#endif

namespace ktune {

inline std::vector<std::unique_ptr<Backend>> make_backends() {
  std::vector<std::unique_ptr<Backend>> all;
  all.push_back(make_cpu_backend());
#ifdef KTUNE_HAVE_CUDA
  all.push_back(make_cuda_backend());
#endif
#ifdef KTUNE_HAVE_HIP
  all.push_back(make_hip_backend());
#endif
  return all;
}

}  // namespace ktune
