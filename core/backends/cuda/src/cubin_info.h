#pragma once
// What a cubin says about itself without a GPU: its __constant__ symbols (bank 3, with their
// sizes) and, per kernel, the registers per thread and the static shared memory. The session
// checks a config against the device with these before loading it, and the spec's constants
// against what the kernel declares; both are testable where NVRTC runs but no driver does.
#include <string>

#include "toolchain.h"

namespace ktune::cuda {

// sm_50 and later: 8 registers per thread at a time (256 per warp), to warps 4 at a time (one per
// SM sub-partition, each holding a quarter of the register file), at most 255 per thread. The
// cubin check and the register cap both follow it: a 736-thread block (23 warps, held as 24) fits
// 80 registers per thread in 64 Ki, not the 88 that counting whole warps alone gives (82 failed at
// launch on the H100: "at most 640 threads").
inline constexpr gpu::RegisterAllocation kNvidiaRegisters{8, 128, 255};

// Throws std::runtime_error when `binary` is not a 64-bit little-endian ELF.
gpu::ModuleInfo parse_cubin(const std::string& binary);

}  // namespace ktune::cuda
