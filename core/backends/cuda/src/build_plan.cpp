#include "build_plan.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "ktune/measurement.h"

namespace ktune::cuda {

namespace {

[[noreturn]] void does_not_fit(const std::string& what) { throw TrialFailure(TrialStatus::LaunchError, what); }

std::string n(double v) { return std::to_string(static_cast<long long>(v)); }

// A qualified symbol ("ns::table") is mangled: NVRTC lowers it. A plain one keeps its name, and
// is looked up in the cubin instead, so a module built without it (#if'd out) still compiles.
bool qualified(const std::string& symbol) { return symbol.find("::") != std::string::npos; }

// Registers are allocated per warp, 8 per thread at a time (sm_50 and later): what a block of
// `threads` really holds of the register file when each thread uses `registers`.
std::uint64_t allocated_registers(std::uint64_t registers, std::uint64_t threads) {
  return (registers + 7) / 8 * 8 * ((threads + 31) / 32 * 32);
}

}  // namespace

BuildPlan plan_build(const KernelSpec& spec, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c,
                     const Variables& device) {
  BuildPlan plan;
  const auto limit = [&](const char* name) { return device.count(name) ? device.at(name) : -1.0; };
  const double max_threads = limit("max_threads_per_block"), optin = limit("smem_per_block_optin");
  for (const auto& l : launches) {
    LaunchGeometry g = spec.geometry(l, p, c, device);
    if (!g.active) continue;
    for (int i = 0; i < 3; ++i)
      if (g.grid[i] == 0 || g.block[i] == 0) does_not_fit(g.entry + ": empty grid or block for this problem");
    if (max_threads >= 0 && static_cast<double>(g.threads()) > max_threads)
      does_not_fit(g.entry + ": " + std::to_string(g.threads()) + " threads per block, the device allows " +
                   n(max_threads) + " (max_threads_per_block)");
    if (optin >= 0 && static_cast<double>(g.shared_bytes) > optin)
      does_not_fit(g.entry + ": " + std::to_string(g.shared_bytes) +
                   " bytes of dynamic shared memory, the device allows " + n(optin) +
                   " per block (smem_per_block_optin)");
    const auto options = spec.launch_compile_options(l, p, c);
    auto module =
        std::find_if(plan.modules.begin(), plan.modules.end(), [&](const auto& m) { return m.options == options; });
    if (module == plan.modules.end()) module = plan.modules.insert(plan.modules.end(), BuildPlan::Module{options, {}});
    BuildPlan::Launch launch{g, l.args, static_cast<std::size_t>(module - plan.modules.begin()), 0};
    const auto name = std::find(module->names.begin(), module->names.end(), g.entry);
    launch.name = static_cast<std::size_t>(name - module->names.begin());
    if (name == module->names.end()) module->names.push_back(g.entry);
    plan.launches.push_back(std::move(launch));
  }
  if (plan.launches.empty()) does_not_fit("no launch is active for this config");
  // The block size is known before compiling, so registers are capped where a block would
  // otherwise not get enough of them to launch at all (what __launch_bounds__ would say; one in
  // the source wins over it): the config runs, spilling if it must, and is timed like any other.
  // Without the cap, large blocks of unrolled kernels fail at launch (a tenth of the configs a
  // random search tried of Kernel Tuner's convolution on the H100).
  const double regs_per_block = limit("regs_per_block");
  for (std::size_t m = 0; m < plan.modules.size(); ++m) {
    std::uint64_t threads = 0;
    for (const auto& l : plan.launches)
      if (l.module == m) threads = std::max<std::uint64_t>(threads, l.geometry.threads());
    if (regs_per_block <= 0 || threads == 0) continue;
    const auto cap = static_cast<std::uint64_t>(regs_per_block) / allocated_registers(1, threads) * 8;
    if (cap < 255)
      plan.modules[m].options.push_back("--maxrregcount=" + std::to_string(std::max<std::uint64_t>(cap, 16)));
  }
  for (auto& m : plan.modules)
    for (const auto& [symbol, arg] : spec.constants())
      if (qualified(symbol)) m.names.push_back(symbol);
  return plan;
}

std::vector<CompiledModule> compile_plan(const Compiler& compiler, const KernelSpec& spec, const BuildPlan& plan) {
  std::vector<CompiledModule> out;
  for (const auto& m : plan.modules)
    out.push_back(compiler.compile(spec.source(), spec.source_file().filename().string(), m.options, m.names));
  return out;
}

std::vector<std::vector<ConstantFill>> check_compiled(const KernelSpec& spec, const Problem& p, const Config& c,
                                                      const BuildPlan& plan, const std::vector<CompiledModule>& modules,
                                                      const Variables& device) {
  std::vector<std::vector<ConstantFill>> fills(modules.size());
  const auto filled = spec.constants();
  for (std::size_t m = 0; m < modules.size(); ++m) {
    CubinInfo info;
    try {
      info = CubinInfo::parse(modules[m].binary);
    } catch (const std::runtime_error& e) {
      throw TrialFailure(TrialStatus::CompileError, std::string("reading the compiled module: ") + e.what());
    }
    std::map<std::string, std::string> by_lowered;  // cubin name -> spec symbol
    for (const auto& [symbol, arg] : filled) {
      std::string lowered = symbol;
      if (qualified(symbol)) {
        const auto& names = plan.modules[m].names;
        lowered = modules[m].lowered.at(
            static_cast<std::size_t>(std::find(names.begin(), names.end(), symbol) - names.begin()));
      }
      const auto it = info.constants.find(lowered);
      if (it == info.constants.end())
        throw TrialFailure(TrialStatus::CompileError,
                           "argument '" + arg + "' fills __constant__ '" + symbol +
                               "', but the kernel declares no such symbol (or never reads it) in this build");
      const SpecArgument& a = *spec.argument(arg);
      const std::uint64_t bytes = spec.arg_count(a, p, c, device) * elem_size(spec.arg_type(a, p, c));
      if (bytes > it->second.bytes)
        throw TrialFailure(TrialStatus::CompileError, "argument '" + arg + "' holds " + std::to_string(bytes) +
                                                          " bytes, but __constant__ '" + symbol + "' only " +
                                                          std::to_string(it->second.bytes) +
                                                          ": make its count match the declaration");
      by_lowered[lowered] = symbol;
      fills[m].push_back({symbol, lowered, arg, bytes});
    }
    for (const auto& [lowered, constant] : info.constants)
      if (!constant.initialized && !by_lowered.count(lowered))
        throw TrialFailure(TrialStatus::CompileError,
                           "the kernel declares __constant__ '" + lowered + "' (" + std::to_string(constant.bytes) +
                               " bytes) with no initializer, and the spec never fills it, so it would read zeros: add "
                               "\"constant\": \"" +
                               lowered +
                               "\" to the input buffer that holds its data (a symbol no kernel reads: "
                               "remove it or give it an initializer)");
    const double regs_per_block = device.count("regs_per_block") ? device.at("regs_per_block") : -1;
    const double optin = device.count("smem_per_block_optin") ? device.at("smem_per_block_optin") : -1;
    for (const auto& l : plan.launches) {
      if (l.module != m) continue;
      const std::string& lowered = modules[m].lowered.at(l.name);
      const auto f = info.functions.find(lowered);
      if (f == info.functions.end()) continue;  // the driver's own check at load time still applies
      const auto& g = l.geometry;
      if (regs_per_block > 0 && f->second.registers > 0 &&
          static_cast<double>(allocated_registers(static_cast<std::uint64_t>(f->second.registers), g.threads())) >
              regs_per_block)
        does_not_fit(g.entry + ": " + std::to_string(f->second.registers) + " registers per thread x " +
                     std::to_string(g.threads()) + " threads take " +
                     std::to_string(allocated_registers(static_cast<std::uint64_t>(f->second.registers), g.threads())) +
                     " (allocated 8 per thread, by warps), the device has " + n(regs_per_block) +
                     " per block (regs_per_block; a __launch_bounds__ in the source overrides ktune's register cap)");
      if (optin >= 0 && static_cast<double>(g.shared_bytes + f->second.static_shared) > optin)
        does_not_fit(g.entry + ": " + std::to_string(f->second.static_shared) + " bytes of static + " +
                     std::to_string(g.shared_bytes) + " dynamic shared memory, the device allows " + n(optin) +
                     " per block (smem_per_block_optin)");
    }
  }
  return fills;
}

}  // namespace ktune::cuda
