#pragma once
// What a device was doing while a kernel was timed: its SM clock, its board power, and whether a
// power or thermal limit held the clock down. An H100 under a sustained tensor-core load reaches
// its 700 W cap within half a second and runs at 1,400-1,600 MHz instead of 1,980, so two times
// taken minutes apart differ by 10 % for that alone: a time is read together with these.
// Backends read them during the timed samples (NVML on CUDA); they travel as metrics of a trial
// (trials.csv), as "conditions" beside every time in results.json, and beside a registry entry's stats.
#include <map>
#include <string>
#include <vector>

namespace ktune {

// Metric names, as they appear in trials.csv's metrics and results.json's "conditions".
inline constexpr const char* kSmClockMhz = "sm_clock_mhz";     // median SM clock, MHz
inline constexpr const char* kPowerW = "power_w";              // median board power, W
inline constexpr const char* kClockLimited = "clock_limited";  // share of readings held down by a limit, 0..1

// Medians and shares over one measurement's readings; empty where none could be taken.
using Conditions = std::map<std::string, double>;

// One reading, taken while a timed sample ran.
struct ConditionsReading {
  double sm_clock_mhz = 0;
  double power_w = 0;  // 0: not read
  bool clock_limited = false;
};

// Empty for no readings.
Conditions summarize_conditions(const std::vector<ConditionsReading>& readings);

// The names above, among a trial's other metrics.
bool is_condition(const std::string& metric);
// `metrics` without the condition names, then `conditions` added.
void replace_conditions(std::map<std::string, double>& metrics, const Conditions& conditions);
// The condition names of `metrics` alone.
Conditions conditions_of(const std::map<std::string, double>& metrics);

// "1425 MHz, 690 W, clock limited" ("70 % of the time" when partly); empty for none.
std::string describe(const Conditions& c);

}  // namespace ktune
