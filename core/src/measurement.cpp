#include "ktune/measurement.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "ktune/error.h"

namespace ktune {

std::string to_string(Method m) { return m == Method::Amortized ? "amortized" : "per_launch"; }

Method method_from_string(const std::string& s) {
  if (s == "amortized") return Method::Amortized;
  if (s == "per_launch" || s == "per-launch") return Method::PerLaunch;
  throw InputError("'" + s +
                   "' is not a method: give 'amortized' (serving throughput) or 'per_launch' (cold-cache latency)");
}

double checked_sample(double ns, const std::string& source) {
  if (ns > 0 && std::isfinite(ns)) return ns;
  std::ostringstream value;
  value << ns;
  throw TrialFailure(TrialStatus::Crashed, source + " returned a sample of " + value.str() +
                                               " ns; a sample is a time per launch, positive and finite");
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// When this thread's device last ran a sample: each device is measured by a thread of its own
// (DevicePool's lanes), a worker's in its own process. After a gap longer than kIdleGapMs the
// device counts as idle, and its next config's warm-up lasts settle_ms (MeasureSettings).
thread_local std::optional<Clock::time_point> t_last_busy;
constexpr double kIdleGapMs = 100;

// A sample the backend returned, checked; the device has just been busy.
double busy_sample(double ns) {
  ns = checked_sample(ns, "the backend");
  t_last_busy = Clock::now();
  return ns;
}

double warmup_ms(const MeasureSettings& settings, double cap_ms) {
  const bool idle = !t_last_busy || ms_since(*t_last_busy) > kIdleGapMs;
  return idle ? std::max(settings.warmup_ms, std::min(settings.settle_ms, cap_ms / 2)) : settings.warmup_ms;
}

// A one-launch request with the method, buffer rotation and a deadline `cap_ms` after `start`.
SampleRequest first_request(const MeasureSettings& settings, Clock::time_point start, double cap_ms) {
  SampleRequest req;
  req.method = settings.method;
  req.rotate_buffers = settings.rotate_buffers;
  req.deadline = start + std::chrono::microseconds(static_cast<std::int64_t>(cap_ms * 1000));
  req.launches = 1;
  return req;
}

// Amortized: enough launches per sample, after a first launch of `first_ns`, for a sample to last
// min_sample_ms and time reliably. Per-launch: one.
int launches_per_sample(const MeasureSettings& settings, double first_ns) {
  if (settings.method != Method::Amortized || first_ns <= 0) return 1;
  return static_cast<int>(std::clamp(std::ceil(settings.min_sample_ms * 1e6 / first_ns), 1.0, 1e6));
}

}  // namespace

MeasureOutcome measure(const MeasureSettings& settings, const std::function<double(const SampleRequest&)>& timed,
                       std::optional<double> best_median_ns) {
  const auto sample = [&](const SampleRequest& r) { return busy_sample(timed(r)); };
  const auto start = Clock::now();
  const double cap_ms = settings.max_ms_per_config;
  const double warmup = warmup_ms(settings, cap_ms);
  SampleRequest req = first_request(settings, start, cap_ms);

  MeasureOutcome out;
  auto timeout = [&](const std::string& why) {
    out.status = TrialStatus::Timeout;
    out.note = why;
    out.stats = summarize(out.samples_ns);
    return out;
  };

  // The first launch calibrates how many launches make a sample long enough to time reliably.
  const double first_ns = sample(req);
  if (ms_since(start) > cap_ms)
    return timeout("one launch took " + std::to_string(first_ns / 1e6) + " ms; the cap is " + std::to_string(cap_ms) +
                   " ms per config (--max-ms-per-config)");
  req.launches = launches_per_sample(settings, first_ns);

  while (ms_since(start) < warmup) {
    sample(req);
    if (ms_since(start) > cap_ms) return timeout("warm-up exceeded the time cap of " + std::to_string(cap_ms) + " ms");
  }

  const auto min_samples = static_cast<std::size_t>(std::max(1, settings.min_samples));
  const auto max_samples = static_cast<std::size_t>(std::max(settings.min_samples, settings.max_samples));
  while (out.samples_ns.size() < max_samples) {
    try {
      out.samples_ns.push_back(sample(req));
    } catch (const TrialFailure& e) {
      // The backend stopped a sample at the deadline: with enough samples that is the cap
      // ending the measurement, not a config too slow to measure.
      if (e.status() != TrialStatus::Timeout || out.samples_ns.size() < min_samples) throw;
      out.note = "time cap reached at noise " + std::to_string(robust_rel_error(out.samples_ns) * 100) + "%";
      break;
    }
    const std::size_t n = out.samples_ns.size();
    if (settings.slow_abort && best_median_ns && n >= 3) {
      const double fastest = *std::min_element(out.samples_ns.begin(), out.samples_ns.end());
      if (fastest > *best_median_ns * (1.0 + settings.slow_abort_margin)) {
        out.status = TrialStatus::SlowAbort;
        out.note = "fastest of " + std::to_string(n) + " samples is " + std::to_string(fastest / *best_median_ns) +
                   "x the best median so far";
        break;
      }
    }
    if (n >= min_samples && robust_rel_error(out.samples_ns) <= settings.noise_target) break;
    if (ms_since(start) > cap_ms) {
      if (n < min_samples)
        return timeout("only " + std::to_string(n) + " of " + std::to_string(min_samples) +
                       " samples fit in the cap of " + std::to_string(cap_ms) + " ms per config");
      out.note = "time cap reached at noise " + std::to_string(robust_rel_error(out.samples_ns) * 100) + "%";
      break;
    }
  }
  out.stats = summarize(out.samples_ns);
  return out;
}

std::vector<MeasureOutcome> measure_alternating(const MeasureSettings& settings, const std::vector<Sampler>& fns) {
  const auto start = Clock::now();
  const std::size_t n = fns.size();
  const double cap_ms = static_cast<double>(std::max<std::size_t>(1, n)) * settings.max_ms_per_config;
  std::vector<SampleRequest> req(n, first_request(settings, start, cap_ms));
  const double warmup = warmup_ms(settings, cap_ms);
  const auto sample = [&](std::size_t i) { return busy_sample(fns[i](req[i])); };
  for (std::size_t i = 0; i < n; ++i) req[i].launches = launches_per_sample(settings, sample(i));
  while (ms_since(start) < warmup && ms_since(start) < cap_ms)
    for (std::size_t i = 0; i < n; ++i) sample(i);

  std::vector<MeasureOutcome> out(n);
  const auto min_samples = static_cast<std::size_t>(std::max(1, settings.min_samples));
  const auto max_samples = static_cast<std::size_t>(std::max(settings.min_samples, settings.max_samples));
  auto done = [&](const MeasureOutcome& o) {
    const std::size_t k = o.samples_ns.size();
    return k >= max_samples || (k >= min_samples && robust_rel_error(o.samples_ns) <= settings.noise_target);
  };
  auto too_few = [&] {
    return std::any_of(out.begin(), out.end(),
                       [&](const MeasureOutcome& o) { return o.samples_ns.size() < min_samples; });
  };
  while (!std::all_of(out.begin(), out.end(), done)) {
    // All keep sampling until all are done: every sample of one has neighbours of the others.
    try {
      for (std::size_t i = 0; i < n; ++i)
        if (out[i].samples_ns.size() < max_samples) out[i].samples_ns.push_back(sample(i));
    } catch (const TrialFailure& e) {
      if (e.status() != TrialStatus::Timeout || too_few()) throw;
      break;
    }
    if (ms_since(start) > cap_ms) {
      if (too_few())
        throw TrialFailure(TrialStatus::Timeout, "the alternating measurement did not reach " +
                                                     std::to_string(min_samples) + " samples each in " +
                                                     std::to_string(cap_ms) + " ms");
      for (auto& o : out)
        o.note = "time cap reached at noise " + std::to_string(robust_rel_error(o.samples_ns) * 100) + "%";
      break;
    }
  }
  for (auto& o : out) o.stats = summarize(o.samples_ns);
  return out;
}

std::pair<MeasureOutcome, MeasureOutcome> measure_pair(const MeasureSettings& settings, const Sampler& a,
                                                       const Sampler& b) {
  auto both = measure_alternating(settings, {a, b});
  return {std::move(both[0]), std::move(both[1])};
}

}  // namespace ktune
