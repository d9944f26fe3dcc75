#pragma once
// The clock the CPU's peak FLOP/s rests on. Each source can be wrong on some machine: VMs hide
// cpufreq and report the nominal clock in /proc/cpuinfo; a timed chain of adds reads several
// times too fast on cores that fold adds at rename (Golden Cove). So every source is bounded to
// a plausible range and the measurement is cross-checked against the nominal clock.
#include <istream>
#include <string>

namespace ktune::cpu {

// No x86 core of the last two decades runs below or above these.
constexpr double kMinPlausibleMhz = 400;
constexpr double kMaxPlausibleMhz = 7000;
// The most a core's turbo clock exceeds its nominal one (2.1 -> 3.8 GHz on Sapphire Rapids).
constexpr double kMaxTurboRatio = 2.5;

struct ClockSources {
  double cpufreq_max_mhz = 0;  // sysfs cpuinfo_max_freq: the kernel's maximum, turbo included
  double measured_mhz = 0;     // a timed chain of dependent adds (measure_clock_mhz)
  double proc_mhz = 0;         // /proc/cpuinfo "cpu MHz": current, or nominal inside VMs
  double model_mhz = 0;        // "@ 2.10GHz" in the model name: nominal (model_name_mhz)
};

struct Clock {
  double mhz = 0;      // 0: no source was plausible
  std::string source;  // where mhz came from, and which sources were rejected and why
};

// The highest clock the cores plausibly run at: cpufreq's maximum when it is plausible; else the
// measured clock when plausible and at most kMaxTurboRatio x the nominal one (never below it);
// else the nominal clock.
Clock choose_clock(const ClockSources& sources);

// 2100 for "Intel(R) Xeon(R) Platinum 8480C @ 2.10GHz", 0 when the name has no clock.
double model_name_mhz(const std::string& model);

struct CpuInfo {
  std::string model;
  double mhz = 0;
  int cores = 0;  // physical: distinct (physical id, core id) pairs; 0 when not listed
};
CpuInfo parse_cpuinfo(std::istream& in);  // /proc/cpuinfo's format

// `s` without leading and trailing blanks and line ends (for /proc and sysfs text).
std::string trim(const std::string& s);

// Times dependent register adds (one per cycle on every x86 core without add folding); 0 off x86.
double measure_clock_mhz();

}  // namespace ktune::cpu
