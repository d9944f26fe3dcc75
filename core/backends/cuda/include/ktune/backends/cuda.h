#pragma once
// The CUDA backend: kernel families as NVRTC-compiled sources described by JSON specs (the
// built-in gemm and qmatmul, or a user's --kernel-spec), loaded through the driver API
// (dlopen'ed: a machine without a driver simply lists no CUDA device), timed with CUDA events,
// validated against and compared with cuBLAS. Its sessions are GpuSessionInfo (ktune/backends/gpu.h).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "ktune/backend.h"
#include "ktune/backends/gpu.h"

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

}  // namespace ktune
