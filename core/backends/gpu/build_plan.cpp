#include "build_plan.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>

#include "ktune/measurement.h"

namespace ktune::gpu {

namespace {

[[noreturn]] void does_not_fit(const std::string& what) { throw TrialFailure(TrialStatus::LaunchError, what); }

std::string n(double v) { return std::to_string(static_cast<long long>(v)); }

// A qualified symbol ("ns::table") is mangled: the compiler lowers it. A plain one keeps its
// name, and is looked up in the module instead, so a module built without it (#if'd out) still
// compiles.
bool qualified(const std::string& symbol) { return symbol.find("::") != std::string::npos; }

double limit(const Variables& device, const std::string& name) {
  const auto it = device.find(name);
  return it == device.end() ? -1.0 : it->second;
}

std::string dims(const std::array<std::uint64_t, 3>& d) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " + std::to_string(d[2]);
}

// What the derived constraints say of a cluster, again for configs they never saw (a reference
// kernel's launch, a grid reading generated data), before the driver says it less clearly.
void check_cluster(const LaunchGeometry& g, const Variables& device) {
  if (!g.clustered()) return;
  const double cc_major = limit(device, "cc_major");
  if (cc_major >= 0 && cc_major < 9)
    does_not_fit(g.entry + ": a thread-block cluster of " + dims(g.cluster) +
                 " needs a device of compute capability 9.0 or newer, this one is " + n(cc_major) + ".x (cc_major)");
  if (g.cluster_blocks() > 8)
    does_not_fit(g.entry + ": a cluster of " + std::to_string(g.cluster_blocks()) +
                 " blocks, more than the portable 8 (ktune does not ask for non-portable cluster sizes)");
  for (int i = 0; i < 3; ++i)
    if (g.grid[i] % g.cluster[i] != 0)
      does_not_fit(g.entry + ": the grid " + dims(g.grid) + " is not divisible by the cluster " + dims(g.cluster));
}

// The device's limits on one active launch, before compiling.
void check_fits(const LaunchGeometry& g, const KernelSpec& spec, const Variables& device) {
  for (int i = 0; i < 3; ++i)
    if (g.grid[i] == 0 || g.block[i] == 0 || g.cluster[i] == 0)
      does_not_fit(g.entry + ": empty grid, block or cluster for this problem");
  const double max_threads = limit(device, "max_threads_per_block");
  if (max_threads >= 0 && static_cast<double>(g.threads()) > max_threads)
    does_not_fit(g.entry + ": " + std::to_string(g.threads()) + " threads per block, the device allows " +
                 n(max_threads) + " (max_threads_per_block)");
  const std::string& smem = spec.shared_memory_limit();
  const double smem_limit = limit(device, smem);
  if (smem_limit >= 0 && static_cast<double>(g.shared_bytes) > smem_limit)
    does_not_fit(g.entry + ": " + std::to_string(g.shared_bytes) +
                 " bytes of dynamic shared memory, the device allows " + n(smem_limit) + " per block (" + smem + ")");
  check_cluster(g, device);
}

}  // namespace

BuildPlan plan_build(const KernelSpec& spec, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c,
                     const Variables& device, const Toolchain& toolchain) {
  BuildPlan plan;
  for (const auto& l : launches) {
    LaunchGeometry g = spec.geometry(l, p, c, device);
    if (!g.active) continue;
    check_fits(g, spec, device);
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
  for (std::size_t m = 0; m < plan.modules.size(); ++m) {
    std::uint64_t threads = 0;
    for (const auto& l : plan.launches)
      if (l.module == m) threads = std::max<std::uint64_t>(threads, l.geometry.threads());
    const auto cap = toolchain.register_cap(threads, device);
    plan.modules[m].options.insert(plan.modules[m].options.end(), cap.begin(), cap.end());
  }
  for (auto& m : plan.modules)
    for (const auto& [symbol, arg] : spec.constants())
      if (qualified(symbol)) m.names.push_back(symbol);
  return plan;
}

std::vector<CompiledModule> compile_plan(const Toolchain& toolchain, const KernelSpec& spec, const BuildPlan& plan) {
  std::vector<CompiledModule> out;
  for (const auto& m : plan.modules) out.push_back(toolchain.compile(spec.program(), m.options, m.names));
  return out;
}

namespace {

// The spec's constants in module `m`, checked against its declarations where it lists them.
std::vector<ConstantFill> constant_fills(const KernelSpec& spec, const Problem& p, const Config& c,
                                         const BuildPlan::Module& planned, const CompiledModule& module,
                                         const ModuleInfo& info, const Variables& device) {
  std::vector<ConstantFill> fills;
  std::map<std::string, std::string> by_lowered;  // module name -> spec symbol
  for (const auto& [symbol, arg] : spec.constants()) {
    std::string lowered = symbol;
    if (qualified(symbol)) {
      const auto& names = planned.names;
      lowered =
          module.lowered.at(static_cast<std::size_t>(std::find(names.begin(), names.end(), symbol) - names.begin()));
    }
    const SpecArgument& a = *spec.argument(arg);
    const std::uint64_t bytes = spec.arg_count(a, p, c, device) * elem_size(spec.arg_type(a, p, c));
    by_lowered[lowered] = symbol;
    fills.push_back({symbol, lowered, arg, bytes});
    if (!info.knows_constants) continue;
    const auto it = info.constants.find(lowered);
    if (it == info.constants.end())
      throw TrialFailure(TrialStatus::CompileError,
                         "argument '" + arg + "' fills __constant__ '" + symbol +
                             "', but the kernel declares no such symbol (or never reads it) in this build");
    if (bytes > it->second.bytes)
      throw TrialFailure(TrialStatus::CompileError, "argument '" + arg + "' holds " + std::to_string(bytes) +
                                                        " bytes, but __constant__ '" + symbol + "' only " +
                                                        std::to_string(it->second.bytes) +
                                                        ": make its count match the declaration");
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
  return fills;
}

}  // namespace

std::vector<std::vector<ConstantFill>> check_compiled(const KernelSpec& spec, const Problem& p, const Config& c,
                                                      const BuildPlan& plan, const std::vector<CompiledModule>& modules,
                                                      const Variables& device, const Toolchain& toolchain) {
  std::vector<std::vector<ConstantFill>> fills;
  const double regs_per_block = limit(device, "regs_per_block");
  const std::string& smem = spec.shared_memory_limit();
  const double smem_limit = limit(device, smem);
  for (std::size_t m = 0; m < modules.size(); ++m) {
    ModuleInfo info;
    try {
      info = toolchain.inspect(modules[m].binary);
    } catch (const std::runtime_error& e) {
      throw TrialFailure(TrialStatus::CompileError, std::string("reading the compiled module: ") + e.what());
    }
    fills.push_back(constant_fills(spec, p, c, plan.modules[m], modules[m], info, device));
    for (const auto& l : plan.launches) {
      if (l.module != m) continue;
      const auto f = info.functions.find(modules[m].lowered.at(l.name));
      if (f == info.functions.end()) continue;  // the driver's own check at load time still applies
      const auto& g = l.geometry;
      const std::uint64_t held =
          f->second.registers > 0
              ? info.registers.allocated(static_cast<std::uint64_t>(f->second.registers), g.threads())
              : 0;
      if (regs_per_block > 0 && static_cast<double>(held) > regs_per_block)
        does_not_fit(g.entry + ": " + std::to_string(f->second.registers) + " registers per thread x " +
                     std::to_string(g.threads()) + " threads take " + std::to_string(held) + " (allocated " +
                     std::to_string(info.registers.granule) + " per thread, by " +
                     std::to_string(info.registers.group) + " threads), the device has " + n(regs_per_block) +
                     " per block (regs_per_block; a __launch_bounds__ in the source overrides ktune's register cap)");
      if (smem_limit >= 0 && static_cast<double>(g.shared_bytes + f->second.static_shared) > smem_limit)
        does_not_fit(g.entry + ": " + std::to_string(f->second.static_shared) + " bytes of static + " +
                     std::to_string(g.shared_bytes) + " dynamic shared memory, the device allows " + n(smem_limit) +
                     " per block (" + smem + ")");
    }
  }
  return fills;
}

}  // namespace ktune::gpu
