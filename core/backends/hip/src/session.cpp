#include "session.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "ktune/error.h"
#include "ktune/expression.h"
#include "ktune/host_data.h"
#include "ktune/measurement.h"

namespace ktune::hip {

namespace {

using Clock = std::chrono::steady_clock;

// The trusted reference: one thread per output element, f32 throughout, no tiling to get wrong.
constexpr const char* kReferenceSource = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void ktune_reference_gemm(const float* A, const float* B, float* C, int M, int N, int K, int b_nk) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N || m >= M) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)m * K + k] * (b_nk ? B[(size_t)n * K + k] : B[(size_t)k * N + n]);
  C[(size_t)m * N + n] = acc;
}
)";

std::vector<float> to_f32(const std::vector<unsigned char>& data, ElemType t) {
  std::vector<float> out(data.size() / elem_size(t));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(load_elem(data.data(), t, i));
  return out;
}

}  // namespace

HipKernel::~HipKernel() {
  if (module) (void)hipModuleUnload(module);
}

Session::Session(int device, const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec, Problem problem,
                 std::uint64_t seed, std::shared_ptr<const Compiler> compiler)
    : device_(device),
      info_(info),
      device_vars_(info.variables()),
      spec_(std::move(spec)),
      problem_(std::move(problem)),
      seed_(seed),
      compiler_(std::move(compiler)),
      sizing_config_(spec_->family().default_config) {
  check(hipSetDevice(device_), "hipSetDevice");
  check(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreate");
  check(hipEventCreate(&ev_start_), "hipEventCreate");
  check(hipEventCreate(&ev_stop_), "hipEventCreate");
  std::uint64_t arg_seed = seed_;
  for (const auto& a : spec_->arguments()) {
    ++arg_seed;
    if (!a.is_buffer() || a.role != ArgRole::Input) continue;
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::uint64_t count = spec_->arg_count(a, problem_, sizing_config_, device_vars_);
    host_inputs_[a.name] = {t, generate(t, count, a.init, fnv1a64(a.name, arg_seed))};
  }
  allocate_buffers();
  compute_reference();
}

Session::~Session() {
  (void)hipSetDevice(device_);
  (void)hipStreamSynchronize(stream_);
  for (auto& [a, b] : launch_events_) (void)hipEventDestroy(a), (void)hipEventDestroy(b);
  if (ev_start_) (void)hipEventDestroy(ev_start_);
  if (ev_stop_) (void)hipEventDestroy(ev_stop_);
  copies_.clear();
  if (stream_) (void)hipStreamDestroy(stream_);
}

void Session::allocate_buffers() {
  copies_.clear();
  copies_.emplace_back();
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer()) continue;
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::size_t bytes = spec_->arg_count(a, problem_, sizing_config_, device_vars_) * elem_size(t);
    DeviceBuffer b(bytes, "buffer " + a.name);
    if (auto it = host_inputs_.find(a.name); it != host_inputs_.end())
      check(hipMemcpy(b.get(), it->second.data.data(), it->second.data.size(), hipMemcpyHostToDevice),
            "upload " + a.name);
    else
      check(hipMemset(b.get(), 0, b.bytes()), "zero " + a.name);
    copies_[0].emplace(a.name, std::move(b));
  }
}

void* Session::buffer(const std::string& name, int copy) const {
  if (copy > 0 && copy < static_cast<int>(copies_.size()))
    if (auto it = copies_[copy].find(name); it != copies_[copy].end()) return it->second.get();
  if (auto it = copies_[0].find(name); it != copies_[0].end()) return it->second.get();
  throw InputError("argument " + name + " of " + spec_->family().name + " has no buffer");
}

int Session::copies_for_rotation() const {
  std::size_t bytes = 0;
  for (const auto& [name, h] : host_inputs_) bytes += h.data.size();
  return rotation_copies(bytes, info_.property("l2_bytes", 8.0 * 1024 * 1024));
}

void Session::ensure_copies(int copies) {
  while (static_cast<int>(copies_.size()) < copies) {
    std::map<std::string, DeviceBuffer> copy;
    for (const auto& [name, h] : host_inputs_) {
      DeviceBuffer b(h.data.size(), "input copy of " + name);
      check(hipMemcpy(b.get(), h.data.data(), h.data.size(), hipMemcpyHostToDevice), "upload " + name);
      copy.emplace(name, std::move(b));
    }
    copies_.push_back(std::move(copy));
  }
}

void Session::compute_reference() {
  const SpecReference& ref = spec_->reference();
  if (ref.kind == "none") return;
  if (ref.kind == "device_gemm") return reference_gemm();
  // "config": the trusted config's output.
  auto k = prepare(ref.config);
  auto& hk = static_cast<HipKernel&>(*k);
  enqueue(hk, 0);
  check(hipStreamSynchronize(stream_), "reference config " + ref.config.key());
  const SpecArgument& out = spec_->output();
  const ElemType t = spec_->arg_type(out, problem_, sizing_config_);
  std::vector<unsigned char> host(copies_[0].at(out.name).bytes());
  check(hipMemcpy(host.data(), buffer(out.name, 0), host.size(), hipMemcpyDeviceToHost), "download reference");
  reference_.resize(host.size() / elem_size(t));
  for (std::size_t i = 0; i < reference_.size(); ++i) reference_[i] = load_elem(host.data(), t, i);
}

void Session::reference_gemm() {
  auto f = spec_->reference().fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, device_vars_);
  const int m = static_cast<int>(Expression(f["m"]).eval(vars));
  const int n = static_cast<int>(Expression(f["n"]).eval(vars));
  const int k = static_cast<int>(Expression(f["k"]).eval(vars));
  const SpecArgument& out = spec_->output();
  const std::size_t out_count = spec_->arg_count(out, problem_, sizing_config_, device_vars_);
  if (static_cast<std::size_t>(m) * n != out_count)
    throw InputError(spec_->family().source + ": reference m*n (" + std::to_string(m) + "*" + std::to_string(n) +
                     ") differs from the output's element count " + std::to_string(out_count));
  // Inputs converted to f32 on the host (exact for 16-bit floats and 8-bit integers).
  const auto& a_in = host_inputs_.at(f["a"]);
  const auto& b_in = host_inputs_.at(f["b"]);
  const std::vector<float> a = to_f32(a_in.data, a_in.type), b = to_f32(b_in.data, b_in.type);
  DeviceBuffer da(a.size() * 4, "reference A"), db(b.size() * 4, "reference B"), dc(out_count * 4, "reference C");
  check(hipMemcpy(da.get(), a.data(), a.size() * 4, hipMemcpyHostToDevice), "upload reference A");
  check(hipMemcpy(db.get(), b.data(), b.size() * 4, hipMemcpyHostToDevice), "upload reference B");
  const CompiledModule mod =
      compiler_->compile(kReferenceSource, "ktune_reference.hip", {"-O1"}, {"ktune_reference_gemm"});
  hipModule_t module = nullptr;
  check(hipModuleLoadData(&module, mod.binary.data()), "load ktune's reference gemm");
  hipFunction_t fn = nullptr;
  const hipError_t got = hipModuleGetFunction(&fn, module, "ktune_reference_gemm");
  if (got != hipSuccess) (void)hipModuleUnload(module);
  check(got, "reference gemm function");
  void* pa = da.get();
  void* pb = db.get();
  void* pc = dc.get();
  int b_nk = f.count("b_layout") && f["b_layout"] == "nk" ? 1 : 0;
  void* params[] = {&pa, &pb, &pc, const_cast<int*>(&m), const_cast<int*>(&n), const_cast<int*>(&k), &b_nk};
  const hipError_t launched = hipModuleLaunchKernel(
      fn, static_cast<unsigned>((n + 127) / 128), static_cast<unsigned>(m), 1, 128, 1, 1, 0, stream_, params, nullptr);
  const hipError_t synced = launched == hipSuccess ? hipStreamSynchronize(stream_) : launched;
  std::vector<float> host(out_count);
  const hipError_t copied =
      synced == hipSuccess ? hipMemcpy(host.data(), dc.get(), out_count * 4, hipMemcpyDeviceToHost) : synced;
  (void)hipModuleUnload(module);
  check(copied, "reference gemm");
  reference_.assign(host.begin(), host.end());
  if (auto it = f.find("b_scale"); it != f.end()) {
    const auto& scale = host_inputs_.at(it->second);
    for (std::size_t row = 0; row < static_cast<std::size_t>(m); ++row)
      for (std::size_t col = 0; col < static_cast<std::size_t>(n); ++col)
        reference_[row * n + col] *= load_elem(scale.data.data(), scale.type, col);
  }
}

std::unique_ptr<PreparedKernel> Session::prepare(const Config& config) {
  auto k = std::make_unique<HipKernel>();
  k->config = spec_->complete(config);
  std::vector<std::string> entries;
  for (const auto& l : spec_->launches()) {
    LaunchGeometry g = spec_->geometry(l, problem_, k->config, device_vars_);
    if (!g.active) continue;
    if (g.threads() > info_.property("max_threads_per_block", 1024))
      throw TrialFailure(TrialStatus::LaunchError,
                         g.entry + ": " + std::to_string(g.threads()) + " threads per block exceed the device's " +
                             std::to_string(static_cast<int>(info_.property("max_threads_per_block"))));
    entries.push_back(g.entry);
    k->geometry.push_back(g);
    k->launch_args.push_back(l.args);
  }
  for (const auto& a : spec_->arguments()) {
    if (a.kind == SpecArgument::Kind::Scalar) {
      std::uint64_t slot = 0;
      const double v = Expression(a.value).eval(spec_->variables(problem_, k->config, device_vars_));
      store_elem(&slot, spec_->arg_type(a, problem_, k->config), 0, v);
      k->scalars[a.name] = slot;
    } else if (a.is_buffer()) {
      const std::size_t need =
          spec_->arg_count(a, problem_, k->config, device_vars_) * elem_size(spec_->arg_type(a, problem_, k->config));
      if (need > copies_[0].at(a.name).bytes())
        throw TrialFailure(TrialStatus::LaunchError, "buffer " + a.name + " needs " + std::to_string(need) +
                                                         " bytes for this config, more than the default config's " +
                                                         std::to_string(copies_[0].at(a.name).bytes()) +
                                                         ": the hip backend sizes buffers once per problem");
    }
  }
  k->compiled = compiler_->compile(spec_->source(), spec_->source_file().filename().string(),
                                   spec_->compile_options(problem_, k->config), entries);
  k->compile_time_s = k->compiled.seconds;
  check(hipSetDevice(device_), "hipSetDevice");  // compile threads start on device 0
  check(hipModuleLoadData(&k->module, k->compiled.binary.data()), "hipModuleLoadData");
  for (std::size_t i = 0; i < k->geometry.size(); ++i) {
    hipFunction_t fn = nullptr;
    check(hipModuleGetFunction(&fn, k->module, k->compiled.lowered[i].c_str()), "kernel " + k->geometry[i].entry);
    // The compiled kernel's own limits: registers and launch bounds cap its threads, LDS is
    // static + dynamic.
    int max_threads = 0, static_lds = 0;
    check(hipFuncGetAttribute(&max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn), "kernel attributes");
    check(hipFuncGetAttribute(&static_lds, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), "kernel attributes");
    const LaunchGeometry& g = k->geometry[i];
    if (max_threads > 0 && g.threads() > static_cast<std::uint64_t>(max_threads))
      throw TrialFailure(TrialStatus::LaunchError, g.entry + ": " + std::to_string(g.threads()) +
                                                       " threads, but the compiled kernel allows " +
                                                       std::to_string(max_threads));
    if (static_lds + g.shared_bytes > info_.property("lds_per_block", 65536))
      throw TrialFailure(TrialStatus::LaunchError,
                         g.entry + ": " + std::to_string(static_lds + g.shared_bytes) +
                             " bytes of LDS exceed the device's " +
                             std::to_string(static_cast<long>(info_.property("lds_per_block"))));
    k->functions.push_back(fn);
  }
  return k;
}

void Session::enqueue(HipKernel& k, int copy) {
  for (std::size_t i = 0; i < k.functions.size(); ++i) {
    const LaunchGeometry& g = k.geometry[i];
    std::vector<void*> pointers;
    pointers.reserve(k.launch_args[i].size());
    std::vector<void*> params;
    for (const auto& name : k.launch_args[i]) {
      if (auto it = k.scalars.find(name); it != k.scalars.end()) {
        params.push_back(&it->second);
      } else {
        pointers.push_back(buffer(name, copy));
        params.push_back(&pointers.back());
      }
    }
    check(hipModuleLaunchKernel(k.functions[i], static_cast<unsigned>(g.grid[0]), static_cast<unsigned>(g.grid[1]),
                                static_cast<unsigned>(g.grid[2]), static_cast<unsigned>(g.block[0]),
                                static_cast<unsigned>(g.block[1]), static_cast<unsigned>(g.block[2]),
                                static_cast<unsigned>(g.shared_bytes), stream_, params.data(), nullptr),
          "launch " + g.entry);
  }
}

void Session::wait(hipEvent_t event, Clock::time_point deadline, const std::string& what) {
  while (true) {
    const hipError_t e = hipEventQuery(event);
    if (e == hipSuccess) return;
    if (e != hipErrorNotReady) check(e, what);
    if (Clock::now() > deadline) {
      (void)hipStreamSynchronize(stream_);  // buffers must not be touched while it runs
      throw TrialFailure(TrialStatus::Timeout, what + " exceeded its time limit");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Validation Session::validate(PreparedKernel& kernel, const Tolerance& tol) {
  auto& k = dynamic_cast<HipKernel&>(kernel);
  check(hipSetDevice(device_), "hipSetDevice");
  const SpecArgument& out = spec_->output();
  void* ptr = buffer(out.name, 0);
  const std::size_t bytes = copies_[0].at(out.name).bytes();
  check(hipMemsetAsync(ptr, 0xff, bytes, stream_),
        "poison output");  // NaN in every float type: a skipped element fails
  enqueue(k, 0);
  check(hipEventRecord(ev_stop_, stream_), "hipEventRecord");
  wait(ev_stop_, Clock::now() + std::chrono::seconds(60), "validation run");
  if (reference_.empty()) return {};
  std::vector<unsigned char> host(bytes);
  check(hipMemcpy(host.data(), ptr, bytes, hipMemcpyDeviceToHost), "download output");
  const Comparison c = compare(host.data(), spec_->arg_type(out, problem_, k.config), reference_, tol);
  if (c.validation.mismatch_fraction > tol.max_mismatch_fraction)
    throw TrialFailure(
        TrialStatus::WrongResult,
        mismatch_message(c, reference_.size(), tol,
                         spec_->reference().kind == "device_gemm" ? "the device reference gemm" : "the reference"));
  return c.validation;
}

double Session::sample(PreparedKernel& kernel, const SampleRequest& req) {
  auto& k = dynamic_cast<HipKernel&>(kernel);
  check(hipSetDevice(device_), "hipSetDevice");
  const int launches = std::max(1, req.launches);
  const int copies = req.rotate_buffers ? copies_for_rotation() : 1;
  ensure_copies(copies);
  if (req.method == Method::Amortized) {
    check(hipEventRecord(ev_start_, stream_), "hipEventRecord");
    for (int i = 0; i < launches; ++i) enqueue(k, i % copies);
    check(hipEventRecord(ev_stop_, stream_), "hipEventRecord");
    wait(ev_stop_, req.deadline, "timed run");
    float ms = 0;
    check(hipEventElapsedTime(&ms, ev_start_, ev_stop_), "hipEventElapsedTime");
    return static_cast<double>(ms) * 1e6 / launches;
  }
  // per_launch: an event pair around each launch, L2 evicted before it by writing a buffer
  // twice its size.
  if (!flush_.get())
    flush_ =
        DeviceBuffer(static_cast<std::size_t>(2 * info_.property("l2_bytes", 8.0 * 1024 * 1024)), "L2 flush buffer");
  while (static_cast<int>(launch_events_.size()) < launches) {
    hipEvent_t a = nullptr, b = nullptr;
    check(hipEventCreate(&a), "hipEventCreate");
    check(hipEventCreate(&b), "hipEventCreate");
    launch_events_.emplace_back(a, b);
  }
  for (int i = 0; i < launches; ++i) {
    check(hipMemsetD32Async(static_cast<hipDeviceptr_t>(flush_.get()), i, flush_.bytes() / 4, stream_), "L2 flush");
    check(hipEventRecord(launch_events_[i].first, stream_), "hipEventRecord");
    enqueue(k, i % copies);
    check(hipEventRecord(launch_events_[i].second, stream_), "hipEventRecord");
  }
  wait(launch_events_[launches - 1].second, req.deadline, "timed run");
  double total_ms = 0;
  for (int i = 0; i < launches; ++i) {
    float ms = 0;
    check(hipEventElapsedTime(&ms, launch_events_[i].first, launch_events_[i].second), "hipEventElapsedTime");
    total_ms += ms;
  }
  return total_ms * 1e6 / launches;
}

}  // namespace ktune::hip
