#pragma once
// The CUDA backend: kernel families as NVRTC-compiled sources described by JSON specs (the
// built-in gemm and qmatmul, or a user's --kernel-spec), loaded through the driver API
// (dlopen'ed: a machine without a driver simply lists no CUDA device), timed with CUDA events,
// validated against and compared with cuBLAS.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ktune/backend.h"

namespace ktune {

struct CudaBackendOptions {
  // Where compiled kernels are cached: nullopt = cuda_default_cache_dir(); an empty path
  // disables the cache.
  std::optional<std::filesystem::path> cache_dir;
};

std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

// $KTUNE_CUDA_CACHE, else $XDG_CACHE_HOME/ktune/cuda, else ~/.cache/ktune/cuda. A front end's
// cache flag can set KTUNE_CUDA_CACHE before creating backends.
std::filesystem::path cuda_default_cache_dir();

// Why this process sees no CUDA device ("libcuda.so.1 could not be loaded ..."), or empty.
std::string cuda_unavailable_reason();

// What a CUDA ProblemSession tells beyond the generic interface (dynamic_cast to it).
class CudaSessionInfo {
 public:
  virtual ~CudaSessionInfo() = default;
  // Runs a short busy probe now and returns the SM clock it saw (clock64 against globaltimer).
  virtual double measure_sm_clock_mhz() = 0;
  // The SM clock seen by probes in this session so far: lowest and highest.
  virtual std::pair<double, double> sm_clock_range_mhz() const = 0;
  // Context resets after sticky faults (crashed trials) so far.
  virtual int recoveries() const = 0;
};

}  // namespace ktune
