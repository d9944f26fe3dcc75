#include "ktune/run_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();
constexpr double kHourMs = 3.6e6;  // no single config or sample is worth more than an hour

const Option<StrategySpec> kStrategyOptions[] = {
    {"kind", "--strategy",
     "exhaustive | random | local (hill climbing from the best so far) | genetic (population, tournament, crossover, "
     "mutation to neighbouring values) | bayes (Gaussian process, expected improvement)",
     &StrategySpec::kind},
    {"budget",
     "--budget",
     "Configs per problem at most (0 = all); exhaustive ignores it",
     &StrategySpec::budget,
     {0, static_cast<double>(kMaxSpaceSize)}},
    {"seed",
     "--seed",
     "Seed of the random, local, genetic and bayes strategies (the inputs have a seed of their own, "
     "--workload-seed)",
     &StrategySpec::seed,
     {0, kUnbounded}},
    {"time_budget_s",
     "--time-budget",
     "Search time per problem: 60s, 5m, 1h or plain seconds, at most 30 days (default: no limit). The search stops "
     "between two trials once the problem has spent it; on --resume the time its recorded trials took (from their "
     "start times) counts against it, so a resumed run gets only what is left",
     &StrategySpec::time_budget_s,
     {0, 30 * 24 * 3600.0},
     false,
     parse_duration_s},
};

const Option<RunSettings> kWorkloadSeed = {
    "seed",
    "--workload-seed",
    "Seed of the workload: the inputs every config of a problem sees (their values, a MoE routing, a paged KV "
    "cache's lengths and page table), kept apart from the strategy's seed so that a search repeated with another "
    "strategy seed times the same work",
    &RunSettings::seed,
    {0, kUnbounded}};

const Option<MeasureSettings> kMeasureOptions[] = {
    {"method", "--method", "amortized (serving throughput) | per_launch (cold-cache latency)",
     &MeasureSettings::method},
    {"noise_target",
     "--noise-target",
     "Stop sampling at this relative noise (standard error of the mean / mean)",
     &MeasureSettings::noise_target,
     {1e-6, 1}},
    {"min_samples",
     "--min-samples",
     "Samples before the noise target may stop",
     &MeasureSettings::min_samples,
     {1, 1e6}},
    {"max_samples",
     "--max-samples",
     "Samples at most (at least --min-samples)",
     &MeasureSettings::max_samples,
     {1, 1e6}},
    {"warmup_ms", "--warmup-ms", "Warm-up time per config", &MeasureSettings::warmup_ms, {0, kHourMs}},
    {"settle_ms",
     "--settle-ms",
     "Warm-up after the device sat idle (the run's start, a wait for compiles), at most half of "
     "--max-ms-per-config: a GPU at its power cap lowers its clocks within half a second of load, so a config "
     "timed straight after a pause would be timed at clocks the others never see (0: off)",
     &MeasureSettings::settle_ms,
     {0, kHourMs}},
    {"min_sample_ms",
     "--min-sample-ms",
     "amortized: launches per sample chosen so that one sample takes this long (0: one launch per sample)",
     &MeasureSettings::min_sample_ms,
     {0, kHourMs}},
    {"max_ms_per_config",
     "--max-ms-per-config",
     "Time cap per config (warm-up + samples)",
     &MeasureSettings::max_ms_per_config,
     {1, kHourMs}},
    {"slow_abort",
     "--no-slow-abort",
     "Measure every config fully, even hopeless ones",
     &MeasureSettings::slow_abort,
     {},
     true},
    {"slow_abort_margin",
     "--slow-abort-margin",
     "Stop a config once its fastest sample is this fraction slower than the best median (0.25: 25 %)",
     &MeasureSettings::slow_abort_margin,
     {0, 1000}},
    {"rotate_buffers", "--rotate-buffers", "Rotate input copies larger than the cache (cold-cache throughput)",
     &MeasureSettings::rotate_buffers},
    {"remeasure_top",
     "--remeasure-top",
     "After the search, time its best K configs again in alternation and let the fastest of those paired numbers "
     "win (0 or 1: the search's best wins; on --replay the recorded samples are drawn again)",
     &MeasureSettings::remeasure_top,
     {0, 1000}},
};

const Option<Tolerance> kToleranceOptions[] = {
    {"atol", "--atol", "Validation absolute tolerance", &Tolerance::atol, {0, kUnbounded}},
    {"rtol", "--rtol", "Validation relative tolerance", &Tolerance::rtol, {0, kUnbounded}},
    {"max_mismatch_fraction",
     "--max-mismatch",
     "Allowed fraction of elements outside tolerance",
     &Tolerance::max_mismatch_fraction,
     {0, 1}},
};

// Shortest text that reads back as the same double, whole numbers in full (3600000, not
// 3.6e+06); NaN and infinities as a person writes them.
std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::abs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <class S>
std::string name_of(const char* section, const Option<S>& o, OptionNames names) {
  return names == OptionNames::Cli ? std::string(o.flag) : std::string(section) + "." + o.key;
}

template <class T>
constexpr bool kIsNumber = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// Each number of `s` against its range.
template <class S>
void check_each(const S& s, const char* section, std::span<const Option<S>> options, OptionNames names) {
  for (const auto& o : options)
    std::visit(
        [&](auto member) {
          using T = std::remove_cvref_t<decltype(s.*member)>;
          if constexpr (kIsNumber<T>)
            check_number(name_of(section, o, names), static_cast<double>(s.*member), o.range, std::is_integral_v<T>);
        },
        o.member);
}

// Reading one JSON value into a field of type T; `name` is "<section>.<key>" for errors.
[[noreturn]] void expected(const std::string& name, const char* what, const nlohmann::json& v) {
  throw InputError(name + ": expected " + what + ", got " + json_excerpt(v));
}

void read_value(const nlohmann::json& v, const std::string& name, const Range&, bool& out) {
  if (!v.is_boolean()) expected(name, "true or false", v);
  out = v.get<bool>();
}
void read_value(const nlohmann::json& v, const std::string& name, const Range&, std::string& out) {
  if (!v.is_string()) expected(name, "a string", v);
  out = v.get<std::string>();
}
void read_value(const nlohmann::json& v, const std::string& name, const Range&, Method& out) {
  if (!v.is_string()) expected(name, "a string", v);
  try {
    out = method_from_string(v.get<std::string>());
  } catch (const InputError& e) {
    throw InputError(name + ": " + e.what());
  }
}
void read_value(const nlohmann::json& v, const std::string& name, const Range&, double& out) {
  if (!v.is_number()) expected(name, "a number", v);
  out = v.get<double>();
}
// Integers are checked against their range before they are narrowed: 4294967297 is not 1.
template <class T>
requires std::is_integral_v<T>
void read_value(const nlohmann::json& v, const std::string& name, const Range& range, T& out) {
  if (!v.is_number_integer()) expected(name, "an integer", v);
  const bool is_unsigned = v.is_number_unsigned();
  const double value =
      is_unsigned ? static_cast<double>(v.get<std::uint64_t>()) : static_cast<double>(v.get<std::int64_t>());
  check_number(name, value, range, true);
  out = is_unsigned ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}

// A section's object: missing keys keep `s`'s values (older files still load), anything else
// is read, type-checked and validated, errors naming "<section>.<key>".
template <class S>
S read_section(const nlohmann::json& j, const char* section, std::span<const Option<S>> options, S s) {
  if (!j.is_object()) expected(section, "an object", j);
  for (const auto& o : options) {
    const auto it = j.find(o.key);
    if (it == j.end()) continue;
    std::visit([&](auto member) { read_value(*it, std::string(section) + "." + o.key, o.range, s.*member); }, o.member);
  }
  validate(s, OptionNames::Json);
  return s;
}

template <class S>
nlohmann::json write_section(const S& s, std::span<const Option<S>> options) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& o : options)
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(s.*member)>, Method>)
            j[o.key] = to_string(s.*member);
          else
            j[o.key] = s.*member;
        },
        o.member);
  return j;
}

}  // namespace

bool Range::contains(double v) const { return std::isfinite(v) && v >= min && v <= max; }

std::string Range::describe(bool integer) const {
  const std::string what = integer ? "an integer" : "a number";
  if (std::isinf(max)) return what + " >= " + number_text(min);
  return what + " in [" + number_text(min) + ", " + number_text(max) + "]";
}

void check_number(const std::string& name, double value, const Range& range, bool integer) {
  if (!std::isfinite(value))
    throw InputError(name + ": " + number_text(value) + " is not a finite number; give " + range.describe(integer));
  if (!range.contains(value))
    throw InputError(name + ": " + number_text(value) + " is out of range; give " + range.describe(integer));
}

std::span<const Option<StrategySpec>> strategy_options() { return kStrategyOptions; }
std::span<const Option<MeasureSettings>> measure_options() { return kMeasureOptions; }
std::span<const Option<Tolerance>> tolerance_options() { return kToleranceOptions; }
const Option<RunSettings>& workload_seed_option() { return kWorkloadSeed; }

template <class S>
const Option<S>& find_option(std::span<const Option<S>> options, std::string_view key) {
  const auto it = std::find_if(options.begin(), options.end(), [&](const Option<S>& o) { return o.key == key; });
  if (it == options.end()) throw std::logic_error("no run option '" + std::string(key) + "'");
  return *it;
}
template const Option<StrategySpec>& find_option(std::span<const Option<StrategySpec>>, std::string_view);
template const Option<MeasureSettings>& find_option(std::span<const Option<MeasureSettings>>, std::string_view);
template const Option<Tolerance>& find_option(std::span<const Option<Tolerance>>, std::string_view);

void validate(const StrategySpec& s, OptionNames names) {
  check_each(s, "strategy", strategy_options(), names);
  const auto kinds = strategy_names();
  if (std::find(kinds.begin(), kinds.end(), s.kind) == kinds.end()) {
    std::string list;
    for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
    throw InputError(name_of("strategy", find_option(strategy_options(), "kind"), names) + ": '" + s.kind +
                     "' is not a strategy; give one of " + list);
  }
}

void validate(const MeasureSettings& m, OptionNames names) {
  check_each(m, "measure", measure_options(), names);
  if (m.max_samples < m.min_samples) {
    const auto& options = measure_options();
    throw InputError(name_of("measure", find_option(options, "max_samples"), names) + ": " +
                     std::to_string(m.max_samples) + " is less than " +
                     name_of("measure", find_option(options, "min_samples"), names) + " (" +
                     std::to_string(m.min_samples) + "); give at least " + std::to_string(m.min_samples));
  }
}

void validate(const Tolerance& t, OptionNames names) { check_each(t, "tolerance", tolerance_options(), names); }

void validate(const RunSettings& s, OptionNames names) {
  validate(s.strategy, names);
  validate(s.measure, names);
  validate(s.tolerance, names);
}

nlohmann::json to_json(const StrategySpec& s) { return write_section(s, strategy_options()); }
nlohmann::json to_json(const MeasureSettings& m) { return write_section(m, measure_options()); }
nlohmann::json to_json(const Tolerance& t) { return write_section(t, tolerance_options()); }

StrategySpec strategy_spec_from_json(const nlohmann::json& j, StrategySpec base) {
  return read_section(j, "strategy", strategy_options(), std::move(base));
}
MeasureSettings measure_settings_from_json(const nlohmann::json& j, MeasureSettings base) {
  return read_section(j, "measure", measure_options(), base);
}
Tolerance tolerance_from_json(const nlohmann::json& j, Tolerance base) {
  return read_section(j, "tolerance", tolerance_options(), base);
}

}  // namespace ktune
