#include "spec_session.h"

#include <algorithm>
#include <cstring>

#include "ktune/error.h"
#include "ktune/measurement.h"
#include "spec_kernel.h"

// The session's setting-up half: seeded inputs, device buffers, the reference output, the gemm
// baseline and compiled configs (spec_measure.cpp validates and times them).
namespace ktune::gpu {

SpecSession::SpecSession(std::shared_ptr<DeviceApi> device, std::shared_ptr<const Toolchain> toolchain,
                         const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec, Problem problem,
                         std::uint64_t seed)
    : device_(std::move(device)),
      toolchain_(std::move(toolchain)),
      info_(info),
      spec_(std::move(spec)),
      problem_(std::move(problem)),
      sizing_config_(spec_->family().default_config) {
  device_->check_usable();
  device_->make_current();
  create_stream_and_events();
  // Sizes and inputs first, once: compile threads read them while the measuring thread runs.
  SpecInputs inputs = generate_spec_inputs(*spec_, problem_, info.variables(), seed);
  vars_ = std::move(inputs.variables);
  buffer_counts_ = std::move(inputs.counts);
  host_inputs_ = std::move(inputs.inputs);
  allocate_buffers();
  compute_reference();
  find_block_scaled_baseline();
}

SpecSession::~SpecSession() {
  if (!device_->lost().empty()) return;  // the context and every handle are gone
  try {
    device_->make_current();
    device_->synchronize(stream_.get());  // nothing may still use what is freed next
  } catch (const ApiError&) {
    // A faulted stream: the owners free what they can.
  }
}

void SpecSession::create_stream_and_events() {
  stream_ = Stream(device_, device_->create_stream());
  ev_start_ = Event(device_, device_->create_event());
  ev_stop_ = Event(device_, device_->create_event());
}

void SpecSession::allocate_buffers() {
  ++epoch_;
  copies_.clear();
  copies_.emplace_back();
  auto& main = copies_[0];
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer() || a.role == ArgRole::Workspace) continue;
    // Sized for the largest config of the default space: outputs of partial results grow with it.
    const std::size_t bytes = buffer_count(a) * elem_size(spec_->arg_type(a, problem_, sizing_config_));
    Buffer& b = main[a.name] = Buffer(device_, bytes, "buffer " + a.name);
    if (auto it = host_inputs_.find(a.name); it != host_inputs_.end())
      upload(b.ptr(), it->second.data.data(), it->second.data.size());
  }
}

DevicePtr SpecSession::buffer(const std::string& name, int copy) const {
  if (auto it = workspaces_.find(name); it != workspaces_.end()) return it->second.ptr();
  if (copy > 0 && copy < static_cast<int>(copies_.size()))
    if (auto it = copies_[copy].find(name); it != copies_[copy].end()) return it->second.ptr();
  if (auto it = copies_[0].find(name); it != copies_[0].end()) return it->second.ptr();
  throw InputError("argument " + name + " of " + spec_->family().name + " has no buffer (workspace not sized?)");
}

void SpecSession::ensure_workspace(const std::string& name, std::size_t bytes) {
  auto& b = workspaces_[name];
  if (b && b.bytes() >= bytes) return;
  ++epoch_;
  b = Buffer(device_, bytes, "workspace " + name);
  device_->fill8(b.ptr(), 0, b.bytes(), stream());
}

void SpecSession::upload(DevicePtr dst, const void* src, std::size_t bytes) {
  device_->upload(dst, src, bytes, stream());
  device_->synchronize(stream());
}

void SpecSession::zero_workspaces() {
  for (const auto& a : spec_->arguments())
    if (a.role == ArgRole::Workspace && a.init.kind == ArgInit::Kind::Zero)
      if (auto it = workspaces_.find(a.name); it != workspaces_.end())
        device_->fill8(it->second.ptr(), 0, it->second.bytes(), stream());
}

void SpecSession::fill_output(const SpecArgument& out) {
  const Buffer& b = copies_[0].at(out.name);
  // Poison (NaN for floats): an element the kernel never writes cannot pass.
  device_->fill8(b.ptr(), out.init.kind == ArgInit::Kind::Zero ? 0 : 0xff, b.bytes(), stream());
}

int SpecSession::copies_for_rotation() const {
  std::size_t bytes = 0;
  for (const auto& [name, h] : host_inputs_) bytes += h.data.size();
  return rotation_copies(bytes, device_->l2_bytes());
}

void SpecSession::ensure_copies(int copies) {
  while (static_cast<int>(copies_.size()) < copies) {
    std::map<std::string, Buffer> copy;
    for (const auto& [name, h] : host_inputs_) {
      Buffer& b = copy[name] = Buffer(device_, h.data.size(), "rotating copy of " + name);
      upload(b.ptr(), h.data.data(), h.data.size());
    }
    copies_.push_back(std::move(copy));
    ++epoch_;
  }
}

GemmLibrary& SpecSession::gemm() {
  if (!gemm_ || gemm_generation_ != device_->generation()) {
    gemm_.reset();
    gemm_ = device_->gemm(stream(), *toolchain_);
    gemm_generation_ = device_->generation();
  }
  return *gemm_;
}

void SpecSession::compute_reference() {
  const auto& ref = spec_->reference();
  if (ref.kind == "none") return;
  const bool kernel = ref.kind == "kernel";
  const std::string what = kernel                 ? "reference kernel " + ref.launch.entry
                           : ref.kind == "config" ? "reference config " + ref.config.key()
                                                  : "reference " + ref.kind;
  compared_ = spec_->region_elements(
      problem_, spec_->arg_count(spec_->output(), problem_, ref.kind == "config" ? ref.config : sizing_config_, vars_),
      vars_);
  try {
    if (kernel || ref.kind == "config") {
      // A trusted config of the family, or a trusted kernel of the same source with its own launch.
      const Config& config = kernel ? sizing_config_ : ref.config;
      std::unique_ptr<Launchable> k;
      try {
        k = build(kernel ? std::vector<SpecLaunch>{ref.launch} : spec_->launches(), config);
      } catch (const TrialFailure& e) {
        throw RunError(spec_->family().source + ": the " + what + " cannot run: " + e.what());
      }
      run_reference(*k, kernel ? *spec_->argument(ref.output) : spec_->output(), config);
    } else {
      gemm_reference();
    }
  } catch (const ApiError& e) {
    throw RunError(spec_->family().source + ": the " + what + " failed: " + e.what());
  }
  if (reference_.empty() || spec_->check().reduce == SpecCheck::Reduce::None) return;
  // The reduced check compares one number: the reference's, over its own config's count.
  const Config& config = ref.kind == "config" ? ref.config : sizing_config_;
  reference_ = {spec_->reduced(reference_.data(), ElemType::F64, reference_.size(), problem_, config, vars_)};
}

void SpecSession::run_reference(Launchable& k, const SpecArgument& out, const Config& config) {
  const ElemType type = spec_->arg_type(out, problem_, config);
  const std::size_t count = spec_->arg_count(out, problem_, config, vars_);
  k.ensure_loaded(*this);
  zero_workspaces();
  fill_output(out);
  k.enqueue(*this, 0);
  device_->synchronize(stream());
  std::vector<unsigned char> host(count * elem_size(type));
  device_->download(host.data(), buffer(out.name, 0), host.size());
  reference_.resize(count);
  for (std::size_t i = 0; i < count; ++i) reference_[i] = load_elem(host.data(), type, i);
  if (!spec_->check().ignore_unwritten) return;
  try {
    drop_unwritten(compared_, host.data(), type, count);
  } catch (const InputError& e) {
    throw RunError(spec_->family().source + ": check.region and the reference's output '" + out.name +
                   "': " + e.what());
  }
  if (std::none_of(compared_.begin(), compared_.end(), [](std::uint8_t c) { return c != 0; }))
    throw RunError(spec_->family().source + ": the reference wrote none of the " + std::to_string(count) +
                   " elements of '" + out.name + "', so \"ignore_unwritten\" leaves nothing to check: fix the " +
                   "reference's launch");
}

GemmCall SpecSession::gemm_call(ElemType out) {
  auto f = spec_->reference().fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, vars_);
  GemmCall c;
  c.m = static_cast<int>(Expression(f["m"]).eval(vars));
  c.n = static_cast<int>(Expression(f["n"]).eval(vars));
  c.k = static_cast<int>(Expression(f["k"]).eval(vars));
  c.b_nk = f.count("b_layout") && f["b_layout"] == "nk";
  const auto& a = host_inputs_.at(f["a"]);
  const auto& b = host_inputs_.at(f["b"]);
  c.in = a.type;
  c.out = out;
  if (b.type != a.type && !gemm_b_) {
    // Integer weights (w8a16): multiplied converted to A's type, which is exact for 8-bit values;
    // the per-channel scale is applied to the reference on the host.
    const std::size_t count = b.data.size() / elem_size(b.type);
    std::vector<unsigned char> conv(count * elem_size(a.type));
    for (std::size_t i = 0; i < count; ++i) store_elem(conv.data(), a.type, i, load_elem(b.data.data(), b.type, i));
    gemm_b_ = Buffer(device_, conv.size(), "converted reference B");
    upload(gemm_b_.ptr(), conv.data(), conv.size());
  }
  c.b = b.type != a.type ? gemm_b_.ptr() : 0;
  return c;
}

void SpecSession::gemm_reference() {
  auto f = spec_->reference().fields;
  const std::size_t out_count = spec_->arg_count(spec_->output(), problem_, sizing_config_, vars_);
  // f32 output, so the reference carries no rounding of its own.
  GemmCall c = gemm_call(ElemType::F32);
  if (static_cast<std::size_t>(c.m) * c.n != out_count)
    throw InputError(spec_->family().source + ": reference m*n (" + std::to_string(c.m) + "*" + std::to_string(c.n) +
                     ") differs from the output's element count " + std::to_string(out_count));
  c.a = buffer(f["a"], 0);
  if (!c.b) c.b = buffer(f["b"], 0);
  Buffer raw(device_, out_count * 4, "reference output");
  c.c = raw.ptr();
  gemm().enqueue(c);
  device_->synchronize(stream());
  std::vector<float> host(out_count);
  device_->download(host.data(), raw.ptr(), out_count * 4);
  reference_.assign(host.begin(), host.end());
  if (auto it = f.find("b_scale"); it != f.end()) {
    const auto& scale = host_inputs_.at(it->second);
    for (std::size_t row = 0; row < static_cast<std::size_t>(c.m); ++row)
      for (std::size_t col = 0; col < static_cast<std::size_t>(c.n); ++col)
        reference_[row * c.n + col] *= load_elem(scale.data.data(), scale.type, col);
  }
}

void SpecSession::find_block_scaled_baseline() {
  const SpecBaseline& b = spec_->baseline();
  if (b.kind != "cublaslt_block_scaled") return;
  if (!b.when.empty() && Expression(b.when).eval(spec_->variables(problem_, sizing_config_, vars_)) == 0) return;
  block_scaled_name_ = gemm().block_scaled_name(block_scaled_why_);
  // A library without it still names the baseline, which then fails saying why (the run's log).
  if (block_scaled_name_.empty()) block_scaled_name_ = b.kind;
}

std::unique_ptr<PreparedKernel> SpecSession::prepare_block_scaled() {
  if (!block_scaled_why_.empty()) throw TrialFailure(TrialStatus::LaunchError, block_scaled_why_);
  auto f = spec_->baseline().fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, vars_);
  auto k = std::make_unique<LibraryBlockScaled>();
  BlockScaledCall& c = k->call;
  c.m = static_cast<int>(Expression(f["m"]).eval(vars));
  c.n = static_cast<int>(Expression(f["n"]).eval(vars));
  c.k = static_cast<int>(Expression(f["k"]).eval(vars));
  c.out = spec_->arg_type(spec_->output(), problem_, sizing_config_);
  k->a = f["a"];
  k->b = f["b"];
  k->a_scale = f["a_scale"];
  k->b_scale = f["b_scale"];
  k->y = f["c"];
  return k;
}

DevicePtr SpecSession::block_scaled_a_scale(const std::string& name, int m, int kb) {
  if (!block_scaled_a_scale_) {
    // The spec's a_scale is [m][k / 128]; the library reads it [k / 128][m].
    const HostInput& in = host_inputs_.at(name);
    std::vector<float> t(static_cast<std::size_t>(m) * kb);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < kb; ++j)
        t[static_cast<std::size_t>(j) * m + i] =
            static_cast<float>(load_elem(in.data.data(), in.type, static_cast<std::size_t>(i) * kb + j));
    block_scaled_a_scale_ = Buffer(device_, t.size() * 4, "baseline a_scale");
    upload(block_scaled_a_scale_.ptr(), t.data(), t.size() * 4);
  }
  return block_scaled_a_scale_.ptr();
}

std::unique_ptr<PreparedKernel> SpecSession::prepare_baseline() {
  if (!block_scaled_name_.empty()) return prepare_block_scaled();
  if (baseline_name().empty()) return nullptr;
  device_->check_usable();
  auto k = std::make_unique<LibraryGemm>();
  try {
    // Its output is allocated here, on whichever thread asks: a `ktune worker` prepares on a
    // thread of its own, where no context was current (every isolated CUDA run lost its baseline).
    device_->make_current();
    k->call = gemm_call(host_inputs_.at(spec_->reference().fields.at("a")).type);
    if (!baseline_c_)
      baseline_c_ =
          Buffer(device_, static_cast<std::size_t>(k->call.m) * k->call.n * elem_size(k->call.out), "baseline output");
  } catch (const ApiError& e) {
    throw TrialFailure(e.sticky() ? TrialStatus::Crashed : TrialStatus::LaunchError,
                       "preparing " + baseline_name() + ": " + e.what());
  }
  k->a = spec_->reference().fields.at("a");
  if (!k->call.b) k->b = spec_->reference().fields.at("b");
  k->call.c = baseline_c_.ptr();
  return k;
}

std::string SpecSession::baseline_name() const {
  if (!block_scaled_name_.empty()) return block_scaled_name_;
  return gemm_ && gemm_->baseline() ? gemm_->name() : "";
}

std::unique_ptr<PreparedKernel> SpecSession::prepare(const Config& config) { return build(spec_->launches(), config); }

}  // namespace ktune::gpu
