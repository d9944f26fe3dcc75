#pragma once
// Offline compilation of HIP sources to code objects with hipcc --genco, one process per
// config, with the disk cache every GPU backend shares (source, options, target, compiler
// version). A child process, not hiprtc in ours: Debian's hiprtc 5.2 aborts the whole process
// (munmap_chunk: invalid pointer) for targets its device libraries lack (gfx940, gfx1100),
// where hipcc just fails. Thread-safe: the tuner's compile pool runs several at once.
#include <filesystem>
#include <string>
#include <vector>

#include "ktune/compile_cache.h"
#include "toolchain.h"

namespace ktune::hip {

class Compiler final : public gpu::Toolchain {
 public:
  // `target` is a gfx target ("gfx90a", "gfx1100"); an empty `cache_dir` disables the cache.
  Compiler(std::string target, std::filesystem::path cache_dir);

  // Entries are extern "C" names (hipcc leaves no name table for templates). The source's headers
  // are written beside it, where hipcc's quoted includes look. Throws TrialFailure(CompileError)
  // with hipcc's output when the source does not compile.
  CompiledModule compile(const KernelSource& source, const std::vector<std::string>& options,
                         const std::vector<std::string>& entries) const override;
  // --gpu-max-threads-per-block at the module's largest block: the compiler then gives each
  // thread the registers a block of that size can have, not those of a 1024-thread block.
  std::vector<std::string> register_cap(std::uint64_t threads, const Variables& device) const override;
  // What a code object says is read at load time (hipModuleGetGlobal, hipFuncGetAttribute).
  gpu::ModuleInfo inspect(const std::string&) const override { return {}; }
  // ktune_compare and ktune_reference_gemm(const void* A, const void* B, float* C, int M, int N,
  // int K, int b_nk, int type); no clock probe.
  const Utilities& utilities() const override;

  const std::string& target() const { return target_; }

  // hipcc's path: $KTUNE_HIPCC, else the one found at configure time.
  static std::string hipcc();
  // "HIP 5.2.21153-0, clang 15.0.6" from hipcc --version (read once); part of every cache key.
  static std::string version();

 private:
  std::string target_;
  std::filesystem::path cache_dir_;
};

// $KTUNE_HIP_CACHE, else $XDG_CACHE_HOME/ktune/hip, else ~/.cache/ktune/hip.
std::filesystem::path default_cache_dir();

}  // namespace ktune::hip
