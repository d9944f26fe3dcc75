#pragma once
// What a cubin says about itself without a GPU: its __constant__ symbols (bank 3, with their
// sizes) and, per kernel, the registers per thread and the static shared memory. The session
// checks a config against the device with these before loading it, and the spec's constants
// against what the kernel declares; both are testable where NVRTC runs but no driver does.
#include <string>

#include "toolchain.h"

namespace ktune::cuda {

// Throws std::runtime_error when `binary` is not a 64-bit little-endian ELF.
gpu::ModuleInfo parse_cubin(const std::string& binary);

}  // namespace ktune::cuda
