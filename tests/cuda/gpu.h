#pragma once
// Shared setup of the GPU tests: the CUDA backend and its first device, or exit code 77
// (ctest: skipped) with the reason when this machine has none.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "ktune/backends/cuda.h"
#include "ktune/measurement.h"
#include "ktune/problem.h"

namespace ktune_test {

struct Gpu {
  std::unique_ptr<ktune::Backend> backend;
  ktune::DeviceInfo device;
};

// The compile cache lives in a fresh folder per test run so a test never passes on stale cubins.
inline Gpu gpu_or_skip(const char* test) {
  const auto cache = std::filesystem::temp_directory_path() / ("ktune_test_cache_" + std::to_string(::getpid()));
  Gpu g{ktune::make_cuda_backend(ktune::CudaBackendOptions{cache}), {}};
  const auto devices = g.backend->devices();
  if (devices.empty()) {
    std::printf("%s skipped: no CUDA device (%s)\n", test, ktune::cuda_unavailable_reason().c_str());
    std::exit(77);
  }
  g.device = devices.front();
  std::printf("%s on %s (sm_%d%d, %d SMs)\n", test, g.device.name.c_str(),
              static_cast<int>(g.device.property("cc_major")), static_cast<int>(g.device.property("cc_minor")),
              static_cast<int>(g.device.property("sms")));
  return g;
}

inline ktune::Problem make_problem(const ktune::KernelFamily& f,
                                   std::vector<std::pair<std::string, std::string>> fields) {
  ktune::Problem p;
  p.family = f.name;
  p.fields = std::move(fields);
  return p;
}

// Runs `fn` and returns the TrialFailure status it threw and its message, or Ok.
template <class F>
std::pair<ktune::TrialStatus, std::string> status_of(F&& fn) {
  try {
    fn();
  } catch (const ktune::TrialFailure& e) {
    return {e.status(), e.what()};
  }
  return {ktune::TrialStatus::Ok, ""};
}

}  // namespace ktune_test
