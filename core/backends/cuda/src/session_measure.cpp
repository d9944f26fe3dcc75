#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "ktune/error.h"
#include "ktune/host_data.h"
#include "launchables.h"
#include "session.h"

// The session's measuring half: validation, the two timing methods, recovery from faults, and
// the utility kernels they use (session.cpp sets the problem up).
namespace ktune::cuda {

namespace {

using Clock = std::chrono::steady_clock;

// The session's own kernels.
// ktune_clock_probe busy-waits `ns` nanoseconds of wall time on every block and records the SM
// cycles it took.
// ktune_compare validates an output on the device, so a config of a large problem costs no
// download and no host pass over its output. It counts the elements of `got` (0: f16, 1: bf16,
// 2: f32) outside atol + rtol*|want| (NaN never matches) and keeps the largest error: the error's
// bits in the high word (non-negative floats order like integers), its index in the low one.
constexpr const char* kUtilitySource = R"(
extern "C" __global__ void ktune_clock_probe(unsigned long long* out, unsigned long long ns) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); } while (t1 - t0 < ns);
  const long long c1 = clock64();
  if (threadIdx.x == 0) { out[2 * blockIdx.x] = c1 - c0; out[2 * blockIdx.x + 1] = t1 - t0; }
}

extern "C" __global__ void ktune_compare(const void* got, int type, const float* want, unsigned int n, float atol,
                                         float rtol, unsigned long long* out) {
  unsigned long long bad = 0, worst = 0;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float g;
    if (type == 0) asm("cvt.f32.f16 %0, %1;" : "=f"(g) : "h"(((const unsigned short*)got)[i]));
    else if (type == 1) g = __uint_as_float((unsigned int)((const unsigned short*)got)[i] << 16);
    else g = ((const float*)got)[i];
    const float w = want[i];
    const float err = (g != g || w != w) ? __uint_as_float(0x7f800000u) : fabsf(g - w);
    if (!(err <= atol + rtol * fabsf(w))) ++bad;
    const unsigned long long key = ((unsigned long long)__float_as_uint(err) << 32) | i;
    worst = key > worst ? key : worst;
  }
  for (int o = 16; o > 0; o >>= 1) {
    bad += __shfl_down_sync(0xffffffffu, bad, o);
    const unsigned long long w = __shfl_down_sync(0xffffffffu, worst, o);
    worst = w > worst ? w : worst;
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out[0], bad);
    atomicMax(&out[1], worst);
  }
}
)";

bool no_deadline(Clock::time_point t) { return t == Clock::time_point{}; }

}  // namespace

// ---------------------------------------------------------------------------------------------
template <class F>
auto Session::guarded(const std::string& what, F&& fn) -> decltype(fn()) {
  dev_->check_usable();
  try {
    // The context is current per thread: a worker (ktune worker) measures on another thread
    // than the one that opened the session.
    dev_->make_current();
    return fn();
  } catch (const DriverError& e) {
    if (!e.sticky()) throw TrialFailure(TrialStatus::LaunchError, what + ": " + e.what());
    const std::string message = what + ": " + e.what();
    if (recover()) throw TrialFailure(TrialStatus::Crashed, message + " (the context was reset and the run goes on)");
    throw TrialFailure(TrialStatus::Crashed,
                       message + "; " + dev_->lost + ": resume the run in a new process (--resume)");
  }
}

bool Session::recover() {
  ++recoveries_;
  // Every handle of the faulted context dies with it; only host state survives.
  if (cublas_) cublasDestroy(cublas_);
  cublas_ = nullptr;
  copies_.clear();
  workspaces_.clear();
  flush_ = ref_b_ = ref_dev_ = compare_out_ = baseline_c_ = cublas_ws_ = {};
  launch_events_.clear();
  stream_ = nullptr;
  ev_start_ = ev_stop_ = nullptr;
  if (!dev_->reset()) return false;
  create_stream_and_events();
  allocate_buffers();
  return true;
}

void Session::wait(CUevent event, Clock::time_point deadline, const std::string& what) {
  for (int spins = 0;; ++spins) {
    const CUresult r = d().cuEventQuery(event);
    if (r == CUDA_SUCCESS) return;
    if (r != CUDA_ERROR_NOT_READY) check(r, what);
    if (!no_deadline(deadline) && Clock::now() > deadline) {
      check(d().cuStreamSynchronize(stream_), what);
      throw TrialFailure(TrialStatus::Timeout, what + ": still running at the time cap");
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Validation Session::validate(PreparedKernel& kernel, const Tolerance& run_tol) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  // The spec's "check" may set its own tolerance (a sum of 80M floats is checked relatively).
  Tolerance tol = run_tol;
  if (spec_->check().atol) tol.atol = *spec_->check().atol;
  if (spec_->check().rtol) tol.rtol = *spec_->check().rtol;
  const SpecArgument& out = spec_->output();
  const ElemType type = spec_->arg_type(out, problem_, sizing_config_);
  const bool reduced = spec_->check().reduce != SpecCheck::Reduce::None;
  std::optional<Comparison> on_device;
  std::vector<unsigned char> host;
  guarded("validation run", [&] {
    k.ensure_loaded(*this);
    zero_workspaces();
    const CUdeviceptr ptr = buffer(out.name, 0);
    const std::size_t bytes = copies_[0].at(out.name).bytes;
    fill_output(out);
    k.enqueue(*this, 0);
    check(d().cuEventRecord(ev_stop_, stream_), "cuEventRecord");
    wait(ev_stop_, Clock::now() + std::chrono::seconds(60), "validation run");
    if (reference_.empty()) return;
    if (!reduced) on_device = compare_on_device(ptr, type, tol);
    if (on_device) return;
    host.resize(bytes);
    check(d().cuMemcpyDtoH(host.data(), ptr, bytes), "download output");
  });
  if (reference_.empty()) return {};
  if (reduced) return check_reduced(k, host, type, tol);
  const Comparison c = on_device ? *on_device : compare(host.data(), type, reference_, tol);
  if (c.validation.mismatch_fraction > tol.max_mismatch_fraction) {
    throw TrialFailure(TrialStatus::WrongResult,
                       mismatch_message(c, reference_.size(), tol,
                                        spec_->reference().kind == "cublas_gemm" ? "cuBLAS" : "the reference",
                                        on_device ? ", compared on the device" : ""));
  }
  return c.validation;
}

Validation Session::check_reduced(const Launchable& k, const std::vector<unsigned char>& host, ElemType type,
                                  const Tolerance& tol) const {
  const auto* spec_kernel = dynamic_cast<const SpecKernel*>(&k);
  const Config& config = spec_kernel ? spec_kernel->config : sizing_config_;
  const SpecCheck& c = spec_->check();
  double got = 0;
  try {
    got = spec_->reduced(host.data(), type, host.size() / elem_size(type), problem_, config, device_vars_);
  } catch (const InputError& e) {
    throw TrialFailure(TrialStatus::LaunchError, e.what());
  }
  const Comparison cmp = compare(&got, ElemType::F64, reference_, tol);
  if (cmp.mismatches == 0) return cmp.validation;
  const std::string what = std::string(c.reduce == SpecCheck::Reduce::Sum ? "sum" : "max") + " of the first " +
                           (c.count.empty() ? "all" : c.count) + " elements of " + spec_->output().name;
  throw TrialFailure(TrialStatus::WrongResult, "reduced check: the " + what + " is " + std::to_string(got) +
                                                   ", the reference's " + std::to_string(reference_.front()) +
                                                   " (beyond atol " + std::to_string(tol.atol) + " + rtol " +
                                                   std::to_string(tol.rtol) + ")");
}

double Session::sample(PreparedKernel& kernel, const SampleRequest& req) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  const int launches = std::max(1, req.launches);
  return guarded("timed run", [&] {
    k.ensure_loaded(*this);
    const int copies = req.rotate_buffers ? copies_for_rotation() : 1;
    ensure_copies(copies);
    zero_workspaces();
    if (req.method == Method::Amortized) {
      // Buffers may have moved (workspace growth, a reset) since the graph was captured.
      if (!k.graph || k.graph_launches != launches || k.graph_copies != copies || k.graph_epoch != epoch_ ||
          k.graph_generation != dev_->generation) {
        k.drop_graph();
        check(d().cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
        CUgraph g = nullptr;
        try {
          for (int i = 0; i < launches; ++i) k.enqueue(*this, i % copies);
        } catch (...) {
          d().cuStreamEndCapture(stream_, &g);
          if (g) d().cuGraphDestroy(g);
          throw;
        }
        check(d().cuStreamEndCapture(stream_, &g), "cuStreamEndCapture");
        const CUresult r = d().cuGraphInstantiateWithFlags(&k.graph, g, 0);
        d().cuGraphDestroy(g);
        check(r, "cuGraphInstantiate");
        k.graph_launches = launches;
        k.graph_copies = copies;
        k.graph_epoch = epoch_;
        k.graph_generation = dev_->generation;
      }
      check(d().cuEventRecord(ev_start_, stream_), "cuEventRecord");
      check(d().cuGraphLaunch(k.graph, stream_), "cuGraphLaunch");
      check(d().cuEventRecord(ev_stop_, stream_), "cuEventRecord");
      wait(ev_stop_, req.deadline, "timed run");
      float ms = 0;
      check(d().cuEventElapsedTime(&ms, ev_start_, ev_stop_), "cuEventElapsedTime");
      return static_cast<double>(ms) * 1e6 / launches;
    }
    // per_launch: an event pair around each launch, L2 evicted before it by writing a buffer
    // larger than L2.
    if (!flush_.ptr)
      flush_ =
          alloc(d(), static_cast<std::size_t>(2 * info_.property("l2_bytes", 64.0 * 1024 * 1024)), "L2 flush buffer");
    while (static_cast<int>(launch_events_.size()) < launches) {
      CUevent a = nullptr, b = nullptr;
      check(d().cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
      check(d().cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
      launch_events_.emplace_back(a, b);
    }
    for (int i = 0; i < launches; ++i) {
      check(d().cuMemsetD32Async(flush_.ptr, static_cast<unsigned>(i), flush_.bytes / 4, stream_), "L2 flush");
      check(d().cuEventRecord(launch_events_[i].first, stream_), "cuEventRecord");
      k.enqueue(*this, i % copies);
      check(d().cuEventRecord(launch_events_[i].second, stream_), "cuEventRecord");
    }
    wait(launch_events_[launches - 1].second, req.deadline, "timed run");
    double total_ms = 0;
    for (int i = 0; i < launches; ++i) {
      float ms = 0;
      check(d().cuEventElapsedTime(&ms, launch_events_[i].first, launch_events_[i].second), "cuEventElapsedTime");
      total_ms += ms;
    }
    return total_ms * 1e6 / launches;
  });
}

void Session::load_utilities() {
  if (utility_module_ && utility_generation_ == dev_->generation) return;
  const CompiledModule m =
      compiler_->compile(kUtilitySource, "ktune_utilities.cu", {}, {"ktune_clock_probe", "ktune_compare"});
  check(d().cuModuleLoadData(&utility_module_, m.binary.data()), "load ktune's utility kernels");
  check(d().cuModuleGetFunction(&probe_, utility_module_, "ktune_clock_probe"), "clock probe function");
  check(d().cuModuleGetFunction(&compare_, utility_module_, "ktune_compare"), "compare function");
  utility_generation_ = dev_->generation;
}

std::optional<Comparison> Session::compare_on_device(CUdeviceptr got, ElemType type, const Tolerance& tol) {
  const int code = type == ElemType::F16 ? 0 : type == ElemType::BF16 ? 1 : type == ElemType::F32 ? 2 : -1;
  const std::size_t n = reference_.size();
  if (code < 0 || n == 0 || n >= (1ull << 32)) return std::nullopt;  // the host compares those
  load_utilities();
  // The reference lives on the device as f32, uploaded once (again after a context reset).
  if (!ref_dev_.ptr) {
    const std::vector<float> f(reference_.begin(), reference_.end());
    ref_dev_ = alloc(d(), f.size() * 4, "device reference");
    upload(ref_dev_.ptr, f.data(), f.size() * 4, "upload reference");
  }
  if (!compare_out_.ptr) compare_out_ = alloc(d(), 16, "compare result");
  check(d().cuMemsetD8Async(compare_out_.ptr, 0, 16, stream_), "clear compare result");
  unsigned count = static_cast<unsigned>(n);
  float atol = static_cast<float>(tol.atol), rtol = static_cast<float>(tol.rtol);
  void* params[] = {&got, const_cast<int*>(&code), &ref_dev_.ptr, &count, &atol, &rtol, &compare_out_.ptr};
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::size_t>((n + 255) / 256, 4 * static_cast<std::size_t>(info_.property("sms", 1)) * 8));
  check(d().cuLaunchKernel(compare_, blocks, 1, 1, 256, 1, 1, 0, stream_, params, nullptr), "launch compare");
  unsigned long long result[2] = {0, 0};
  check(d().cuStreamSynchronize(stream_), "compare");
  check(d().cuMemcpyDtoH(result, compare_out_.ptr, 16), "download compare result");
  Comparison c;
  c.mismatches = result[0];
  c.worst_index = static_cast<std::size_t>(result[1] & 0xffffffffu);
  const auto bits = static_cast<std::uint32_t>(result[1] >> 32);
  float worst = 0;
  std::memcpy(&worst, &bits, 4);
  unsigned char one[4] = {};
  check(d().cuMemcpyDtoH(one, got + c.worst_index * elem_size(type), elem_size(type)), "download worst element");
  c.worst_got = load_elem(one, type, 0);
  c.worst_want = reference_[c.worst_index];
  c.validation.max_abs_error = worst;
  c.validation.mismatch_fraction = static_cast<double>(c.mismatches) / static_cast<double>(n);
  return c;
}

double Session::measure_sm_clock_mhz() {
  return guarded("SM clock probe", [&] {
    load_utilities();
    const unsigned blocks = static_cast<unsigned>(std::max(1.0, info_.property("sms", 1)));
    Buffer out = alloc(d(), blocks * 16, "clock probe output");
    unsigned long long ns = 5'000'000;
    void* params[] = {&out.ptr, &ns};
    CUresult r = d().cuLaunchKernel(probe_, blocks, 1, 1, 32, 1, 1, 0, stream_, params, nullptr);
    if (r == CUDA_SUCCESS) r = d().cuStreamSynchronize(stream_);
    std::vector<unsigned long long> host(2 * blocks);
    if (r == CUDA_SUCCESS) r = d().cuMemcpyDtoH(host.data(), out.ptr, host.size() * 8);
    d().cuMemFree(out.ptr);
    check(r, "clock probe");
    double sum = 0;
    for (unsigned b = 0; b < blocks; ++b)
      sum += static_cast<double>(host[2 * b]) / static_cast<double>(std::max(1ull, host[2 * b + 1])) * 1e3;
    const double mhz = sum / blocks;
    clock_min_ = clock_min_ == 0 ? mhz : std::min(clock_min_, mhz);
    clock_max_ = std::max(clock_max_, mhz);
    return mhz;
  });
}

}  // namespace ktune::cuda
