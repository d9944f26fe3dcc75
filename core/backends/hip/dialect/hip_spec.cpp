#include "ktune/backends/hip_spec.h"

namespace ktune {

const SpecDialect& hip_spec_dialect() {
  static const SpecDialect d = [] {
    SpecDialect d;
    d.backend = "hip";
    // What the backend reports for a device or a target (hip/src/targets.cpp). The wavefront
    // size is 64 on CDNA and 32 on RDNA: a spec reads it, it never assumes it. has_mfma is the
    // CDNA matrix-core generation (0 none, 1 gfx908, 2 gfx90a, 3 gfx94x); has_wmma 1 on RDNA3.
    d.device_properties = {"cus",
                           "lds_per_block",
                           "lds_per_cu",
                           "wavefront_size",
                           "vgprs_per_wave",
                           "sgprs_per_wave",
                           "regs_per_block",
                           "max_threads_per_block",
                           "l2_bytes",
                           "clock_mhz",
                           "mem_clock_mhz",
                           "mem_bandwidth_gbs",
                           "gfx_major",
                           "gfx_minor",
                           "has_mfma",
                           "has_wmma",
                           "peak_gflops_f16",
                           "peak_gflops_f32",
                           "peak_gflops_int8",
                           "peak_gflops_fp8_e4m3",
                           "peak_gflops_fp8_e5m2"};
    d.shared_memory_limit = "lds_per_block";
    // A naive f32 kernel on the device computes C = A x B (rocBLAS is not in Debian 12's packages).
    d.references["device_gemm"] = SpecDialect::ReferenceKind::gemm();
    return d;
  }();
  return d;
}

DevicePeaks hip_peaks(const std::string& gfx, double cus, double clock_mhz) {
  // Dense FLOP (OPs for int8) per CU per clock: the vendor's peak figures over CUs x peak engine
  // clock. MI50 (gfx906): 53.6 TOPS int8 (dot4) / 60 CUs / 1725 MHz = 512. MI100 (gfx908): 184.6
  // TF f16 and TOPS int8 / 120 / 1502 = 1024. MI250X (gfx90a): 383 TF and TOPS / 220 / 1700 =
  // 1024, f32 packed 256. MI300X (gfx94x): 1307 TF f16, 2615 TF fp8 and TOPS int8 / 304 / 2100 =
  // 2048 and 4096. RX 7900 XTX (gfx110x): 122.8 TF f16 and TOPS int8 (WMMA) / 96 / 2500 = 512,
  // f32 dual-issue 256. 0: no rate (RDNA2 has no matrix cores; fp8 before CDNA3).
  struct Rates {
    const char* gfx;
    double f16, f32, int8, fp8;
  };
  static const Rates table[] = {{"gfx906", 256, 128, 512, 0},      {"gfx908", 1024, 128, 1024, 0},
                                {"gfx90a", 1024, 256, 1024, 0},    {"gfx940", 2048, 256, 4096, 4096},
                                {"gfx941", 2048, 256, 4096, 4096}, {"gfx942", 2048, 256, 4096, 4096},
                                {"gfx1030", 256, 128, 0, 0},       {"gfx1100", 512, 256, 512, 0},
                                {"gfx1101", 512, 256, 512, 0},     {"gfx1102", 512, 256, 512, 0}};
  const std::string target = gfx.substr(0, gfx.find(':'));
  Rates r{nullptr, 256, 128, 0, 0};
  for (const Rates& row : table)
    if (target == row.gfx) r = row;
  const double gflops_per_rate = cus * clock_mhz / 1000;
  DevicePeaks p;
  p.properties["peak_gflops_f16"] = r.f16 * gflops_per_rate;
  p.properties["peak_gflops_f32"] = r.f32 * gflops_per_rate;
  const auto lacks = [&](const char* type, const char* what) {
    return r.gfx ? target + " has no " + what
                 : target + " is not in ktune's table of gfx targets: no " + type + " rate";
  };
  if (r.int8 > 0)
    p.properties["peak_gflops_int8"] = r.int8 * gflops_per_rate;
  else
    p.missing["no_peak_int8"] = lacks("int8", "int8 matrix or dot-product rate in ktune's table");
  for (const char* fp8 : {"fp8_e4m3", "fp8_e5m2"}) {
    if (r.fp8 > 0)
      p.properties[std::string("peak_gflops_") + fp8] = r.fp8 * gflops_per_rate;
    else
      p.missing[std::string("no_peak_") + fp8] = lacks("fp8", "fp8 matrix cores (CDNA3 and newer)");
  }
  return p;
}

}  // namespace ktune
