#include "ktune/ceilings.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "ktune/conditions.h"

namespace ktune {

namespace {

// The value of `field` in a key "a=1,b=x,...": the text between "field=" and the next comma.
std::string_view key_field(std::string_view key, std::string_view field) {
  std::size_t at = 0;
  while (at < key.size()) {
    const std::size_t end = std::min(key.find(',', at), key.size());
    const std::string_view item = key.substr(at, end - at);
    if (item.size() > field.size() && item.substr(0, field.size()) == field && item[field.size()] == '=')
      return item.substr(field.size() + 1);
    at = end + 1;
  }
  return {};
}

std::string normalise(std::string_view dtype) {
  std::string d(dtype);
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::pair<const char*, const char*> kSpellings[] = {{"float32", "f32"},
                                                                   {"fp32", "f32"},
                                                                   {"float", "f32"},
                                                                   {"float16", "f16"},
                                                                   {"fp16", "f16"},
                                                                   {"half", "f16"},
                                                                   {"bfloat16", "bf16"},
                                                                   {"i8", "int8"},
                                                                   {"s8", "int8"},
                                                                   {"e4m3", "fp8_e4m3"},
                                                                   {"fp8", "fp8_e4m3"},
                                                                   {"fp8e4m3", "fp8_e4m3"},
                                                                   {"float8_e4m3fn", "fp8_e4m3"},
                                                                   {"float8_e4m3", "fp8_e4m3"},
                                                                   {"e5m2", "fp8_e5m2"},
                                                                   {"fp8e5m2", "fp8_e5m2"},
                                                                   {"float8_e5m2", "fp8_e5m2"},
                                                                   {"float64", "f64"},
                                                                   {"fp64", "f64"},
                                                                   {"double", "f64"}};
  for (const auto& [spelling, name] : kSpellings)
    if (d == spelling) return name;
  return d;
}

std::string device_name(const DeviceInfo& d) { return d.name.empty() ? std::string("the device") : d.name; }

// Why a device lists no `property`: its own note when it has one, else what is missing.
std::string missing(const DeviceInfo& d, const std::string& property, const std::string& note) {
  if (const auto it = d.text.find(note); it != d.text.end() && !it->second.empty()) return it->second;
  if (d.properties.empty()) return device_name(d) + " was recorded without its properties";
  return device_name(d) + " reports no " + property;
}

}  // namespace

std::string compute_dtype(const std::string& problem_key) {
  for (const char* field : {"q_dtype", "dtype", "x_dtype"})
    if (const std::string_view v = key_field(problem_key, field); !v.empty()) return normalise(v);
  return {};
}

Ceiling compute_ceiling(const DeviceInfo& device, const std::string& problem_key) {
  Ceiling c;
  const std::string dtype = compute_dtype(problem_key);
  c.precision = dtype.empty() ? "f32" : dtype;
  c.property = "peak_gflops_" + c.precision;
  std::vector<std::string> properties{c.property};
  if (c.precision == "bf16") properties.push_back("peak_gflops_f16");
  for (const std::string& property : properties)
    if (const auto it = device.properties.find(property); it != device.properties.end() && it->second > 0) {
      c.value = it->second;
      c.property = property;
      return c;
    }
  c.why_unknown = "no " + c.precision + " peak is known: " + missing(device, c.property, "no_peak_" + c.precision);
  return c;
}

Ceiling memory_ceiling(const DeviceInfo& device) {
  Ceiling c;
  c.property = "mem_bandwidth_gbs";
  if (const auto it = device.properties.find(c.property); it != device.properties.end() && it->second > 0) {
    c.value = it->second;
    return c;
  }
  std::string why = missing(device, c.property, "bandwidth_source");
  if (device.backend == "cpu" && !device.properties.empty() && !device.text.count("bandwidth_source"))
    why += " (the run predates ktune's measurement of the CPU's read bandwidth)";
  c.why_unknown = "no memory bandwidth is known: " + why;
  return c;
}

double roofline_gflops(double peak_gflops, double bandwidth_gbs, double flops_per_byte) {
  if (bandwidth_gbs <= 0 || flops_per_byte <= 0) return peak_gflops;
  const double memory = bandwidth_gbs * flops_per_byte;
  return peak_gflops > 0 ? std::min(peak_gflops, memory) : memory;
}

double peak_at_clock(double peak, const DeviceInfo& device, const std::map<std::string, double>& trial_metrics) {
  const auto ran = trial_metrics.find(kSmClockMhz);
  double max_clock = 0;
  for (const char* name : {"sm_clock_mhz", "clock_mhz"})
    if (const auto it = device.properties.find(name); it != device.properties.end() && max_clock <= 0)
      max_clock = it->second;
  if (peak <= 0 || ran == trial_metrics.end() || ran->second <= 0 || max_clock <= 0) return 0;
  return peak * ran->second / max_clock;
}

DeviceCeilings::DeviceCeilings(DeviceInfo device) : device_(std::move(device)), memory_(memory_ceiling(device_)) {}

const Ceiling& DeviceCeilings::compute(const std::string& problem_key) const {
  if (const auto it = by_key_.find(problem_key); it != by_key_.end()) return it->second;
  return by_key_.emplace(problem_key, compute_ceiling(device_, problem_key)).first->second;
}

std::string DeviceCeilings::gaps(const std::vector<Trial>& trials, const std::string& shape, bool bytes) const {
  bool ok = false, shown = false, other = false;
  std::vector<std::string> clauses;
  const std::string* last = nullptr;  // trials of one shape come in runs: look each shape up once a run
  for (const Trial& t : trials) {
    if (t.status != TrialStatus::Ok || (!shape.empty() && t.problem_key != shape)) continue;
    ok = true;
    const auto recorded = t.metrics.find("GFLOP/s");
    const bool flops = t.tflops > 0 || (recorded != t.metrics.end() && recorded->second > 0);
    shown = shown || (bytes ? t.gbps > 0 : flops);
    other = other || (bytes ? flops : t.gbps > 0);
    if (bytes || !flops || (last && *last == t.problem_key)) continue;
    last = &t.problem_key;
    const Ceiling& c = compute(t.problem_key);
    if (c.value <= 0 && std::find(clauses.begin(), clauses.end(), c.why_unknown) == clauses.end())
      clauses.push_back(c.why_unknown);
  }
  if (ok && !shown)
    clauses.insert(clauses.begin(),
                   bytes
                       ? "no trial has GB/s: the run's family gives no byte count (a Kernel Tuner cache records none)"
                       : "no trial has TFLOP/s: the run's family gives no FLOP count and the run recorded no GFLOP/s");
  if (memory_.value <= 0 && ((bytes && shown) || (!bytes && shown && other)))
    clauses.push_back(bytes ? memory_.why_unknown : "no roofline: " + memory_.why_unknown);
  std::string out;
  for (const std::string& c : clauses) out += (out.empty() ? "" : "; ") + c;
  return out;
}

}  // namespace ktune
