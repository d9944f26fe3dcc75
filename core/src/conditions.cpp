#include "ktune/conditions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ktune {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Conditions summarize_conditions(const std::vector<ConditionsReading>& readings) {
  if (readings.empty()) return {};
  std::vector<double> mhz, watts;
  double limited = 0;
  for (const auto& r : readings) {
    mhz.push_back(r.sm_clock_mhz);
    if (r.power_w > 0) watts.push_back(r.power_w);
    limited += r.clock_limited ? 1 : 0;
  }
  Conditions c{{kSmClockMhz, median(mhz)}, {kClockLimited, limited / static_cast<double>(readings.size())}};
  // A board without a power sensor reads nothing rather than 0 W.
  if (!watts.empty()) c[kPowerW] = median(watts);
  return c;
}

bool is_condition(const std::string& metric) {
  return metric == kSmClockMhz || metric == kPowerW || metric == kClockLimited;
}

void replace_conditions(std::map<std::string, double>& metrics, const Conditions& conditions) {
  std::erase_if(metrics, [](const auto& kv) { return is_condition(kv.first); });
  metrics.insert(conditions.begin(), conditions.end());
}

Conditions conditions_of(const std::map<std::string, double>& metrics) {
  Conditions c;
  for (const auto& [name, v] : metrics)
    if (is_condition(name)) c[name] = v;
  return c;
}

std::string describe(const Conditions& c) {
  std::string out;
  char buf[64];
  if (auto it = c.find(kSmClockMhz); it != c.end()) {
    std::snprintf(buf, sizeof buf, "%.0f MHz", it->second);
    out += buf;
  }
  if (auto it = c.find(kPowerW); it != c.end()) {
    std::snprintf(buf, sizeof buf, "%s%.0f W", out.empty() ? "" : ", ", it->second);
    out += buf;
  }
  if (auto it = c.find(kClockLimited); it != c.end() && it->second > 0) {
    if (it->second >= 0.995)
      std::snprintf(buf, sizeof buf, "%sclock limited", out.empty() ? "" : ", ");
    else
      std::snprintf(buf, sizeof buf, "%sclock limited %.0f %% of the time", out.empty() ? "" : ", ",
                    std::round(100 * it->second));
    out += buf;
  }
  return out;
}

}  // namespace ktune
