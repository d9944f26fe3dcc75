#pragma once
// Every run option declared once, as Kernel Tuner declares its options: JSON key, `ktune tune`
// flag, help text and accepted values, next to the member that holds it (the member's initialiser
// is the default). JSON reading and writing, validation, the CLI's flags, the names --resume
// compares and the workbench's spin-box ranges are derived from these tables, so a value cannot
// be accepted by one front end and refused (or written as null) by another.
//
// Adding an option: give its struct (MeasureSettings, Tolerance or StrategySpec) the member with
// its default, then add one line to that struct's table in run_options.cpp. A check across
// options (max_samples >= min_samples) goes into that struct's validate().
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "ktune/measurement.h"
#include "ktune/run_settings.h"
#include "ktune/strategy.h"

namespace ktune {

// The accepted values of a number: finite, in [min, max]. max = infinity: no upper bound.
struct Range {
  double min = 0;
  double max = 0;
  bool contains(double v) const;
  // "a number in [1e-06, 1]", "an integer >= 1", "a number >= 0".
  std::string describe(bool integer) const;
};

template <class S>
struct Option {
  // size_t and uint64_t are each one of the two unsigned types on every platform ktune builds on.
  using Member = std::variant<double S::*, int S::*, unsigned long S::*, unsigned long long S::*, bool S::*,
                              std::string S::*, Method S::*>;
  const char* key;   // in its JSON section: "noise_target"
  const char* flag;  // of `ktune tune`: "--noise-target"
  const char* doc;   // the flag's help text
  Member member;
  Range range = {};  // numbers only
  // A flag that turns a bool option off (--no-slow-abort) rather than on.
  bool flag_turns_off = false;
  // A number the CLI reads as text (--time-budget 5m); nullptr: a plain number.
  double (*parse_text)(const std::string&) = nullptr;
};

std::span<const Option<StrategySpec>> strategy_options();
std::span<const Option<MeasureSettings>> measure_options();
std::span<const Option<Tolerance>> tolerance_options();
// The workload's seed (RunSettings::seed, "seed" in run_metadata.json), apart from the strategy's.
const Option<RunSettings>& workload_seed_option();

// The option of `options` with this JSON key; a key no table has is a programming error
// (std::logic_error).
template <class S>
const Option<S>& find_option(std::span<const Option<S>> options, std::string_view key);

// Calls f(section, its options, the section's member of RunSettings) for each settings section,
// in the order of run_metadata.json's keys.
template <class F>
void for_each_section(F&& f) {
  f("strategy", strategy_options(), &RunSettings::strategy);
  f("measure", measure_options(), &RunSettings::measure);
  f("tolerance", tolerance_options(), &RunSettings::tolerance);
}

// How a validation error names an option: as a file does ("measure.noise_target") or as the
// command line does ("--noise-target").
enum class OptionNames { Json, Cli };

// Throws InputError naming the first option that is not finite, out of its range, or at odds with
// another ("--atol: NaN is not a finite number; give a number >= 0").
void validate(const StrategySpec& s, OptionNames names = OptionNames::Json);
void validate(const MeasureSettings& m, OptionNames names = OptionNames::Json);
void validate(const Tolerance& t, OptionNames names = OptionNames::Json);
void validate(const RunSettings& s, OptionNames names = OptionNames::Json);

// The same check for a number outside the settings (--compile-threads): InputError naming `name`.
void check_number(const std::string& name, double value, const Range& range, bool integer);

// Numbers of `ktune tune` that change how a run executes, not what it measures.
inline constexpr Range kCompileThreadsRange{0, 4096};
inline constexpr Range kHangMarginMsRange{0, 3.6e6};

}  // namespace ktune
