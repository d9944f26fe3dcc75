#pragma once
// What a cubin says about itself without a GPU: its __constant__ symbols (bank 3, with their
// sizes) and, per kernel, the registers per thread and the static shared memory. The session
// checks a config against the device with these before loading it, and the spec's constants
// against what the kernel declares; both are testable where NVRTC runs but no driver does.
#include <cstdint>
#include <map>
#include <string>

namespace ktune::cuda {

struct CubinInfo {
  struct Function {
    int registers = -1;  // -1: the cubin does not say
    std::uint64_t static_shared = 0;
  };
  struct Constant {
    std::uint64_t bytes = 0;
    bool initialized = false;  // the source gives it a (non-zero) initializer
  };
  std::map<std::string, Constant> constants;  // lowered name -> symbol
  std::map<std::string, Function> functions;  // lowered name -> attributes

  // Throws std::runtime_error when `binary` is not a 64-bit little-endian ELF.
  static CubinInfo parse(const std::string& binary);
};

}  // namespace ktune::cuda
