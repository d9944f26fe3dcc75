#pragma once
// The HIP backend: kernel families as HIP sources described by JSON specs (the built-in gemm,
// or a user's --kernel-spec with "backend": "hip"), compiled to code objects by hipcc for the
// device's gfx target, and run by the session the CUDA backend shares (core/backends/gpu): timed
// with HIP events and graphs, validated against a reference computed on the device by a simple
// f32 kernel (or a trusted config or reference kernel of the spec). Without an AMD GPU (or
// without /dev/kfd) it lists no device and says why; compiling for a target needs no GPU.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"

namespace ktune {

struct HipBackendOptions {
  // Where compiled code objects are cached: nullopt = hip_default_cache_dir(); an empty path
  // disables the cache.
  std::optional<std::filesystem::path> cache_dir;
};

std::unique_ptr<Backend> make_hip_backend();
std::unique_ptr<Backend> make_hip_backend(const HipBackendOptions& options);

// $KTUNE_HIP_CACHE, else $XDG_CACHE_HOME/ktune/hip, else ~/.cache/ktune/hip.
std::filesystem::path hip_default_cache_dir();

// Why this process sees no AMD GPU ("hipGetDeviceCount: hipErrorNoDevice ..."), or empty.
std::string hip_unavailable_reason();

}  // namespace ktune
