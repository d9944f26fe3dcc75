#pragma once
// DeviceInfo: what a backend reports about one device. Numeric properties feed constraint
// expressions and the roofline; text properties are shown and recorded in run metadata.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ktune/expression.h"

namespace ktune {

struct DeviceInfo {
  std::string backend;  // "cpu", "cuda", "hip"
  int index = 0;
  std::string name;  // "AMD EPYC 9654", "NVIDIA H100 80GB HBM3"
  // Numeric properties by conventional names. CPU: cores, threads, l1d_bytes, l2_bytes,
  // l3_bytes, simd_width_f32. GPU: sms, smem_per_block, smem_per_block_optin, smem_per_sm,
  // regs_per_block, regs_per_sm, warp_size, max_threads_per_block, l2_bytes, sm_clock_mhz,
  // mem_clock_mhz, mem_bandwidth_gbs, cc_major, cc_minor. Both: peak_gflops_f32 (and
  // peak_gflops_f16 on GPUs), mem_bandwidth_gbs when known.
  std::map<std::string, double> properties;
  std::map<std::string, std::string> text;  // isa flags, driver/runtime versions, arch

  // slugify(name); the registry file is tuned_data/<backend>/<slug>.json
  std::string slug() const;
  double property(const std::string& key, double fallback = 0.0) const;
  Variables variables() const { return Variables(properties.begin(), properties.end()); }
  nlohmann::json to_json() const;
  static DeviceInfo from_json(const nlohmann::json& j);
};

// Lower-case, [a-z0-9-] only: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3".
std::string slugify(const std::string& s);

}  // namespace ktune
