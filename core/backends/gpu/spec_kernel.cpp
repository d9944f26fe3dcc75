#include "spec_kernel.h"

#include <algorithm>

#include "ktune/error.h"
#include "ktune/measurement.h"

namespace ktune::gpu {

void SpecSession::Kernel::load(SpecSession& s) {
  DeviceApi& api = s.api();
  std::vector<Module> loaded;
  std::vector<Handle> fns;
  for (const auto& m : compiled) loaded.emplace_back(s.device(), api.load_module(m.binary));
  const auto& vars = s.vars_;
  const std::string& smem = s.spec_->shared_memory_limit();
  const double smem_limit = vars.count(smem) ? vars.at(smem) : 49152;
  for (const auto& l : plan.launches) {
    const auto& g = l.geometry;
    Handle f = api.function(loaded[l.module].get(), compiled[l.module].lowered[l.name]);
    const FunctionLimits lim = api.limits(f);
    if (lim.max_threads > 0 && g.threads() > lim.max_threads)
      throw TrialFailure(TrialStatus::LaunchError, g.entry + ": " + std::to_string(g.threads()) +
                                                       " threads per block, but with " + std::to_string(lim.registers) +
                                                       " registers per thread (and its launch bounds) at most " +
                                                       std::to_string(lim.max_threads) + " fit");
    if (static_cast<double>(g.shared_bytes + lim.static_shared) > smem_limit)
      throw TrialFailure(TrialStatus::LaunchError,
                         g.entry + ": needs " + std::to_string(g.shared_bytes) + " bytes of dynamic + " +
                             std::to_string(lim.static_shared) + " static shared memory, the device allows " +
                             std::to_string(static_cast<long long>(smem_limit)) + " per block (" + smem + ")");
    try {
      api.allow_dynamic_shared(f, g.shared_bytes);
    } catch (const ApiError& e) {
      throw TrialFailure(TrialStatus::LaunchError, g.entry + ": cannot raise dynamic shared memory to " +
                                                       std::to_string(g.shared_bytes) + " bytes: " + e.what());
    }
    fns.push_back(f);
  }
  modules = std::move(loaded);
  functions = std::move(fns);
  constants_filled = false;
}

void SpecSession::Kernel::fill_constants(SpecSession& s) {
  for (std::size_t m = 0; m < modules.size(); ++m)
    for (const auto& c : constant_fills[m]) {
      std::pair<DevicePtr, std::size_t> symbol;
      try {
        symbol = s.api().global(modules[m].get(), c.lowered);
      } catch (const ApiError& e) {
        throw TrialFailure(TrialStatus::CompileError, "argument '" + c.argument + "' fills __constant__ '" + c.symbol +
                                                          "', but the module has no such symbol: " + e.what());
      }
      if (c.bytes > symbol.second)
        throw TrialFailure(TrialStatus::CompileError, "argument '" + c.argument + "' holds " + std::to_string(c.bytes) +
                                                          " bytes, but __constant__ '" + c.symbol + "' only " +
                                                          std::to_string(symbol.second) +
                                                          ": make its count match the declaration");
      const auto& data = s.host_input(c.argument);
      s.upload(symbol.first, data.data(), std::min(symbol.second, data.size()));
    }
  constants_filled = true;
}

void SpecSession::Kernel::ensure_loaded(SpecSession& s) {
  if (modules.empty() || !modules.front().alive()) load(s);
  if (!constants_filled) fill_constants(s);
  for (const auto& [name, bytes] : workspace_bytes) s.ensure_workspace(name, bytes);
}

const void* SpecSession::Kernel::tensor_map(SpecSession& s, const std::string& name, TensorMap& t, int copy) {
  const DevicePtr ptr = s.buffer(t.tensor, copy);
  auto& [encoded_ptr, map] = t.encoded[copy];
  if (encoded_ptr == ptr) return map.data();
  try {
    s.api().encode_tensor_map(t.desc, ptr, map.data());
  } catch (const ApiError& e) {
    throw TrialFailure(TrialStatus::LaunchError,
                       "tensor map " + name + " over " + t.tensor + ": the driver rejects it (" + e.what() +
                           "); rows must be 16-byte aligned, boxes at most 256 elements a side and, when swizzled, "
                           "the inner box no wider than the swizzle span");
  }
  encoded_ptr = ptr;
  return map.data();
}

void SpecSession::Kernel::enqueue(SpecSession& s, int copy) {
  DeviceApi& api = s.api();
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    const auto& args = plan.launches[i].args;
    std::vector<DevicePtr> ptrs(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t a = 0; a < args.size(); ++a) {
      const std::string& name = args[a];
      if (auto it = scalars.find(name); it != scalars.end()) {
        params[a] = &it->second;
      } else if (auto tm = tensor_maps.find(name); tm != tensor_maps.end()) {
        params[a] = const_cast<void*>(tensor_map(s, name, tm->second, copy));
      } else {
        ptrs[a] = s.buffer(name, copy);
        params[a] = &ptrs[a];
      }
    }
    api.launch(functions[i], plan.launches[i].geometry, s.stream(), params.data());
  }
}

void SpecSession::LibraryGemm::enqueue(SpecSession& s, int copy) {
  GemmCall c = call;
  c.a = s.buffer(a, copy);
  if (!b.empty()) c.b = s.buffer(b, copy);
  s.gemm().enqueue(c);
}

// The library's plan is made here, on the measuring thread before a graph is captured.
void SpecSession::LibraryBlockScaled::ensure_loaded(SpecSession& s) { s.gemm().plan(with_buffers(s, 0)); }

void SpecSession::LibraryBlockScaled::enqueue(SpecSession& s, int copy) { s.gemm().enqueue(with_buffers(s, copy)); }

BlockScaledCall SpecSession::LibraryBlockScaled::with_buffers(SpecSession& s, int copy) const {
  BlockScaledCall c = call;
  c.a = s.buffer(a, copy);
  c.b = s.buffer(b, copy);
  c.a_scale = s.block_scaled_a_scale(a_scale, c.m, c.k / 128);
  c.b_scale = s.buffer(b_scale, copy);
  c.y = s.buffer(y, copy);
  return c;
}

namespace {

// A scalar argument's value as the kernel's parameter slot holds it.
std::uint64_t scalar_slot(const SpecArgument& a, ElemType type, double v) {
  switch (type) {
    case ElemType::I32:
    case ElemType::U32:
    case ElemType::F32:
    case ElemType::I64:
    case ElemType::F64: {
      std::uint64_t slot = 0;
      store_elem(&slot, type, 0, v);
      return slot;
    }
    default:
      throw InputError("scalar " + a.name + ": use i32, u32, f32, i64 or f64");
  }
}

}  // namespace

std::unique_ptr<Launchable> SpecSession::build(const std::vector<SpecLaunch>& launches, const Config& requested) {
  device_->check_usable();
  auto k = std::make_unique<Kernel>();
  const Config config = spec_->complete(requested);
  k->config_ = config;
  try {
    k->plan = plan_build(*spec_, launches, problem_, config, vars_, *toolchain_);
    const Variables vars = spec_->variables(problem_, config, vars_);
    for (const auto& a : spec_->arguments()) {
      const ElemType type = spec_->arg_type(a, problem_, config);
      if (a.kind == SpecArgument::Kind::Scalar) {
        k->scalars[a.name] = scalar_slot(a, type, Expression(a.value).eval(vars));
      } else if (a.kind == SpecArgument::Kind::TensorMap) {
        auto& t = k->tensor_maps[a.name];
        t.tensor = a.tensor;
        t.desc.type = type;
        t.desc.swizzle = a.swizzle;
        for (const auto& e : a.dims) t.desc.dims.push_back(static_cast<std::uint64_t>(Expression(e).eval(vars)));
        for (const auto& e : a.box) t.desc.box.push_back(static_cast<std::uint32_t>(Expression(e).eval(vars)));
      } else if (a.role == ArgRole::Workspace) {
        k->workspace_bytes.emplace_back(a.name, spec_->arg_count(a, problem_, config, vars_) * elem_size(type));
      } else if (const auto need = spec_->arg_count(a, problem_, config, vars_); need > buffer_count(a)) {
        throw TrialFailure(TrialStatus::LaunchError,
                           "buffer " + a.name + " needs " + std::to_string(need) +
                               " elements for this config, but holds " + std::to_string(buffer_count(a)) +
                               ", its size for the spec's default space: add the config's values to the spec's space");
      }
    }
  } catch (const InputError& e) {
    throw TrialFailure(TrialStatus::LaunchError, std::string("cannot size this config: ") + e.what());
  }
  k->compiled = compile_plan(*toolchain_, *spec_, k->plan);
  k->compile_time_s = 0;
  for (const auto& m : k->compiled) k->compile_time_s += m.seconds;
  k->constant_fills = check_compiled(*spec_, problem_, config, k->plan, k->compiled, vars_, *toolchain_);
  std::shared_lock lock(device_->mutex);
  try {
    device_->make_current();
    k->load(*this);
  } catch (const ApiError& e) {
    // A sticky error here is an earlier kernel's fault that poisoned the context, not this
    // config's: `crashed`, which a worker answers by exiting (it is prepared again elsewhere).
    throw TrialFailure(e.sticky() ? TrialStatus::Crashed : TrialStatus::LaunchError,
                       std::string("loading the module: ") + e.what());
  }
  return k;
}

}  // namespace ktune::gpu
