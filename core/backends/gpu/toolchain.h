#pragma once
// The compile side of a vendor, usable without a device (the tests build every config where
// only the compiler is installed): the compiler with its disk cache, the option that caps
// registers, what a compiled module says about itself before it is loaded, and ktune's own
// kernels in the vendor's language.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/compile_cache.h"
#include "ktune/expression.h"

namespace ktune::gpu {

// How a vendor gives registers to a block: `granule` per thread at a time, to `group` threads at a
// time, at most `max_per_thread` per thread (0: no such limit). NVIDIA's (cuda::kNvidiaRegisters)
// is 8 per thread (256 per warp) to warps by 4: a block's warps are spread over the SM's four
// sub-partitions, each with a quarter of the register file, so 23 warps need the registers of 24.
struct RegisterAllocation {
  int granule = 1, group = 1, max_per_thread = 0;
  // What a block of `threads` really holds of the register file when each thread uses `registers`.
  std::uint64_t allocated(std::uint64_t registers, std::uint64_t threads) const {
    const std::uint64_t r = granule, t = group;
    return (registers + r - 1) / r * r * ((threads + t - 1) / t * t);
  }
  // The most registers per thread with which a block of `threads` fits `file` registers: a
  // multiple of `granule`, or `max_per_thread` when the block holds that many; 0 when not even one
  // granule fits.
  std::uint64_t cap(std::uint64_t threads, std::uint64_t file) const {
    const std::uint64_t t = group, held = std::max<std::uint64_t>((threads + t - 1) / t * t, 1);
    const std::uint64_t per_thread = file / held / granule * granule;
    return max_per_thread > 0 ? std::min<std::uint64_t>(per_thread, max_per_thread) : per_thread;
  }
};

// What a compiled module tells about itself without a GPU.
struct ModuleInfo {
  struct Function {
    int registers = -1;  // -1: the module does not say
    std::uint64_t static_shared = 0;
  };
  struct Constant {
    std::uint64_t bytes = 0;
    bool initialized = false;  // the source gives it a (non-zero) initializer
  };
  // True when `constants` lists every __constant__ symbol the module reads; otherwise the
  // spec's constants are checked only when they are filled, after loading.
  bool knows_constants = false;
  std::map<std::string, Constant> constants;  // lowered name -> symbol
  std::map<std::string, Function> functions;  // lowered name -> attributes
  RegisterAllocation registers;               // the vendor's rule, for the registers per thread of `functions`
};

class Toolchain {
 public:
  virtual ~Toolchain() = default;
  // `entries`: kernels and __constant__ symbols as the spec names them; the result's `lowered`
  // gives their names in the binary, in the same order. The source's headers are found by the
  // names it includes them by, before any include path. Throws TrialFailure(CompileError) with
  // the compiler's log. Thread-safe.
  virtual CompiledModule compile(const KernelSource& source, const std::vector<std::string>& options,
                                 const std::vector<std::string>& entries) const = 0;
  // Options for a module whose largest block has `threads` threads, so that a block gets the
  // registers it needs to launch at all (spilling if it must); empty when nothing is needed.
  virtual std::vector<std::string> register_cap(std::uint64_t threads, const Variables& device) const = 0;
  // Throws std::runtime_error when `binary` is not a module of this vendor.
  virtual ModuleInfo inspect(const std::string& binary) const = 0;
  // ktune's own kernels: ktune_compare(const void* got, int type (0 f16, 1 bf16, 2 f32), const
  // float* want, unsigned n, float atol, float rtol, unsigned long long out[2]) counts the
  // mismatches and keeps the largest error (its float bits high, its index low) with atomics;
  // ktune_clock_probe(unsigned long long* out, unsigned long long ns), where `clock_probe`, busy-waits
  // `ns` of wall time per block and writes the cycles and nanoseconds it took.
  struct Utilities {
    KernelSource program;
    bool clock_probe = false;
  };
  virtual const Utilities& utilities() const = 0;
};

}  // namespace ktune::gpu
