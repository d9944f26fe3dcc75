#pragma once
// A small real backend for tuner tests: y = a*x + y whose configs fail the ways kernels fail in
// practice (see test_tuner.cpp), or, with `modelled`, return a noise-free modelled latency.
#include <QtTest>
#include <chrono>
#include <functional>
#include <thread>

#include "ktune/error.h"
#include "ktune/tuner.h"

namespace ktune::test {

using Clock = std::chrono::steady_clock;

// y = a*x + y over n floats, processed in chunks with an unrolled inner loop.
struct AxpyKernel : PreparedKernel {
  int unroll = 1, chunk = 1, tail = 1, stride = 1, delay_us = 0, lose_device = 0, pad = 0;
  bool baseline = false;
};

class AxpySession : public ProblemSession {
 public:
  AxpySession(std::int64_t n, bool modelled)
      : modelled_(modelled), x_(static_cast<std::size_t>(n)), y0_(x_.size()), y_(x_.size()), ref_(x_.size()) {
    for (std::size_t i = 0; i < x_.size(); ++i) {
      x_[i] = static_cast<float>(i % 17) * 0.25f;
      y0_[i] = static_cast<float>(i % 5);
      ref_[i] = 2.0f * x_[i] + y0_[i];
    }
  }
  std::unique_ptr<PreparedKernel> prepare(const Config& c) override {
    auto k = std::make_unique<AxpyKernel>();
    k->unroll = static_cast<int>(c.get("unroll"));
    k->chunk = static_cast<int>(c.get("chunk"));
    k->tail = static_cast<int>(c.get_or("tail", 1));
    k->stride = static_cast<int>(c.get_or("stride", 1));
    k->delay_us = static_cast<int>(c.get_or("delay_us", 0));
    k->lose_device = static_cast<int>(c.get_or("lose_device", 0));
    k->pad = static_cast<int>(c.get_or("pad", 0));
    if (k->unroll != 1 && k->unroll != 2 && k->unroll != 4)
      throw TrialFailure(TrialStatus::CompileError, "no specialization for unroll=" + std::to_string(k->unroll));
    if (k->chunk * 4 > 64 * 1024)
      throw TrialFailure(TrialStatus::LaunchError,
                         "scratch of " + std::to_string(k->chunk * 4) + " bytes exceeds 65536");
    return k;
  }
  Validation validate(PreparedKernel& pk, const Tolerance& tol) override {
    // As a GPU whose context a fault poisoned: nothing can run in this process any more.
    if (static_cast<AxpyKernel&>(pk).lose_device) throw RunError("device lost; run again with --resume");
    run(static_cast<AxpyKernel&>(pk), Clock::time_point::max());
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < y_.size(); ++i) {
      const double err = std::abs(double(y_[i]) - ref_[i]);
      worst = std::max(worst, err);
      if (err > tol.atol + tol.rtol * std::abs(ref_[i])) ++bad;
    }
    const double frac = double(bad) / double(y_.size());
    if (frac > tol.max_mismatch_fraction)
      throw TrialFailure(TrialStatus::WrongResult, "max abs error " + std::to_string(worst));
    return {worst, frac};
  }
  // The baseline: the plain loop, no unrolling, small chunks.
  std::unique_ptr<PreparedKernel> prepare_baseline() override {
    auto k = std::make_unique<AxpyKernel>();
    k->chunk = 64;
    k->baseline = true;
    return k;
  }
  std::string baseline_name() const override { return "plain loop"; }
  // Which kernel each sample ran: 'B' for the baseline, '.' for a config.
  std::string sampled;

  double sample(PreparedKernel& pk, const SampleRequest& r) override {
    sampled += static_cast<AxpyKernel&>(pk).baseline ? 'B' : '.';
    if (modelled_) return modelled_ns(static_cast<AxpyKernel&>(pk));
    const auto t0 = Clock::now();
    for (int i = 0; i < r.launches; ++i) run(static_cast<AxpyKernel&>(pk), r.deadline);
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / r.launches;
  }

 private:
  void run(const AxpyKernel& k, Clock::time_point deadline) {
    y_ = y0_;
    const std::size_t n = y_.size();
    for (std::size_t c0 = 0; c0 < n; c0 += static_cast<std::size_t>(k.chunk)) {
      if (k.delay_us) std::this_thread::sleep_for(std::chrono::microseconds(k.delay_us));
      if (Clock::now() > deadline) throw TrialFailure(TrialStatus::Timeout, "deadline passed");
      const std::size_t end = std::min(n, c0 + static_cast<std::size_t>(k.chunk));
      std::size_t i = c0;
      for (; i + static_cast<std::size_t>(k.unroll) <= end; i += static_cast<std::size_t>(k.unroll))
        for (int u = 0; u < k.unroll; ++u) y_.at((i + u) * static_cast<std::size_t>(k.stride)) += 2.0f * x_[i + u];
      if (k.tail)
        for (; i < end; ++i) y_.at(i * static_cast<std::size_t>(k.stride)) += 2.0f * x_[i];
    }
  }
  // A latency landscape with local minima and no noise: a model-guided strategy then takes the
  // same path on every run, which is what resume tests compare.
  static double modelled_ns(const AxpyKernel& k) {
    return 1000 + std::abs(k.chunk - 512) / 4.0 + 50 * std::abs(k.unroll - 2) + 7 * ((k.pad * 13) % 10);
  }
  bool modelled_;
  std::vector<float> x_, y0_, y_, ref_;
};

class AxpyBackend : public Backend {
 public:
  std::string name() const override { return "testaxpy"; }
  std::vector<DeviceInfo> devices() override {
    DeviceInfo d;
    d.backend = "testaxpy";
    d.name = "Test Axpy Device";
    d.properties = {{"scratch_bytes", 65536}};
    return {d};
  }
  std::vector<KernelFamily> families() const override {
    KernelFamily f;
    f.name = "axpy";
    f.backend = "testaxpy";
    f.key_fields = {{"n", true, "", {}, "elements"}};
    f.bucket_field = "n";
    f.flops_expr = "2*n";
    f.bytes_expr = "12*n";
    f.default_space = SearchSpace({{"unroll", {1, 2, 4}, ""}, {"chunk", {64, 256, 1024}, ""}}, {});
    return {f};
  }
  std::unique_ptr<ProblemSession> open(const DeviceInfo&, const KernelFamily&, const Problem& p,
                                       std::uint64_t) override {
    ++opened;
    auto s = std::make_unique<AxpySession>(p.num("n"), modelled);
    last = s.get();
    return s;
  }
  int opened = 0;
  bool modelled = false;        // sessions return modelled_ns() instead of timing the kernel
  AxpySession* last = nullptr;  // the latest session, alive while its problem runs
};

struct Recorder : TuneObserver {
  std::vector<TuneEvent> events;
  std::function<void(const TuneEvent&)> hook;
  void on_event(const TuneEvent& e) override {
    events.push_back(e);
    if (hook) hook(e);
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& e : events)
      if (auto* p = std::get_if<T>(&e)) out.push_back(*p);
    return out;
  }
};

inline TuneRequest request(AxpyBackend& b, const std::string& shape, SearchSpace space) {
  TuneRequest r;
  r.family = b.family("axpy");
  r.problems = expand_shape(r.family, shape);
  r.space = std::move(space);
  r.measure.warmup_ms = 1;
  r.measure.settle_ms = 0;  // a loop in this process: no clocks to settle, and some tests read the samples' order
  r.measure.min_sample_ms = 0.2;
  r.measure.max_ms_per_config = 5000;  // generous: on a loaded machine no healthy config may time out
  r.measure.slow_abort = false;
  r.compile_threads = 2;
  return r;
}

inline TrialStatus statusOf(const Recorder& rec, const std::string& key) {
  for (const auto& f : rec.all<event::TrialFinished>())
    if (f.trial.config.key() == key) return f.trial.status;
  throw std::runtime_error("no trial " + key);
}

}  // namespace ktune::test
