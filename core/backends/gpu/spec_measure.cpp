#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "ktune/error.h"
#include "ktune/measurement.h"
#include "spec_kernel.h"
#include "spec_session.h"

// The session's measuring half: validation, the two timing methods, recovery from faults, and
// ktune's own kernels they use (spec_session.cpp sets the problem up).
namespace ktune::gpu {

namespace {

using Clock = std::chrono::steady_clock;

bool no_deadline(Clock::time_point t) { return t == Clock::time_point{}; }

}  // namespace

template <class F>
auto SpecSession::guarded(const std::string& what, F&& fn) -> decltype(fn()) {
  device_->check_usable();
  try {
    // The context is current per thread: a worker (ktune worker) measures on another thread
    // than the one that opened the session.
    device_->make_current();
    return fn();
  } catch (const ApiError& e) {
    if (!e.sticky()) throw TrialFailure(TrialStatus::LaunchError, what + ": " + e.what());
    const std::string message = what + ": " + e.what();
    if (recover()) throw TrialFailure(TrialStatus::Crashed, message + " (the context was reset and the run goes on)");
    throw TrialFailure(TrialStatus::Crashed,
                       message + "; " + device_->lost() + ": resume the run in a new process (--resume)");
  }
}

bool SpecSession::recover() {
  ++recoveries_;
  // Every handle of the faulted context dies with it (the owners then release nothing); only
  // host state survives.
  if (!device_->reset()) return false;
  device_->make_current();
  workspaces_.clear();
  flush_ = Buffer();
  gemm_b_ = Buffer();
  baseline_c_ = Buffer();
  block_scaled_a_scale_ = Buffer();
  ref_dev_ = Buffer();
  compare_out_ = Buffer();
  launch_events_.clear();
  create_stream_and_events();
  allocate_buffers();
  return true;
}

void SpecSession::wait(Handle event, Clock::time_point deadline, const std::string& what) {
  for (int spins = 0;; ++spins) {
    if (device_->finished(event)) return;
    if (!no_deadline(deadline) && Clock::now() > deadline) {
      device_->synchronize(stream());  // buffers must not be touched while it runs
      throw TrialFailure(TrialStatus::Timeout, what + ": still running at the time cap");
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Validation SpecSession::validate(PreparedKernel& kernel, const Tolerance& run_tol) {
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
    const Buffer& b = copies_[0].at(out.name);
    fill_output(out);
    k.enqueue(*this, 0);
    device_->record(ev_stop_.get(), stream());
    wait(ev_stop_.get(), Clock::now() + std::chrono::seconds(60), "validation run");
    if (reference_.empty()) return;
    if (!reduced && compared_.empty()) on_device = compare_on_device(b.ptr(), type, tol);
    // A failure is told on the host, which sees which elements were never written.
    if (on_device && on_device->validation.mismatch_fraction <= tol.max_mismatch_fraction) return;
    host.resize(b.bytes());
    device_->download(host.data(), b.ptr(), b.bytes());
  });
  if (reference_.empty()) return {};
  if (reduced) return check_reduced(k, host, type, tol);
  const CompareScope scope{compared_.empty() ? nullptr : &compared_, out.init.kind == ArgInit::Kind::Poison};
  const Comparison c = host.empty() ? *on_device : compare(host.data(), type, reference_, tol, scope);
  if (c.validation.mismatch_fraction > tol.max_mismatch_fraction)
    throw TrialFailure(TrialStatus::WrongResult,
                       mismatch_message(c, reference_.size(), tol, gemm_ ? gemm_->name() : "the reference"));
  return c.validation;
}

Validation SpecSession::check_reduced(const Launchable& k, const std::vector<unsigned char>& host, ElemType type,
                                      const Tolerance& tol) const {
  const Config& config = k.config() ? *k.config() : sizing_config_;
  const SpecCheck& c = spec_->check();
  double got = 0;
  try {
    got = spec_->reduced(host.data(), type, host.size() / elem_size(type), problem_, config, vars_);
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

double SpecSession::sample(PreparedKernel& kernel, const SampleRequest& req) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  const int launches = std::max(1, req.launches);
  return guarded("timed run", [&] {
    k.ensure_loaded(*this);
    const int copies = req.rotate_buffers ? copies_for_rotation() : 1;
    ensure_copies(copies);
    zero_workspaces();
    return req.method == Method::Amortized ? time_amortized(k, launches, copies, req.deadline)
                                           : time_per_launch(k, launches, copies, req.deadline);
  });
}

// One event pair around a graph of `launches` launches, captured once and replayed while the
// request and the buffers stay the same (buffers move at workspace growth and resets).
double SpecSession::time_amortized(Launchable& k, int launches, int copies, Clock::time_point deadline) {
  if (!k.graph.alive() || k.graph_launches != launches || k.graph_copies != copies || k.graph_epoch != epoch_) {
    k.graph.reset();
    device_->begin_capture(stream());
    Handle g = nullptr;
    try {
      for (int i = 0; i < launches; ++i) k.enqueue(*this, i % copies);
    } catch (...) {
      try {
        if ((g = device_->end_capture(stream()))) device_->destroy_graph(g);
      } catch (const ApiError&) {
        // The capture is over either way; the launch's own error is the one to report.
      }
      throw;
    }
    k.graph = Graph(device_, device_->end_capture(stream()));
    k.graph_launches = launches;
    k.graph_copies = copies;
    k.graph_epoch = epoch_;
  }
  device_->record(ev_start_.get(), stream());
  device_->launch_graph(k.graph.get(), stream());
  device_->record(ev_stop_.get(), stream());
  read_conditions(k);
  wait(ev_stop_.get(), deadline, "timed run");
  return static_cast<double>(device_->elapsed_ms(ev_start_.get(), ev_stop_.get())) * 1e6 / launches;
}

// An event pair around each launch, L2 evicted before it by writing a buffer twice its size.
double SpecSession::time_per_launch(Launchable& k, int launches, int copies, Clock::time_point deadline) {
  if (!flush_) flush_ = Buffer(device_, static_cast<std::size_t>(2 * device_->l2_bytes()), "L2 flush buffer");
  while (static_cast<int>(launch_events_.size()) < launches)
    launch_events_.emplace_back(Event(device_, device_->create_event()), Event(device_, device_->create_event()));
  for (int i = 0; i < launches; ++i) {
    device_->fill32(flush_.ptr(), static_cast<std::uint32_t>(i), flush_.bytes() / 4, stream());
    device_->record(launch_events_[i].first.get(), stream());
    k.enqueue(*this, i % copies);
    device_->record(launch_events_[i].second.get(), stream());
  }
  read_conditions(k);
  wait(launch_events_[launches - 1].second.get(), deadline, "timed run");
  double total_ms = 0;
  for (int i = 0; i < launches; ++i)
    total_ms += device_->elapsed_ms(launch_events_[i].first.get(), launch_events_[i].second.get());
  return total_ms * 1e6 / launches;
}

// Host work while the device runs the sample, so it costs the timing nothing. A reading is a few
// driver calls (tens of µs); one every 5 ms is plenty for a clock that moves over hundreds.
void SpecSession::read_conditions(Launchable& k) {
  const auto now = Clock::now();
  if (!k.readings.empty() && now - k.last_reading < std::chrono::milliseconds(5)) return;
  if (auto r = device_->read_conditions()) {
    k.readings.push_back(*r);
    k.last_reading = now;
  }
}

Conditions SpecSession::take_conditions(PreparedKernel& kernel) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  Conditions c = summarize_conditions(k.readings);
  k.readings.clear();
  return c;
}

void SpecSession::load_utilities() {
  if (utilities_.alive()) return;
  const auto& u = toolchain_->utilities();
  std::vector<std::string> entries{"ktune_compare"};
  if (u.clock_probe) entries.push_back("ktune_clock_probe");
  const CompiledModule m = toolchain_->compile(u.program, {}, entries);
  utilities_ = Module(device_, device_->load_module(m.binary));
  compare_ = device_->function(utilities_.get(), m.lowered[0]);
  probe_ = u.clock_probe ? device_->function(utilities_.get(), m.lowered[1]) : nullptr;
}

std::optional<Comparison> SpecSession::compare_on_device(DevicePtr got, ElemType type, const Tolerance& tol) {
  const int code = type == ElemType::F16 ? 0 : type == ElemType::BF16 ? 1 : type == ElemType::F32 ? 2 : -1;
  const std::size_t n = reference_.size();
  if (code < 0 || n == 0 || n >= (1ull << 32)) return std::nullopt;  // the host compares those
  load_utilities();
  // The reference lives on the device as f32, uploaded once (again after a context reset).
  if (!ref_dev_) {
    const std::vector<float> f(reference_.begin(), reference_.end());
    ref_dev_ = Buffer(device_, f.size() * 4, "device reference");
    upload(ref_dev_.ptr(), f.data(), f.size() * 4);
  }
  if (!compare_out_) compare_out_ = Buffer(device_, 16, "compare result");
  device_->fill8(compare_out_.ptr(), 0, 16, stream());
  DevicePtr want = ref_dev_.ptr(), out = compare_out_.ptr();
  unsigned count = static_cast<unsigned>(n);
  int type_code = code;
  float atol = static_cast<float>(tol.atol), rtol = static_cast<float>(tol.rtol);
  void* params[] = {&got, &type_code, &want, &count, &atol, &rtol, &out};
  LaunchGeometry g;
  g.entry = "ktune_compare";
  g.grid[0] = std::min<std::uint64_t>((n + 255) / 256, 32ull * std::max(1, device_->compute_units()));
  g.block[0] = 256;
  device_->launch(compare_, g, stream(), params);
  unsigned long long result[2] = {0, 0};
  device_->synchronize(stream());
  device_->download(result, compare_out_.ptr(), 16);
  Comparison c;
  c.mismatches = result[0];
  c.worst_index = static_cast<std::size_t>(result[1] & 0xffffffffu);
  const auto bits = static_cast<std::uint32_t>(result[1] >> 32);
  float worst = 0;
  std::memcpy(&worst, &bits, 4);
  unsigned char one[4] = {};
  device_->download(one, got + c.worst_index * elem_size(type), elem_size(type));
  c.worst_got = load_elem(one, type, 0);
  c.worst_want = reference_[c.worst_index];
  c.validation.max_abs_error = worst;
  c.validation.mismatch_fraction = static_cast<double>(c.mismatches) / static_cast<double>(n);
  return c;
}

double SpecSession::measure_sm_clock_mhz() {
  if (!toolchain_->utilities().clock_probe) throw RunError("this backend has no SM clock probe");
  return guarded("SM clock probe", [&] {
    load_utilities();
    const unsigned blocks = static_cast<unsigned>(std::max(1, device_->compute_units()));
    Buffer out(device_, blocks * 16, "clock probe output");
    DevicePtr ptr = out.ptr();
    unsigned long long ns = 5'000'000;
    void* params[] = {&ptr, &ns};
    LaunchGeometry g;
    g.entry = "ktune_clock_probe";
    g.grid[0] = blocks;
    g.block[0] = 32;
    device_->launch(probe_, g, stream(), params);
    device_->synchronize(stream());
    std::vector<unsigned long long> host(2 * blocks);
    device_->download(host.data(), ptr, host.size() * 8);
    double sum = 0;
    for (unsigned b = 0; b < blocks; ++b)
      sum += static_cast<double>(host[2 * b]) / static_cast<double>(std::max(1ull, host[2 * b + 1])) * 1e3;
    const double mhz = sum / blocks;
    clock_min_ = clock_min_ == 0 ? mhz : std::min(clock_min_, mhz);
    clock_max_ = std::max(clock_max_, mhz);
    return mhz;
  });
}

}  // namespace ktune::gpu
