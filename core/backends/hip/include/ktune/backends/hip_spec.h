#pragma once
// The HIP backend's spec dialect: AMD device properties (compute units, LDS, wavefront size,
// registers per wave, the matrix-core kinds a target has) and the reference computed on the
// device by a simple trusted kernel. Plain data (no ROCm), built with every configuration.
#include <string>

#include "ktune/ceilings.h"
#include "ktune/kernel_spec.h"

namespace ktune {

const SpecDialect& hip_spec_dialect();

// An AMD device's peak rates from its gfx target ("gfx942", or "gfx90a:sramecc+:xnack-"), CU count
// and peak engine clock: peak_gflops_f16 (matrix cores where the target has them, f32
// accumulation), peak_gflops_f32, and peak_gflops_int8, peak_gflops_fp8_e4m3 and
// peak_gflops_fp8_e5m2 where the target has a rate for them (fp8 on gfx94x is the FNUZ variant
// its matrix cores take). A target outside the table gets a vector f16 / f32 estimate and no
// 8-bit peak, said in `missing`.
DevicePeaks hip_peaks(const std::string& gfx, double cus, double clock_mhz);

}  // namespace ktune
