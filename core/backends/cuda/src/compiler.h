#pragma once
// NVRTC compilation to cubin for one architecture, with a disk cache keyed by the source, the
// options, the architecture and the NVRTC version. Thread-safe: the tuner compiles configs on
// its pool in parallel, and each call builds its own NVRTC program.
#include <filesystem>
#include <string>
#include <vector>

#include "ktune/compile_cache.h"
#include "toolchain.h"

namespace ktune::cuda {

class Compiler final : public gpu::Toolchain {
 public:
  // `arch` is "sm_90"; an empty `cache_dir` disables the cache.
  Compiler(std::string arch, std::filesystem::path cache_dir);

  // `entries`: kernels ("matmul_kernel", "gemm<float, 4>", extern "C" names) and __constant__
  // symbols ("d_filter", "ns::table"), as C++ names; `lowered` gives their names in the cubin,
  // in the same order. The source's headers go to NVRTC as named headers. Throws
  // TrialFailure(CompileError) with the NVRTC log when the source does not compile or a name is
  // not in it.
  CompiledModule compile(const KernelSource& source, const std::vector<std::string>& options,
                         const std::vector<std::string>& entries) const override;
  // --maxrregcount at what a block of `threads` can hold of the device's regs_per_block, where
  // that is under 255.
  std::vector<std::string> register_cap(std::uint64_t threads, const Variables& device) const override;
  gpu::ModuleInfo inspect(const std::string& binary) const override;
  const Utilities& utilities() const override;

  const std::string& arch() const { return arch_; }
  const std::filesystem::path& cache_dir() const { return cache_dir_; }

  // "13.0"
  static std::string nvrtc_version();
  // compile_cache_key (compile_cache.h), the scheme every GPU backend shares.
  static std::string cache_key(const KernelSource& source, const std::vector<std::string>& options,
                               const std::vector<std::string>& entries, const std::string& arch,
                               const std::string& nvrtc_version);

 private:
  std::string arch_;
  std::filesystem::path cache_dir_;
};

// $KTUNE_CUDA_CACHE, else $XDG_CACHE_HOME/ktune/cuda, else ~/.cache/ktune/cuda.
std::filesystem::path default_cache_dir();

}  // namespace ktune::cuda
