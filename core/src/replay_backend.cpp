#include "ktune/replay_backend.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <thread>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/stats.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

class ReplayKernel : public PreparedKernel {
 public:
  explicit ReplayKernel(const Trial& t) : trial(t) { compile_time_s = t.compile_time_s; }
  const Trial& trial;
  std::size_t next = 0;
  bool calibrated = false;
};

class ReplaySession : public ProblemSession {
 public:
  ReplaySession(const std::map<std::string, Trial>& trials, std::string problem_key, double pace_ms)
      : trials_(trials), problem_key_(std::move(problem_key)), pace_ms_(pace_ms) {}

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    const auto it = trials_.find(config.key());
    if (it == trials_.end())
      throw TrialFailure(TrialStatus::LaunchError,
                         config.key() + " is not in the recorded landscape of " + problem_key_);
    const Trial& t = it->second;
    switch (t.status) {
      case TrialStatus::Pruned:
      case TrialStatus::CompileError:
      case TrialStatus::LaunchError:
        throw TrialFailure(t.status, recorded(t));
      default:
        return std::make_unique<ReplayKernel>(t);
    }
  }

  Validation validate(PreparedKernel& kernel, const Tolerance&) override {
    if (pace_ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pace_ms_));
    const Trial& t = static_cast<ReplayKernel&>(kernel).trial;
    const bool failed =
        t.status == TrialStatus::WrongResult || t.status == TrialStatus::Crashed || t.status == TrialStatus::Timeout;
    if (failed) throw TrialFailure(t.status, recorded(t));
    if (t.samples_ns.empty())
      throw TrialFailure(t.status == TrialStatus::Ok ? TrialStatus::Crashed : t.status, recorded(t));
    return {t.max_abs_error, t.mismatch_fraction};
  }

  // The recording's measurement loop runs again over the recorded samples, so this search's own
  // best may stop a config early that the recording measured fully. The reverse cannot be replayed:
  // a recorded slow_abort holds the few samples of a lower bound, and sampling on would cycle them
  // into an "ok" median that was never measured. It comes back as it was recorded.
  Measured validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                std::optional<double> best_median_ns) override {
    Measured m = ProblemSession::validate_and_measure(kernel, tol, settings, best_median_ns);
    const Trial& t = static_cast<ReplayKernel&>(kernel).trial;
    if (t.status == TrialStatus::SlowAbort && m.outcome.status != TrialStatus::SlowAbort) {
      m.outcome.status = TrialStatus::SlowAbort;
      m.outcome.samples_ns = t.samples_ns;
      m.outcome.stats = summarize(t.samples_ns);
      m.outcome.note = "recorded slow_abort" + (t.error.empty() ? std::string() : ": " + t.error);
    }
    return m;
  }

  // The device's conditions as the recording measured them.
  Conditions take_conditions(PreparedKernel& kernel) override {
    return conditions_of(static_cast<ReplayKernel&>(kernel).trial.metrics);
  }

  // The measurer's first call calibrates launches per sample and is not kept; it gets the first
  // recorded sample without consuming it, so the kept samples are the recorded ones, in order.
  double sample(PreparedKernel& kernel, const SampleRequest&) override {
    auto& k = static_cast<ReplayKernel&>(kernel);
    const auto& s = k.trial.samples_ns;
    if (!k.calibrated) {
      k.calibrated = true;
      return s.front();
    }
    return s[k.next++ % s.size()];
  }

 private:
  static std::string recorded(const Trial& t) {
    return std::string("recorded ") + to_string(t.status) + (t.error.empty() ? "" : ": " + t.error);
  }
  const std::map<std::string, Trial>& trials_;
  std::string problem_key_;
  double pace_ms_;
};

// Where `config` falls in `space`'s order: its list position, or each value's candidate index;
// nullopt when the space does not hold it.
std::optional<std::vector<std::size_t>> position(const SearchSpace& space,
                                                 const std::map<std::string, std::size_t>& listed,
                                                 const Config& config) {
  if (config.values().size() != space.parameters().size()) return std::nullopt;
  if (space.is_list()) {
    const auto it = listed.find(config.key());
    if (it == listed.end()) return std::nullopt;
    return std::vector<std::size_t>{it->second};
  }
  std::vector<std::size_t> out;
  for (const auto& p : space.parameters()) {
    if (!config.has(p.name)) return std::nullopt;
    const auto v = std::find(p.values.begin(), p.values.end(), config.value(p.name));
    if (v == p.values.end()) return std::nullopt;
    out.push_back(static_cast<std::size_t>(v - p.values.begin()));
  }
  return out;
}

bool is_integer(const std::string& s) {
  long long v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

}  // namespace

SearchSpace recorded_space(const SearchSpace& space, const std::vector<Config>& recorded) {
  std::map<std::string, std::size_t> listed;  // a list space's configs by key
  for (std::size_t i = 0; i < space.configs().size(); ++i) listed.emplace(space.configs()[i].key(), i);
  std::map<std::vector<std::size_t>, Config> held;  // ordered by position: the space's own order
  for (const auto& c : recorded)
    if (auto at = position(space, listed, c)) held.emplace(std::move(*at), c);
  if (held.empty())
    throw InputError("none of the " + std::to_string(recorded.size()) +
                     " recorded configs is in the run's search space: nothing to replay");
  std::vector<Config> configs;
  configs.reserve(held.size());
  for (auto& [at, c] : held) configs.push_back(std::move(c));
  return SearchSpace(space.parameters(), std::move(configs), space.constraints());
}

KernelFamily family_from_run(const RunMetadata& metadata) {
  KernelFamily f;
  f.name = metadata.family;
  f.backend = "replay";
  f.description = "recorded run " + metadata.run_name;
  f.default_space = metadata.space;
  f.source = "replay";
  for (const auto& p : metadata.problems)
    for (const auto& [field, value] : p.fields) {
      const std::string& name = field;  // a lambda may not capture a structured binding before clang 16
      auto it =
          std::find_if(f.key_fields.begin(), f.key_fields.end(), [&](const KeyField& k) { return k.name == name; });
      if (it == f.key_fields.end()) it = f.key_fields.insert(f.key_fields.end(), KeyField{name, true, "", {}, ""});
      it->numeric = it->numeric && is_integer(value);
    }
  return f;
}

ReplayBackend::ReplayBackend(const fs::path& run_dir, std::optional<KernelFamily> family)
    : metadata_(RunStore::read_metadata(run_dir)) {
  family_ = family ? std::move(*family) : family_from_run(metadata_);
  for (auto& t : RunStore::read_trials(run_dir)) trials_[t.problem_key][t.config.key()] = std::move(t);
  if (trials_.empty()) throw InputError(run_dir.string() + ": the run has no trials to replay");
  std::vector<Config> recorded;
  for (const auto& [problem, configs] : trials_)
    for (const auto& [key, t] : configs) recorded.push_back(t.config);
  try {
    space_ = recorded_space(metadata_.space, recorded);
  } catch (const InputError& e) {
    throw InputError(run_dir.string() + ": " + e.what());
  }
}

std::unique_ptr<ReplayBackend> ReplayBackend::for_run(const fs::path& run_dir,
                                                      const std::vector<std::unique_ptr<Backend>>& backends) {
  const RunMetadata m = RunStore::read_metadata(run_dir);
  for (const auto& b : backends)
    if (b->name() == m.backend)
      for (auto& f : b->families())
        if (f.name == m.family) return std::make_unique<ReplayBackend>(run_dir, std::move(f));
  // A worker's or an imported cache's family as the run recorded it (its description, its FLOP count).
  if (!m.family_description.is_null()) {
    KernelFamily f = family_from_description(m.family_description, "replay",
                                             (run_dir / "run_metadata.json").string() + ": family_description");
    f.default_space = m.space;
    return std::make_unique<ReplayBackend>(run_dir, std::move(f));
  }
  return std::make_unique<ReplayBackend>(run_dir);
}

const std::map<std::string, Trial>& ReplayBackend::landscape(const std::string& problem_key) const {
  static const std::map<std::string, Trial> none;
  const auto it = trials_.find(problem_key);
  return it == trials_.end() ? none : it->second;
}

std::size_t ReplayBackend::recorded_configs() const {
  std::size_t n = 0;
  for (const auto& [problem, configs] : trials_) n += configs.size();
  return n;
}

std::unique_ptr<ProblemSession> ReplayBackend::open(const DeviceInfo&, const KernelFamily&, const Problem& problem,
                                                    std::uint64_t) {
  const std::string key = problem.key();
  return std::make_unique<ReplaySession>(landscape(key), key, pace_ms_);
}

TuneRequest ReplayBackend::request(const StrategySpec& strategy) const {
  TuneRequest req;
  req.family = family_;
  req.problems = metadata_.problems;
  req.space = space_;
  req.strategy = strategy;
  req.measure = metadata_.measure;
  // The recorded samples come back in order: no warm-up may consume them, and a replay has no
  // clocks to settle.
  req.measure.warmup_ms = 0;
  req.measure.settle_ms = 0;
  req.tolerance = metadata_.tolerance;
  req.seed = metadata_.seed;
  req.compile_threads = 1;  // preparing is a look-up
  return req;
}

}  // namespace ktune
