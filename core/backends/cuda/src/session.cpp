#include "session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ktune/error.h"
#include "ktune/host_data.h"
#include "launchables.h"

// The session's setting-up half: seeded inputs, device buffers, the reference output, cuBLAS and
// compiled configs (session_measure.cpp validates and times them).
namespace ktune::cuda {

Buffer alloc(const Driver& d, std::size_t bytes, const std::string& what) {
  Buffer b;
  b.bytes = std::max<std::size_t>(bytes, 16);
  const CUresult r = d.cuMemAlloc(&b.ptr, b.bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw RunError("not enough GPU memory for " + what + " (" + std::to_string(bytes >> 20) +
                   " MiB): use a smaller problem");
  check(r, "cuMemAlloc " + what);
  return b;
}

Session::Session(std::shared_ptr<DeviceContext> dev, const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec,
                 Problem problem, std::uint64_t seed, std::shared_ptr<const Compiler> compiler)
    : dev_(std::move(dev)),
      info_(info),
      device_vars_(info.variables()),
      spec_(std::move(spec)),
      problem_(std::move(problem)),
      seed_(seed),
      compiler_(std::move(compiler)),
      sizing_config_(spec_->family().default_config) {
  dev_->make_current();
  create_stream_and_events();
  // Sizes first, once: compile threads read them while the measuring thread runs.
  for (const auto& a : spec_->arguments())
    if (a.is_buffer() && a.role != ArgRole::Workspace)
      buffer_counts_[a.name] = spec_->max_arg_count(a, problem_, device_vars_);
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer() || a.role != ArgRole::Input) continue;
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::uint64_t count = buffer_count(a);
    host_inputs_[a.name] = {t, generate(t, count, a.init, seed_ ^ fnv1a64(problem_.key() + "/" + a.name))};
  }
  allocate_buffers();
  compute_reference();
}

Session::~Session() {
  if (!dev_->lost.empty()) return;  // the context and every handle are gone
  d().cuCtxSetCurrent(dev_->ctx);
  if (cublas_ && cublas_generation_ == dev_->generation) cublasDestroy(cublas_);
  if (utility_module_ && utility_generation_ == dev_->generation) d().cuModuleUnload(utility_module_);
  release_buffers();
  destroy_stream_and_events();
}

void Session::create_stream_and_events() {
  check(d().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(d().cuEventCreate(&ev_start_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(d().cuEventCreate(&ev_stop_, CU_EVENT_DEFAULT), "cuEventCreate");
}

void Session::destroy_stream_and_events() {
  for (auto& [a, b] : launch_events_) {
    d().cuEventDestroy(a);
    d().cuEventDestroy(b);
  }
  launch_events_.clear();
  if (ev_start_) d().cuEventDestroy(ev_start_);
  if (ev_stop_) d().cuEventDestroy(ev_stop_);
  if (stream_) d().cuStreamDestroy(stream_);
  ev_start_ = ev_stop_ = nullptr;
  stream_ = nullptr;
}

void Session::allocate_buffers() {
  ++epoch_;
  copies_.assign(1, {});
  auto& main = copies_[0];
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer() || a.role == ArgRole::Workspace) continue;
    // Sized for the largest config of the default space: outputs of partial results grow with it.
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::size_t bytes = buffer_count(a) * elem_size(t);
    main[a.name] = alloc(d(), bytes, "buffer " + a.name);
    if (auto it = host_inputs_.find(a.name); it != host_inputs_.end())
      upload(main[a.name].ptr, it->second.data.data(), it->second.data.size(), "upload " + a.name);
  }
}

void Session::release_buffers() {
  for (auto& copy : copies_)
    for (auto& [name, b] : copy) d().cuMemFree(b.ptr);
  copies_.clear();
  for (auto& [name, b] : workspaces_) d().cuMemFree(b.ptr);
  workspaces_.clear();
  for (Buffer* b : {&flush_, &ref_b_, &ref_dev_, &compare_out_, &baseline_c_, &cublas_ws_})
    if (b->ptr) d().cuMemFree(b->ptr), *b = {};
}

std::uint64_t Session::buffer_count(const SpecArgument& a) const { return buffer_counts_.at(a.name); }

CUdeviceptr Session::buffer(const std::string& name, int copy) const {
  if (auto it = workspaces_.find(name); it != workspaces_.end()) return it->second.ptr;
  if (copy > 0 && copy < static_cast<int>(copies_.size()))
    if (auto it = copies_[copy].find(name); it != copies_[copy].end()) return it->second.ptr;
  if (auto it = copies_[0].find(name); it != copies_[0].end()) return it->second.ptr;
  throw InputError("argument " + name + " of " + spec_->family().name + " has no buffer (workspace not sized?)");
}

void Session::ensure_workspace(const std::string& name, std::size_t bytes) {
  auto& b = workspaces_[name];
  if (b.bytes >= bytes && b.ptr) return;
  if (b.ptr) d().cuMemFree(b.ptr);
  ++epoch_;
  b = alloc(d(), bytes, "workspace " + name);
  check(d().cuMemsetD8Async(b.ptr, 0, b.bytes, stream_), "clear workspace " + name);
}

void Session::upload(CUdeviceptr dst, const void* src, std::size_t bytes, const std::string& what) {
  check(d().cuMemcpyHtoDAsync(dst, src, bytes, stream_), what);
  check(d().cuStreamSynchronize(stream_), what);  // `src` may go away once this returns
}

void Session::zero_workspaces() {
  for (const auto& a : spec_->arguments())
    if (a.role == ArgRole::Workspace && a.init.kind == ArgInit::Kind::Zero)
      if (auto it = workspaces_.find(a.name); it != workspaces_.end())
        check(d().cuMemsetD8Async(it->second.ptr, 0, it->second.bytes, stream_), "clear workspace " + a.name);
}

int Session::copies_for_rotation() const {
  std::size_t bytes = 0;
  for (const auto& [name, h] : host_inputs_) bytes += h.data.size();
  return rotation_copies(bytes, info_.property("l2_bytes", 64.0 * 1024 * 1024));
}

void Session::ensure_copies(int copies) {
  while (static_cast<int>(copies_.size()) < copies) {
    std::map<std::string, Buffer> copy;
    for (const auto& [name, h] : host_inputs_) {
      copy[name] = alloc(d(), h.data.size(), "rotating copy of " + name);
      upload(copy[name].ptr, h.data.data(), h.data.size(), "upload copy of " + name);
    }
    copies_.push_back(std::move(copy));
    ++epoch_;
  }
}

cublasHandle_t Session::cublas() {
  if (cublas_ && cublas_generation_ == dev_->generation) return cublas_;
  cublas_ = nullptr;
  check_cublas(cublasCreate(&cublas_), "cublasCreate");
  cublas_generation_ = dev_->generation;
  // A fixed workspace keeps cuBLAS from allocating while a graph is being captured.
  if (!cublas_ws_.ptr) cublas_ws_ = alloc(d(), 32u << 20, "cuBLAS workspace");
  check_cublas(cublasSetWorkspace(cublas_, reinterpret_cast<void*>(cublas_ws_.ptr), cublas_ws_.bytes),
               "cublasSetWorkspace");
  check_cublas(cublasSetStream(cublas_, stream_), "cublasSetStream");
  return cublas_;
}

void Session::compute_reference() {
  compute_elementwise_reference();
  if (reference_.empty() || spec_->check().reduce == SpecCheck::Reduce::None) return;
  // The reduced check compares one number: the reference's, over its own config's count.
  const auto& ref = spec_->reference();
  const Config& config = ref.kind == "config" ? ref.config : sizing_config_;
  reference_ = {spec_->reduced(reference_.data(), ElemType::F64, reference_.size(), problem_, config, device_vars_)};
}

void Session::fill_output(const SpecArgument& out) {
  const Buffer& b = copies_[0].at(out.name);
  // Poison (NaN for floats): an element the kernel never writes cannot pass.
  const unsigned char byte = out.init.kind == ArgInit::Kind::Zero ? 0 : 0xff;
  check(d().cuMemsetD8Async(b.ptr, byte, b.bytes, stream_), (byte ? "poison " : "clear ") + out.name);
}

void Session::compute_elementwise_reference() {
  const auto& ref = spec_->reference();
  if (ref.kind == "none") return;
  if (ref.kind == "config" || ref.kind == "kernel") {
    // A trusted config of the family, or a trusted kernel of the same source with its own launch.
    const bool kernel = ref.kind == "kernel";
    const Config& config = kernel ? sizing_config_ : ref.config;
    const SpecArgument& out = kernel ? *spec_->argument(ref.output) : spec_->output();
    const std::string what = kernel ? "reference kernel " + ref.launch.entry : "reference config " + ref.config.key();
    std::unique_ptr<SpecKernel> k;
    try {
      k = build(kernel ? std::vector<SpecLaunch>{ref.launch} : spec_->launches(), config);
    } catch (const TrialFailure& e) {
      throw RunError(spec_->family().source + ": the " + what + " cannot run: " + e.what());
    }
    const ElemType type = spec_->arg_type(out, problem_, config);
    const std::size_t count = spec_->arg_count(out, problem_, config, device_vars_);
    k->ensure_loaded(*this);
    zero_workspaces();
    fill_output(out);
    k->enqueue(*this, 0);
    check(d().cuStreamSynchronize(stream_), what);
    std::vector<unsigned char> host(count * elem_size(type));
    check(d().cuMemcpyDtoH(host.data(), buffer(out.name, 0), host.size()), "download reference");
    reference_.resize(count);
    for (std::size_t i = 0; i < count; ++i) reference_[i] = load_elem(host.data(), type, i);
    return;
  }
  const SpecArgument& out = spec_->output();
  const std::size_t out_count = spec_->arg_count(out, problem_, sizing_config_, device_vars_);
  // cublas_gemm: f32 output, so the reference carries no rounding of its own.
  auto f = ref.fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, device_vars_);
  const int m = static_cast<int>(Expression(f["m"]).eval(vars));
  const int n = static_cast<int>(Expression(f["n"]).eval(vars));
  const int k = static_cast<int>(Expression(f["k"]).eval(vars));
  if (static_cast<std::size_t>(m) * n != out_count)
    throw InputError(spec_->family().source + ": reference m*n (" + std::to_string(m) + "*" + std::to_string(n) +
                     ") differs from the output's element count " + std::to_string(out_count));
  const auto baseline = make_cublas();
  Buffer raw = alloc(d(), static_cast<std::size_t>(m) * n * 4, "reference output");
  const float alpha = 1.f, beta = 0.f;
  const CUdeviceptr bp = baseline->b.empty() ? baseline->converted_b : buffer(baseline->b, 0);
  check_cublas(cublasGemmEx(cublas(), baseline->op_b, CUBLAS_OP_N, n, m, k, &alpha, reinterpret_cast<const void*>(bp),
                            baseline->type_b, baseline->ldb, reinterpret_cast<const void*>(buffer(baseline->a, 0)),
                            baseline->type_a, k, &beta, reinterpret_cast<void*>(raw.ptr), CUDA_R_32F, n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (reference)");
  check(d().cuStreamSynchronize(stream_), "reference gemm");
  std::vector<float> host(static_cast<std::size_t>(m) * n);
  const CUresult r = d().cuMemcpyDtoH(host.data(), raw.ptr, host.size() * 4);
  d().cuMemFree(raw.ptr);  // compare_on_device uploads the final (scaled) reference
  check(r, "download reference");
  reference_.assign(host.begin(), host.end());
  if (auto it = f.find("b_scale"); it != f.end()) {
    const auto& scale = host_inputs_.at(it->second);
    for (std::size_t row = 0; row < static_cast<std::size_t>(m); ++row)
      for (std::size_t col = 0; col < static_cast<std::size_t>(n); ++col)
        reference_[row * n + col] *= load_elem(scale.data.data(), scale.type, col);
  }
}

std::unique_ptr<PreparedKernel> Session::prepare_baseline() {
  if (spec_->reference().kind != "cublas_gemm") return nullptr;
  return make_cublas();
}

std::unique_ptr<CublasKernel> Session::make_cublas() {
  auto f = spec_->reference().fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, device_vars_);
  auto k = std::make_unique<CublasKernel>();
  k->dev = dev_;
  k->m = static_cast<int>(Expression(f["m"]).eval(vars));
  k->n = static_cast<int>(Expression(f["n"]).eval(vars));
  k->k = static_cast<int>(Expression(f["k"]).eval(vars));
  k->a = f["a"];
  const auto& a_in = host_inputs_.at(k->a);
  k->type_a = cuda_type(a_in.type, "reference.a");
  const auto& b_in = host_inputs_.at(f["b"]);
  const bool nk = f.count("b_layout") && f["b_layout"] == "nk";
  k->op_b = nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  k->ldb = nk ? k->k : k->n;
  if (b_in.type == a_in.type) {
    k->b = f["b"];
    k->type_b = k->type_a;
  } else {
    // Integer weights (w8a16): cuBLAS multiplies them converted to A's type, which is exact for
    // 8-bit values; the per-channel scale is applied to the reference on the host.
    if (!ref_b_.ptr) {
      const std::size_t count = b_in.data.size() / elem_size(b_in.type);
      std::vector<unsigned char> conv(count * elem_size(a_in.type));
      for (std::size_t i = 0; i < count; ++i)
        store_elem(conv.data(), a_in.type, i, load_elem(b_in.data.data(), b_in.type, i));
      ref_b_ = alloc(d(), conv.size(), "converted reference B");
      upload(ref_b_.ptr, conv.data(), conv.size(), "upload converted B");
    }
    k->converted_b = ref_b_.ptr;
    k->type_b = k->type_a;
  }
  if (!baseline_c_.ptr)
    baseline_c_ = alloc(d(), static_cast<std::size_t>(k->m) * k->n * elem_size(a_in.type), "baseline output");
  k->c = baseline_c_.ptr;
  return k;
}

std::string Session::baseline_name() const { return spec_->reference().kind == "cublas_gemm" ? "cuBLAS" : ""; }

std::unique_ptr<PreparedKernel> Session::prepare(const Config& config) { return build(spec_->launches(), config); }

std::unique_ptr<SpecKernel> Session::build(const std::vector<SpecLaunch>& launches, const Config& config) {
  dev_->check_usable();
  auto k = std::make_unique<SpecKernel>();
  k->dev = dev_;
  k->config = config;
  try {
    k->plan = plan_build(*spec_, launches, problem_, config, device_vars_);
    const Variables vars = spec_->variables(problem_, config, device_vars_);
    for (const auto& a : spec_->arguments()) {
      if (a.is_buffer()) {
        if (a.role == ArgRole::Workspace)
          k->workspace_bytes.emplace_back(a.name, spec_->arg_count(a, problem_, config, device_vars_) *
                                                      elem_size(spec_->arg_type(a, problem_, config)));
        else if (const auto need = spec_->arg_count(a, problem_, config, device_vars_); need > buffer_count(a))
          throw TrialFailure(
              TrialStatus::LaunchError,
              "buffer " + a.name + " needs " + std::to_string(need) + " elements for this config, but holds " +
                  std::to_string(buffer_count(a)) +
                  ", its size for the spec's default space: add the config's values to the spec's space");
        continue;
      }
      if (a.kind == SpecArgument::Kind::TensorMap) {
        auto& t = k->tensor_maps[a.name];
        t.tensor = a.tensor;
        t.type = spec_->arg_type(a, problem_, config);
        t.swizzle = a.swizzle;
        for (const auto& e : a.dims) t.dims.push_back(static_cast<cuuint64_t>(Expression(e).eval(vars)));
        for (const auto& e : a.box) t.box.push_back(static_cast<cuuint32_t>(Expression(e).eval(vars)));
        continue;
      }
      const double v = Expression(a.value).eval(vars);
      std::uint64_t slot = 0;
      switch (spec_->arg_type(a, problem_, config)) {
        case ElemType::I32: {
          const auto x = static_cast<std::int32_t>(v);
          std::memcpy(&slot, &x, 4);
          break;
        }
        case ElemType::U32: {
          const auto x = static_cast<std::uint32_t>(v);
          std::memcpy(&slot, &x, 4);
          break;
        }
        case ElemType::F32: {
          const auto x = static_cast<float>(v);
          std::memcpy(&slot, &x, 4);
          break;
        }
        case ElemType::I64: {
          const auto x = static_cast<std::int64_t>(v);
          std::memcpy(&slot, &x, 8);
          break;
        }
        case ElemType::F64:
          std::memcpy(&slot, &v, 8);
          break;
        default:
          throw InputError("scalar " + a.name + ": use i32, u32, f32, i64 or f64");
      }
      k->scalars[a.name] = slot;
    }
  } catch (const InputError& e) {
    throw TrialFailure(TrialStatus::LaunchError, std::string("cannot size this config: ") + e.what());
  }
  k->compiled = compile_plan(*compiler_, *spec_, k->plan);
  k->compile_time_s = 0;
  for (const auto& m : k->compiled) k->compile_time_s += m.seconds;
  k->constant_fills = check_compiled(*spec_, problem_, config, k->plan, k->compiled, device_vars_);
  std::shared_lock lock(dev_->mutex);
  dev_->make_current();
  try {
    k->load(*this);
  } catch (const DriverError& e) {
    // A sticky error here is an earlier kernel's fault that poisoned the context, not this
    // config's: `crashed`, which a worker answers by exiting (it is prepared again elsewhere).
    throw TrialFailure(e.sticky() ? TrialStatus::Crashed : TrialStatus::LaunchError,
                       std::string("loading the module: ") + e.what());
  }
  return k;
}

}  // namespace ktune::cuda
