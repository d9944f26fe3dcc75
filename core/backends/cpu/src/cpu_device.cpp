#include "cpu_device.h"

#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu_bandwidth.h"
#include "cpu_clock.h"
#include "ktune/error.h"

namespace ktune::cpu {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

// "48K" / "1024K" / "32M" as in /sys/devices/system/cpu/cpu0/cache/index*/size.
double parse_size(const std::string& s) {
  if (s.empty()) return 0;
  double v = std::stod(s);
  switch (s.back()) {
    case 'K':
      return v * 1024;
    case 'M':
      return v * 1024 * 1024;
    case 'G':
      return v * 1024 * 1024 * 1024;
    default:
      return v;
  }
}

// Cache sizes per level from sysfs (data and unified caches only); where sysfs has no cache
// directory (some VMs and sandboxes), from glibc's sysconf, which reads CPUID.
void read_caches(DeviceInfo& d) {
  double l1 = 0, l2 = 0, l3 = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    if (level.empty()) break;
    if (type == "Instruction") continue;
    const double size = parse_size(read_line(dir + "size"));
    if (level == "1")
      l1 = size;
    else if (level == "2")
      l2 = size;
    else if (level == "3")
      l3 = size;
  }
  std::string source = "sysfs";
  if (l1 == 0 && l2 == 0) {
    source = "sysconf";
    l1 = static_cast<double>(std::max(0L, sysconf(_SC_LEVEL1_DCACHE_SIZE)));
    l2 = static_cast<double>(std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE)));
    l3 = static_cast<double>(std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE)));
  }
  if (l1 == 0 || l2 == 0) {
    // Nothing reports the caches: assume a small modern core so that constraints still prune
    // sensibly, and say so in the device text.
    source = "assumed (no sysfs or sysconf cache data)";
    if (l1 == 0) l1 = 32 * 1024;
    if (l2 == 0) l2 = 256 * 1024;
  }
  d.properties["l1d_bytes"] = l1;
  d.properties["l2_bytes"] = l2;
  // No L3 (some embedded parts): the L2 is the last level.
  d.properties["l3_bytes"] = l3 > 0 ? l3 : l2;
  d.text["cache_info"] = source;
}

// cpufreq's maximum clock in MHz, 0 where the kernel does not expose cpufreq (most VMs).
double cpufreq_max_mhz() {
  const std::string khz = read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  return khz.empty() ? 0 : std::strtod(khz.c_str(), nullptr) / 1000.0;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string host_isa_flags() {
  std::vector<std::string> flags;
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports takes string literals only.
  if (__builtin_cpu_supports("sse4.2")) flags.push_back("sse4.2");
  if (__builtin_cpu_supports("avx")) flags.push_back("avx");
  if (__builtin_cpu_supports("avx2")) flags.push_back("avx2");
  if (__builtin_cpu_supports("fma")) flags.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) flags.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) flags.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512dq")) flags.push_back("avx512dq");
  if (__builtin_cpu_supports("avx512vl")) flags.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512vnni")) flags.push_back("avx512vnni");
  // AVX-VNNI by CPUID (leaf 7, sub-leaf 1, EAX bit 4): clang 14's __builtin_cpu_supports has no
  // name for it. Usable where AVX2 is (the OS saves the YMM registers).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)))
    flags.push_back("avxvnni");
#endif
  return join(flags);
}

// The micro-kernel level that first uses an instruction-set flag.
IsaLevel flag_level(const std::string& flag) {
  if (flag == "avx512vnni") return IsaLevel::Avx512Vnni;
  if (flag.rfind("avx512", 0) == 0) return IsaLevel::Avx512;
  if (flag.rfind("avx", 0) == 0 || flag == "fma") return IsaLevel::Avx2;
  return IsaLevel::Portable;
}

// The properties that follow from the micro-kernel level. The host's `flags` are shown up to
// that level only: a lowered device does not claim instructions its kernels may not use.
void set_isa(DeviceInfo& d, IsaLevel level, const std::string& flags) {
  const int lanes = level >= IsaLevel::Avx512 ? 16 : level == IsaLevel::Avx2 ? 8 : 4;
  d.properties["simd_width_f32"] = lanes;
  d.properties["simd_registers"] = lanes == 16 ? 32 : 16;  // zmm0-31; ymm or xmm 0-15
  // AVX-512 VNNI's vpdpbusd: gemm_a8w8_blockscale's `vnni` parameter needs it.
  d.properties["int8_vnni"] = level == IsaLevel::Avx512Vnni ? 1 : 0;
  std::istringstream in(flags);
  std::vector<std::string> kept;
  for (std::string f; in >> f;)
    if (f != "portable" && flag_level(f) <= level) kept.push_back(f);
  d.text["isa"] = kept.empty() ? "portable" : join(kept);
  std::vector<std::string> sets;  // the f32 micro-kernel sets, as ukernels_for() hands them out
  for (IsaLevel l : {IsaLevel::Avx512, IsaLevel::Avx2, IsaLevel::Portable})
    if (l <= level) sets.push_back(isa_level_name(l));
  d.text["micro_kernels"] = join(sets);
}

// The peaks of the precisions ktune's CPU kernels compute in besides f32, from the f32 peak (the
// same cores, clock and two vector pipes). int8: VNNI's vpdpbusd does four int8 products a 32-bit
// lane, so 4x the f32 peak at its width (AVX-512 VNNI: 16 lanes, AVX-VNNI: 8); a CPU without
// VNNI has no one clear int8 rate (vpmaddubsw and its widening adds), so it reports none and
// says why rather than have int8 drawn under another precision's roof. AMX is not counted: no
// ktune kernel uses it. fp8 e4m3 is decoded to f32 by the kernels: the f32 peak is its ceiling.
void set_low_precision_peaks(DeviceInfo& d) {
  d.properties.erase("peak_gflops_int8");
  d.properties.erase("peak_gflops_fp8_e4m3");
  d.text.erase("no_peak_int8");
  const double f32 = d.property("peak_gflops_f32");
  if (f32 <= 0) return;  // no clock: no peak of any precision (the clock's source says why)
  d.properties["peak_gflops_fp8_e4m3"] = f32;
  std::istringstream flags(d.text["isa"]);
  bool avx_vnni = false;
  for (std::string f; flags >> f;) avx_vnni = avx_vnni || f == "avxvnni";
  const double vnni_lanes = d.property("int8_vnni") > 0 ? 16 : avx_vnni ? 8 : 0;
  if (vnni_lanes > 0)
    d.properties["peak_gflops_int8"] = f32 * 4 * vnni_lanes / d.property("simd_width_f32", 4);
  else
    d.text["no_peak_int8"] =
        "this CPU (as ktune runs it) has no int8 dot-product instructions (AVX-512 VNNI or AVX-VNNI), so no int8 "
        "peak is known";
}

DeviceInfo detect_host() {
  DeviceInfo d;
  d.backend = "cpu";
  d.index = 0;
  std::ifstream cpuinfo("/proc/cpuinfo");
  const CpuInfo info = parse_cpuinfo(cpuinfo);
  d.name = info.model.empty() ? "cpu" : info.model;

  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int threads = online > 0 ? static_cast<int>(online) : std::max(1u, std::thread::hardware_concurrency());
  const int cores = info.cores > 0 ? std::min(info.cores, threads) : threads;
  d.properties["cores"] = cores;
  d.properties["threads"] = threads;
  // Search spaces have a parameter named `threads`, which shadows the device's `threads` in
  // constraint expressions; `threads_hw` is the name constraints use.
  d.properties["threads_hw"] = threads;
  read_caches(d);
  set_isa(d, host_isa_level(), host_isa_flags());

  const Clock clock = choose_clock({.cpufreq_max_mhz = cpufreq_max_mhz(),
                                    .measured_mhz = measure_clock_mhz(),
                                    .proc_mhz = info.mhz,
                                    .model_mhz = model_name_mhz(info.model)});
  const double mhz = clock.mhz;
  // Peak = cores x highest clock x 2 FMA pipes x lanes x 2 flops per FMA. Two FMA pipes is
  // what every x86 core since Haswell / Zen 2 has at full width; cores that split 512-bit FMAs
  // into two 256-bit halves (Zen 4) reach half of this with AVX-512. An upper bound for the
  // roofline (all cores rarely hold the single-core turbo clock measured here).
  if (mhz > 0) d.properties["peak_gflops_f32"] = cores * (mhz / 1000.0) * 2 * d.property("simd_width_f32") * 2;
  set_low_precision_peaks(d);
  d.properties["max_workspace_bytes"] = workspace_limit_bytes();
  const Bandwidth bandwidth = host_read_bandwidth(d);
  if (bandwidth.gbs > 0) d.properties["mem_bandwidth_gbs"] = bandwidth.gbs;
  d.text["bandwidth_source"] = "read bandwidth of all cores, " + bandwidth.source;

  std::ostringstream proc_clock;
  proc_clock << info.mhz;
  d.text["cpu_mhz"] = proc_clock.str();
  d.text["peak_clock_mhz"] = std::to_string(static_cast<long>(mhz));
  d.text["peak_clock_source"] = clock.source;
  return d;
}

constexpr const char* kOverrideSyntax =
    "space-separated name=value fields, each optional: l1d=32K l2=256K l3=2M cores=1 threads=1 "
    "isa=portable|avx2|avx512|avx512-vnni";

[[noreturn]] void bad_field(const std::string& field, const std::string& why) {
  throw InputError(std::string(kCpuDeviceVariable) + ": bad field '" + field + "': " + why + " (" + kOverrideSyntax +
                   ")");
}

// Digits, then (a size only) one K, M or G; at most 13 digits, which a double holds exactly.
double parse_number(const std::string& field, const std::string& value, bool size) {
  std::size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
  const std::string unit = value.substr(digits);
  double scale = 0;
  if (unit.empty())
    scale = 1;
  else if (size && (unit == "K" || unit == "k"))
    scale = 1024;
  else if (size && (unit == "M" || unit == "m"))
    scale = 1024.0 * 1024;
  else if (size && (unit == "G" || unit == "g"))
    scale = 1024.0 * 1024 * 1024;
  if (digits == 0 || digits > 13 || scale == 0)
    bad_field(field, size ? "a size is a whole number of bytes with an optional K, M or G suffix"
                          : "a count is a whole number");
  return std::stod(value.substr(0, digits)) * scale;
}

double parse_cache(const std::string& field, const std::string& value) {
  const double bytes = parse_number(field, value, true);
  if (bytes < 1024 || bytes > 1024.0 * 1024 * 1024 * 1024) bad_field(field, "a cache size is between 1K and 1024G");
  return bytes;
}

int parse_count(const std::string& field, const std::string& value) {
  const double n = parse_number(field, value, false);
  if (n < 1 || n > 4096) bad_field(field, "cores and threads are between 1 and 4096");
  return static_cast<int>(n);
}

IsaLevel parse_isa(const std::string& field, const std::string& value) {
  for (IsaLevel l : {IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512, IsaLevel::Avx512Vnni})
    if (value == isa_level_name(l)) return l;
  bad_field(field, "unknown instruction set");
}

std::string format_bytes(double bytes) {
  for (const auto& [unit, scale] : {std::pair{"G", 1024.0 * 1024 * 1024}, {"M", 1024.0 * 1024}, {"K", 1024.0}})
    if (bytes >= scale && std::fmod(bytes, scale) == 0) return std::to_string(std::llround(bytes / scale)) + unit;
  return std::to_string(std::llround(bytes));
}

// The device must be one a machine could be; a field the override leaves is the host's.
void check_consistent(const DeviceInfo& d, const CpuOverride& o) {
  const auto field = [&](const char* name, const char* key, bool given) {
    return std::string(name) + "=" + format_bytes(d.property(key)) + (given ? "" : " (the host's)");
  };
  const std::string var = kCpuDeviceVariable, l1 = field("l1d", "l1d_bytes", o.l1d.has_value()),
                    l2 = field("l2", "l2_bytes", o.l2.has_value()), l3 = field("l3", "l3_bytes", o.l3.has_value());
  if (d.property("l2_bytes") <= d.property("l1d_bytes")) throw InputError(var + ": " + l2 + " must exceed " + l1);
  if (d.property("l3_bytes") < d.property("l2_bytes"))
    throw InputError(var + ": " + l3 + " must be at least " + l2 + " (without an L3, give l3 equal to l2)");
  if (d.property("threads") < d.property("cores"))
    throw InputError(var + ": threads=" + std::to_string(std::lround(d.property("threads"))) +
                     " must be at least cores=" + std::to_string(std::lround(d.property("cores"))));
}

}  // namespace

double workspace_limit_bytes() {
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  constexpr double kMax = 2.0 * 1024 * 1024 * 1024;
  return phys > 0 ? std::min(kMax, phys / 4) : kMax;
}

CpuOverride parse_cpu_override(const std::string& spec) {
  CpuOverride o;
  o.spec = trim(spec);
  std::istringstream in(spec);
  for (std::string field; in >> field;) {
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos) bad_field(field, "a field is name=value");
    const std::string name = field.substr(0, eq), value = field.substr(eq + 1);
    const auto once = [&](auto& slot, auto parsed) {
      if (slot) bad_field(field, name + " is given twice");
      slot = parsed;
    };
    if (name == "l1d")
      once(o.l1d, parse_cache(field, value));
    else if (name == "l2")
      once(o.l2, parse_cache(field, value));
    else if (name == "l3")
      once(o.l3, parse_cache(field, value));
    else if (name == "cores")
      once(o.cores, parse_count(field, value));
    else if (name == "threads")
      once(o.threads, parse_count(field, value));
    else if (name == "isa")
      once(o.isa, parse_isa(field, value));
    else
      bad_field(field, "unknown field '" + name + "'");
  }
  return o;
}

std::optional<CpuOverride> cpu_override_from_env() {
  const char* spec = std::getenv(kCpuDeviceVariable);
  if (!spec || trim(spec).empty()) return std::nullopt;
  return parse_cpu_override(spec);
}

IsaLevel allowed_isa_level(IsaLevel host_isa, const std::optional<CpuOverride>& o) {
  if (!o || !o->isa) return host_isa;
  if (*o->isa > host_isa)
    throw InputError(std::string(kCpuDeviceVariable) + ": isa=" + isa_level_name(*o->isa) +
                     " needs instructions this CPU lacks (it runs up to " + isa_level_name(host_isa) +
                     "); a synthetic device can only lower the instruction set");
  return *o->isa;
}

// Once per process: every launch asks, and the variable does not change under a running tuner.
IsaLevel isa_level() {
  static const IsaLevel level = allowed_isa_level(host_isa_level(), cpu_override_from_env());
  return level;
}

DeviceInfo apply_cpu_override(DeviceInfo d, IsaLevel host_isa, const CpuOverride& o) {
  const IsaLevel level = allowed_isa_level(host_isa, o);
  const double host_cores = d.property("cores", 1), host_lanes = d.property("simd_width_f32", 4);
  for (const auto& [key, bytes] : {std::pair{"l1d_bytes", o.l1d}, {"l2_bytes", o.l2}, {"l3_bytes", o.l3}})
    if (bytes) {
      d.properties[key] = *bytes;
      d.text["cache_info"] = kCpuDeviceVariable;
    }
  if (o.cores || o.threads) {
    const int threads = o.threads ? *o.threads : *o.cores;
    const int cores = o.cores ? *o.cores : std::min(static_cast<int>(host_cores), threads);
    d.properties["cores"] = cores;
    d.properties["threads"] = threads;
    d.properties["threads_hw"] = threads;
  }
  check_consistent(d, o);
  set_isa(d, level, d.text["isa"]);
  // The host's clock, with the cores and lanes the device now has.
  if (d.properties.count("peak_gflops_f32"))
    d.properties["peak_gflops_f32"] *= d.property("cores") / host_cores * d.property("simd_width_f32") / host_lanes;
  set_low_precision_peaks(d);
  // The memory is the host's: its bandwidth stays, an upper bound for fewer cores.
  if (d.text.count("bandwidth_source")) d.text["bandwidth_source"] += " (the host's: all its cores reading)";
  // Another name, so another registry file: winners on a pretend machine are not the host's.
  d.name += " (synthetic)";
  d.text["synthetic"] = std::string(kCpuDeviceVariable) + "=" + o.spec;
  return d;
}

DeviceInfo detect_cpu() {
  // A malformed variable fails before anything is probed.
  const std::optional<CpuOverride> o = cpu_override_from_env();
  DeviceInfo host = detect_host();
  return o ? apply_cpu_override(std::move(host), host_isa_level(), *o) : host;
}

}  // namespace ktune::cpu
