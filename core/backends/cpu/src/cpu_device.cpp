#include "cpu_device.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "a8w8_ukernels.h"
#include "cpu_clock.h"
#include "ukernels.h"

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
    case 'K': return v * 1024;
    case 'M': return v * 1024 * 1024;
    case 'G': return v * 1024 * 1024 * 1024;
    default: return v;
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

  int lanes = 4;
  for (int l : {16, 8})
    if (ukernels_for(l)) {
      lanes = l;
      break;
    }
  d.properties["simd_width_f32"] = lanes;
  d.properties["simd_registers"] = ukernels_for(lanes)->registers;
  // AVX-512 VNNI's vpdpbusd: gemm_a8w8_blockscale's `vnni` parameter needs it.
  d.properties["int8_vnni"] = cpu_has_avx512_vnni() ? 1 : 0;

  const Clock clock = choose_clock({.cpufreq_max_mhz = cpufreq_max_mhz(),
                                    .measured_mhz = measure_clock_mhz(),
                                    .proc_mhz = info.mhz,
                                    .model_mhz = model_name_mhz(info.model)});
  const double mhz = clock.mhz;
  // Peak = cores x highest clock x 2 FMA pipes x lanes x 2 flops per FMA. Two FMA pipes is
  // what every x86 core since Haswell / Zen 2 has at full width; cores that split 512-bit FMAs
  // into two 256-bit halves (Zen 4) reach half of this with AVX-512. An upper bound for the
  // roofline (all cores rarely hold the single-core turbo clock measured here).
  if (mhz > 0) d.properties["peak_gflops_f32"] = cores * (mhz / 1000.0) * 2 * lanes * 2;
  d.properties["max_workspace_bytes"] = workspace_limit_bytes();

  d.text["isa"] = isa_flags();
  std::ostringstream proc_clock;
  proc_clock << info.mhz;
  d.text["cpu_mhz"] = proc_clock.str();
  d.text["peak_clock_mhz"] = std::to_string(static_cast<long>(mhz));
  d.text["peak_clock_source"] = clock.source;
  std::vector<std::string> sets;
  for (int l : {16, 8, 4})
    if (const UKernelSet* s = ukernels_for(l)) sets.push_back(s->isa);
  d.text["micro_kernels"] = join(sets);
  return d;
}

}  // namespace ktune::cpu
