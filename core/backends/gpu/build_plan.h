#pragma once
// How one config of a spec becomes modules, before any driver call: which launches are active,
// their geometry, which builds they need (a launch with defines of its own is built apart), and
// the checks a config must pass against the device's limits and the spec's __constant__ symbols,
// from the launch geometry and what the compiled modules say. All of it runs without a GPU, so
// the tests check it where only the compiler is installed; SpecKernel::load then loads what it
// planned.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ktune/kernel_spec.h"
#include "ktune/problem.h"
#include "toolchain.h"

namespace ktune::gpu {

struct BuildPlan {
  struct Module {
    std::vector<std::string> options;
    std::vector<std::string> names;  // C++ names for the compiler: the launches' entries, then qualified constants
  };
  struct Launch {
    LaunchGeometry geometry;
    std::vector<std::string> args;
    std::size_t module = 0;
    std::size_t name = 0;  // index into the module's names (and its CompiledModule::lowered)
  };
  std::vector<Module> modules;
  std::vector<Launch> launches;  // active ones, in the spec's order
};

// The active launches of `launches` for config `c`. Throws TrialFailure(LaunchError) when none is
// active, a grid, block or cluster is empty, a launch exceeds the device's max_threads_per_block
// or the spec's shared_memory_limit (when `device` has them), or a cluster (more than one block)
// meets a device below cc_major 9, has more than 8 blocks or does not divide the grid; InputError
// from the spec's expressions. Each module gets the toolchain's register cap for its largest block.
BuildPlan plan_build(const KernelSpec& spec, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c,
                     const Variables& device, const Toolchain& toolchain);

// Compiles each module of the plan; TrialFailure(CompileError) as Toolchain::compile.
std::vector<CompiledModule> compile_plan(const Toolchain& toolchain, const KernelSpec& spec, const BuildPlan& plan);

// A __constant__ symbol to fill in one module: its name in the binary and the argument whose data goes there.
struct ConstantFill {
  std::string symbol;   // as the spec names it
  std::string lowered;  // in the binary
  std::string argument;
  std::uint64_t bytes = 0;  // the argument's data
};

// Checks the compiled modules (as `toolchain` inspects them) against the spec and the device and
// returns, per module, the constants to fill after loading it. TrialFailure(CompileError) when
// the kernel reads a __constant__ symbol without an initializer that the spec never fills, or
// the spec fills one the module lacks or with more bytes than it holds (where the module lists
// its constants; SpecKernel checks the rest when it fills them); TrialFailure(LaunchError) when
// registers per thread x threads, as the vendor allocates them (ModuleInfo::registers), exceed regs_per_block, or
// static + dynamic shared memory exceed the shared memory limit (when `device` has them).
std::vector<std::vector<ConstantFill>> check_compiled(const KernelSpec& spec, const Problem& p, const Config& c,
                                                      const BuildPlan& plan, const std::vector<CompiledModule>& modules,
                                                      const Variables& device, const Toolchain& toolchain);

}  // namespace ktune::gpu
