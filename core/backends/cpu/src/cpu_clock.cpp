#include "cpu_clock.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace ktune::cpu {

namespace {

bool plausible(double mhz) { return mhz >= kMinPlausibleMhz && mhz <= kMaxPlausibleMhz; }

std::string mhz_text(double mhz) {
  std::ostringstream s;
  s << static_cast<long>(mhz) << " MHz";
  return s.str();
}

}  // namespace

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

Clock choose_clock(const ClockSources& s) {
  std::string rejected;
  auto reject = [&](const char* name, double mhz, const std::string& why) {
    if (mhz > 0) rejected += std::string("; ") + name + " " + mhz_text(mhz) + " rejected (" + why + ")";
  };
  const std::string range = "outside " + mhz_text(kMinPlausibleMhz) + " - " + mhz_text(kMaxPlausibleMhz);

  if (plausible(s.cpufreq_max_mhz)) return {s.cpufreq_max_mhz, "cpufreq maximum"};
  reject("cpufreq maximum", s.cpufreq_max_mhz, range);

  double nominal = 0;
  std::string nominal_source;
  for (const auto& [name, mhz] : {std::pair{"cpu MHz", s.proc_mhz}, std::pair{"model name", s.model_mhz}}) {
    if (!plausible(mhz)) {
      reject(name, mhz, range);
    } else if (mhz > nominal) {
      nominal = mhz;
      nominal_source = std::string("/proc/cpuinfo ") + name;
    }
  }

  if (!plausible(s.measured_mhz)) {
    reject("measured", s.measured_mhz, range);
  } else if (nominal > 0 && s.measured_mhz > kMaxTurboRatio * nominal) {
    std::ostringstream why;
    why << "over " << kMaxTurboRatio << "x the nominal " << mhz_text(nominal);
    reject("measured", s.measured_mhz, why.str());
  } else if (s.measured_mhz >= nominal) {
    return {s.measured_mhz, "measured" + rejected};
  }
  // A measurement below the nominal clock was slowed down (a busy machine): the nominal one holds.
  if (nominal > 0) return {nominal, nominal_source + rejected};
  return {0, "unknown" + rejected};
}

double model_name_mhz(const std::string& model) {
  static const std::regex at_clock(R"(@\s*([0-9]+(?:\.[0-9]+)?)\s*([GM])Hz)", std::regex::icase);
  std::smatch m;
  if (!std::regex_search(model, m, at_clock)) return 0;
  const double value = std::strtod(m[1].str().c_str(), nullptr);
  return (m[2].str() == "G" || m[2].str() == "g") ? value * 1000 : value;
}

CpuInfo parse_cpuinfo(std::istream& in) {
  CpuInfo info;
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && info.model.empty())
      info.model = value;
    else if (key == "cpu MHz" && info.mhz == 0)
      info.mhz = std::strtod(value.c_str(), nullptr);
    else if (key == "physical id")
      physical = value;
    else if (key == "core id")
      cores.emplace(physical, value);
  }
  info.cores = static_cast<int>(cores.size());
  return info;
}

double measure_clock_mhz() {
#if defined(__x86_64__) && defined(__GNUC__)
  // Register-register adds, alternating between two registers so each depends on the one
  // before: cores that fold add-immediate chains at rename cannot shorten this one. The fastest
  // of a few short runs (about 1 ms each) discounts preemption on a shared machine.
  constexpr long kIters = 250000;  // x 8 adds = 2M cycles
  double best_ns = 0;
  for (int run = 0; run < 5; ++run) {
    std::uint64_t a = 1, b = 1;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < kIters; ++i)
      asm volatile(
          "add %1, %0\n\tadd %0, %1\n\tadd %1, %0\n\tadd %0, %1\n\t"
          "add %1, %0\n\tadd %0, %1\n\tadd %1, %0\n\tadd %0, %1"
          : "+r"(a), "+r"(b));
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (run == 0 || ns < best_ns) best_ns = ns;
  }
  return best_ns > 0 ? 8.0 * kIters / best_ns * 1000.0 : 0;
#else
  return 0;
#endif
}

}  // namespace ktune::cpu
