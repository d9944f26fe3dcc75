#pragma once
// What the CUDA spec tests share without a GPU: a compiler whose cache is a folder of this run's
// own (shapes share builds, nothing stays behind), the H100's variables for a problem, and whether
// a config plans, compiles and fits the H100.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "build_plan.h"
#include "compiler.h"
#include "h100.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"

namespace ktune_test {

struct ScratchCompiler {
  std::filesystem::path dir;
  ktune::cuda::Compiler c;
  ScratchCompiler(const std::string& tag, const std::string& arch)
      : dir(std::filesystem::temp_directory_path() / (tag + std::to_string(getpid()))), c(arch, dir) {}
  ~ScratchCompiler() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// A device's properties and the problem's variables, as constraints and launches read them.
inline ktune::Variables context_on(const ktune::Variables& device, const ktune::KernelSpec& s,
                                   const ktune::Problem& p) {
  ktune::Variables v = device;
  for (const auto& [k, x] : s.family().variables(p)) v[k] = x;
  return v;
}
inline ktune::Variables h100_context(const ktune::KernelSpec& s, const ktune::Problem& p) {
  return context_on(h100(), s, p);
}

// "" when config `c` (with `launches`) plans, compiles and fits a device of variables `device`
// (h100(), plus what generated inputs publish where a spec's grids read them); else why not.
inline std::string build_on(const ktune::cuda::Compiler& compiler, const ktune::KernelSpec& s,
                            const std::vector<ktune::SpecLaunch>& launches, const ktune::Problem& p,
                            const ktune::Config& c, const ktune::Variables& device) {
  try {
    const auto plan = ktune::gpu::plan_build(s, launches, p, c, device, compiler);
    auto modules = ktune::gpu::compile_plan(compiler, s, plan);
    ktune::gpu::check_compiled(s, p, c, plan, modules, device, compiler);
  } catch (const ktune::TrialFailure& e) {
    return e.what();
  }
  return "";
}

}  // namespace ktune_test
