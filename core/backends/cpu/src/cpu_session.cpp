#include "cpu_session.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "ktune/error.h"

namespace ktune::cpu {

State::State(DeviceInfo d)
    : device(std::move(d)),
      hw_threads(static_cast<int>(device.property("threads_hw", 1))),
      workspace_limit(device.property("max_workspace_bytes")),
      pool(hw_threads) {}

void State::evict_caches() {
  std::lock_guard lock(flush_mutex);
  const std::size_t bytes = static_cast<std::size_t>(llc_bytes() * 1.25) + (1 << 20);
  if (flush.size() < bytes) flush.resize(bytes);
  const unsigned char value = ++flush_value;
  const int T = pool.size();
  pool.run(T, [&](int t) {
    const std::size_t b = flush.size() * t / T, e = flush.size() * (t + 1) / T;
    std::memset(flush.data() + b, value, e - b);
  });
}

namespace {

void timed_out_unless(bool done) {
  if (!done)
    throw TrialFailure(TrialStatus::Timeout,
                       "stopped inside a launch: the per-config time cap passed "
                       "(--max-ms-per-config)");
}

}  // namespace

Validation CpuSession::validate(PreparedKernel& kernel, const Tolerance& tol) {
  const CpuKernel& k = own(kernel);
  const std::size_t n = output_size();
  poison_output();
  StopFlag no_deadline{Clock::time_point{}};
  launch(k, 0, no_deadline);
  const float* out = output_as_f32();
  const std::vector<double>& ref = reference();
  std::size_t bad = 0, worst = 0;
  double max_err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double err = std::isnan(out[i]) ? INFINITY : std::abs(out[i] - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::abs(ref[i]))) ++bad;
    if (i == 0 || err > max_err) {
      max_err = err;
      worst = i;
    }
  }
  Validation v{max_err, static_cast<double>(bad) / static_cast<double>(n)};
  if (v.mismatch_fraction > tol.max_mismatch_fraction) {
    std::ostringstream msg;
    msg << bad << " of " << n << " outputs (" << v.mismatch_fraction * 100
        << "%) differ from the reference beyond atol=" << tol.atol << " + rtol=" << tol.rtol << "*|ref| (allowed "
        << tol.max_mismatch_fraction * 100 << "%); max abs error " << max_err << " at " << where(worst) << ": got "
        << out[worst] << ", expected " << ref[worst];
    throw TrialFailure(TrialStatus::WrongResult, msg.str());
  }
  return v;
}

void CpuSession::poison_output() {
  std::fill(output(), output() + output_size(), std::numeric_limits<float>::quiet_NaN());
}

Measured CpuSession::validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                          std::optional<double> best_median_ns) {
  if (settings.rotate_buffers) rotation_copies();
  return ProblemSession::validate_and_measure(kernel, tol, settings, best_median_ns);
}

double CpuSession::sample(PreparedKernel& kernel, const SampleRequest& req) {
  const CpuKernel& k = own(kernel);
  StopFlag stop(req.deadline);
  const std::size_t copies = req.rotate_buffers ? rotation_copies() : 1;
  const int launches = std::max(1, req.launches);
  double ns = 0;
  if (req.method == Method::Amortized) {
    const auto t0 = Clock::now();
    for (int i = 0; i < launches; ++i) timed_out_unless(launch(k, next_slot(copies), stop));
    ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  } else {
    for (int i = 0; i < launches; ++i) {
      state_->evict_caches();
      const auto t0 = Clock::now();
      const bool done = launch(k, next_slot(copies), stop);
      ns += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      timed_out_unless(done);
    }
  }
  return ns / launches;
}

const CpuKernel& CpuSession::own(PreparedKernel& kernel) const {
  auto* k = dynamic_cast<CpuKernel*>(&kernel);
  if (!k || k->owner != this)
    throw TrialFailure(TrialStatus::Crashed, "kernel was prepared by another problem session; prepare it on this one");
  return *k;
}

std::size_t CpuSession::rotation_copies() {
  if (rotation_.size() == 0) {
    stride_ = align64(input_bytes());
    const double want = state_->llc_bytes() * 1.25;
    const std::size_t extra = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(want / stride_)));
    rotation_.resize(extra * stride_);
    for (std::size_t c = 0; c < extra; ++c) copy_inputs(rotation_.data() + c * stride_);
  }
  return rotation_.size() / stride_ + 1;
}

Parameter threads_param() {
  return {"threads", {1, 2, 4, 8, 16, 32, 64}, "worker threads from the backend's persistent pool"};
}

std::vector<Constraint> cpu_constraints() {
  return {
      {"vec <= simd_width_f32", "vector width beyond this CPU's widest SIMD (16: AVX-512, 8: AVX2, 4: portable)"},
      {"2 * vec >= simd_width_f32", "less than half this CPU's SIMD width: always slower than the wider kernel"},
      {"threads <= threads_hw", "more threads than the CPU has hardware threads"},
  };
}

void check_memory(double bytes, const std::string& what) {
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (phys > 0 && bytes > phys / 2)
    throw InputError(what + " needs " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                     " MiB for inputs, output and reference, more than half of this machine's " +
                     std::to_string(static_cast<long long>(phys / (1 << 20))) + " MiB; choose a smaller shape");
}

long positive_field(const Problem& p, const char* name) {
  const std::int64_t v = p.num(name);
  if (v < 1 || v > (1LL << 31))
    throw InputError(p.family + " field " + name + "=" + std::to_string(v) + " must be between 1 and 2^31");
  return static_cast<long>(v);
}

void require_text(const Problem& p, const char* name, const char* expected) {
  if (p.field(name) != expected)
    throw InputError(p.family + " on cpu supports " + name + "=" + expected + " only, got " + p.field(name));
}

}  // namespace ktune::cpu
