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
                           "peak_gflops_f32"};
    d.shared_memory_limit = "lds_per_block";
    // A naive f32 kernel on the device computes C = A x B (rocBLAS is not in Debian 12's packages).
    d.references["device_gemm"] = SpecDialect::ReferenceKind::gemm();
    return d;
  }();
  return d;
}

}  // namespace ktune
