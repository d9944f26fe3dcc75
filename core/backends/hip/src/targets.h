#pragma once
// What ktune knows about AMD gfx targets without a device: wavefront size, LDS, registers per
// wave, matrix cores (its peak rates: hip_peaks in the dialect). It fills in what hipGetDeviceProperties does
// not report (registers, matrix cores) for a device, and stands in for the whole device when
// configs are compiled for a target no GPU here has (the compile-only test, --target).
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ktune::hip {

struct TargetInfo {
  std::string name;         // "gfx90a"
  std::string family;       // "CDNA2", "RDNA3"
  int wavefront_size = 64;  // the compiler's default for the target (wave32 on RDNA)
  int lds_per_block = 65536;
  int lds_per_cu = 65536;
  int vgprs_per_wave = 256;  // architectural VGPRs (+ AGPRs where unified) one wave may use
  int sgprs_per_wave = 102;
  int mfma = 0;       // CDNA matrix cores (v_mfma_*) by generation: 1 gfx908, 2 gfx90a (bf16 "_1k"), 3 gfx94x
  bool wmma = false;  // RDNA3 matrix cores (v_wmma_*)
};

// The target of "gfx90a:sramecc+:xnack-" is "gfx90a". nullopt for a target not in the table.
std::optional<TargetInfo> target_info(const std::string& gfx);
// Every target in the table.
std::vector<TargetInfo> known_targets();

// Device properties (hip_spec_dialect's names) of `t` as a representative device: the CU count
// and clocks are those of `cus` / `clock_mhz` (a typical part when 0).
std::map<std::string, double> target_properties(const TargetInfo& t, double cus = 0, double clock_mhz = 0);

}  // namespace ktune::hip
