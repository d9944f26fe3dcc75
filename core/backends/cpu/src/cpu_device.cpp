#include "cpu_device.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ukernels.h"

namespace ktune::cpu {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

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
    case 'K': return v * 1024;
    case 'M': return v * 1024 * 1024;
    case 'G': return v * 1024 * 1024 * 1024;
    default: return v;
  }
}

struct CpuInfo {
  std::string model;
  double mhz = 0;
  int cores = 0;
};

// /proc/cpuinfo: the model name, the current clock, and physical cores as distinct
// (physical id, core id) pairs (SMT siblings share one).
CpuInfo read_proc_cpuinfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && info.model.empty()) info.model = value;
    else if (key == "cpu MHz" && info.mhz == 0) info.mhz = std::atof(value.c_str());
    else if (key == "physical id") physical = value;
    else if (key == "core id") cores.emplace(physical, value);
  }
  info.cores = static_cast<int>(cores.size());
  return info;
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
    if (level == "1") l1 = size;
    else if (level == "2") l2 = size;
    else if (level == "3") l3 = size;
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

// The clock a busy core actually runs at, in MHz (0 where unknown). /proc/cpuinfo's "cpu MHz"
// is the nominal rate inside VMs and misses turbo, which made measured GFLOP/s exceed the
// "peak"; a chain of dependent integer adds retires exactly one add per cycle on every x86
// core, so timing one measures the clock. The fastest of a few short runs (a few ms in all)
// discounts preemption on a shared machine.
double measured_mhz() {
#if defined(__x86_64__) && defined(__GNUC__)
  constexpr long kIters = 250000;  // x 8 adds = 2M cycles, about 1 ms
  double best_ns = 0;
  for (int run = 0; run < 5; ++run) {
    std::uint64_t x = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < kIters; ++i)
      asm volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (run == 0 || ns < best_ns) best_ns = ns;
  }
  return best_ns > 0 ? 8.0 * kIters / best_ns * 1000.0 : 0;
#else
  return 0;
#endif
}

// The highest clock the cores run at: the larger of cpufreq's maximum (when the kernel
// exposes it), the measured clock, and what /proc/cpuinfo reports.
double max_mhz(double proc_mhz) {
  const std::string khz = read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  const double cpufreq = khz.empty() ? 0 : std::atof(khz.c_str()) / 1000.0;
  return std::max({proc_mhz, cpufreq, measured_mhz()});
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string isa_flags() {
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
#endif
  return flags.empty() ? "portable" : join(flags);
}

}  // namespace

double workspace_limit_bytes() {
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  constexpr double kMax = 2.0 * 1024 * 1024 * 1024;
  return phys > 0 ? std::min(kMax, phys / 4) : kMax;
}

DeviceInfo detect_cpu() {
  DeviceInfo d;
  d.backend = "cpu";
  d.index = 0;
  const CpuInfo info = read_proc_cpuinfo();
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

  int lanes = 4;
  for (int l : {16, 8})
    if (ukernels_for(l)) {
      lanes = l;
      break;
    }
  d.properties["simd_width_f32"] = lanes;
  d.properties["simd_registers"] = ukernels_for(lanes)->registers;

  const double mhz = max_mhz(info.mhz);
  // Peak = cores x highest clock x 2 FMA pipes x lanes x 2 flops per FMA. Two FMA pipes is
  // what every x86 core since Haswell / Zen 2 has at full width; cores that split 512-bit FMAs
  // into two 256-bit halves (Zen 4) reach half of this with AVX-512. An upper bound for the
  // roofline (all cores rarely hold the single-core turbo clock measured here).
  if (mhz > 0) d.properties["peak_gflops_f32"] = cores * (mhz / 1000.0) * 2 * lanes * 2;
  d.properties["max_workspace_bytes"] = workspace_limit_bytes();

  d.text["isa"] = isa_flags();
  std::ostringstream clock;
  clock << info.mhz;
  d.text["cpu_mhz"] = clock.str();
  std::ostringstream peak_clock;
  peak_clock << static_cast<long>(mhz);
  d.text["peak_clock_mhz"] = peak_clock.str();
  std::vector<std::string> sets;
  for (int l : {16, 8, 4})
    if (const UKernelSet* s = ukernels_for(l)) sets.push_back(s->isa);
  d.text["micro_kernels"] = join(sets);
  return d;
}

}  // namespace ktune::cpu
