#include "targets.h"

#include "ktune/backends/hip_spec.h"

namespace ktune::hip {

namespace {

struct Row {
  TargetInfo info;
  double typical_cus, typical_clock_mhz;  // a representative part, for compile-only pruning
};

const std::vector<Row>& table() {
  static const std::vector<Row> rows{
      {{"gfx906", "GCN5", 64, 65536, 65536, 256, 102, 0, false}, 60, 1800},
      {{"gfx908", "CDNA1", 64, 65536, 65536, 512, 102, 1, false}, 120, 1502},
      {{"gfx90a", "CDNA2", 64, 65536, 65536, 512, 102, 2, false}, 110, 1700},
      {{"gfx940", "CDNA3", 64, 65536, 65536, 512, 102, 3, false}, 304, 2100},
      {{"gfx941", "CDNA3", 64, 65536, 65536, 512, 102, 3, false}, 304, 2100},
      {{"gfx942", "CDNA3", 64, 65536, 65536, 512, 102, 3, false}, 304, 2100},
      {{"gfx1030", "RDNA2", 32, 65536, 65536, 256, 106, 0, false}, 80, 2250},
      {{"gfx1100", "RDNA3", 32, 65536, 65536, 256, 106, 0, true}, 96, 2500},
      {{"gfx1101", "RDNA3", 32, 65536, 65536, 256, 106, 0, true}, 60, 2400},
      {{"gfx1102", "RDNA3", 32, 65536, 65536, 256, 106, 0, true}, 32, 2600},
  };
  return rows;
}

const Row* row(const std::string& gfx) {
  const std::string base = gfx.substr(0, gfx.find(':'));
  for (const auto& r : table())
    if (r.info.name == base) return &r;
  return nullptr;
}

}  // namespace

std::optional<TargetInfo> target_info(const std::string& gfx) {
  if (const Row* r = row(gfx)) return r->info;
  return std::nullopt;
}

std::vector<TargetInfo> known_targets() {
  std::vector<TargetInfo> out;
  for (const auto& r : table()) out.push_back(r.info);
  return out;
}

std::map<std::string, double> target_properties(const TargetInfo& t, double cus, double clock_mhz) {
  const Row* r = row(t.name);
  if (cus <= 0) cus = r ? r->typical_cus : 64;
  if (clock_mhz <= 0) clock_mhz = r ? r->typical_clock_mhz : 2000;
  // gfx<major><minor><stepping>: "gfx90a" -> 9, 0 (stepping a); "gfx1100" -> 11, 0.
  const std::string digits = t.name.substr(3);
  const int major = std::stoi(digits.substr(0, digits.size() - 2));
  const int minor = std::stoi(digits.substr(digits.size() - 2, 1), nullptr, 16);
  std::map<std::string, double> p{{"cus", cus},
                                  {"lds_per_block", t.lds_per_block},
                                  {"lds_per_cu", t.lds_per_cu},
                                  {"wavefront_size", t.wavefront_size},
                                  {"vgprs_per_wave", t.vgprs_per_wave},
                                  {"sgprs_per_wave", t.sgprs_per_wave},
                                  {"regs_per_block", 65536},
                                  {"max_threads_per_block", 1024},
                                  {"l2_bytes", 8.0 * 1024 * 1024},
                                  {"clock_mhz", clock_mhz},
                                  {"mem_clock_mhz", 0},
                                  {"mem_bandwidth_gbs", 0},
                                  {"gfx_major", major},
                                  {"gfx_minor", minor},
                                  {"has_mfma", t.mfma},
                                  {"has_wmma", t.wmma ? 1 : 0}};
  const DevicePeaks peaks = hip_peaks(t.name, cus, clock_mhz);
  p.insert(peaks.properties.begin(), peaks.properties.end());
  return p;
}

}  // namespace ktune::hip
