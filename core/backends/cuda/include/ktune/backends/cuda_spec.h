#pragma once
// The CUDA backend's spec dialect: CUDA device properties, TMA tensor maps, the cuBLAS
// reference. Plain data (no toolkit), built with every configuration so specs can be checked
// anywhere.
#include "ktune/ceilings.h"
#include "ktune/kernel_spec.h"

namespace ktune {

const SpecDialect& cuda_spec_dialect();

// A CUDA device's peak rates from its compute capability, SM count and SM clock:
// peak_gflops_f16 (tensor cores, f32 accumulation), peak_gflops_f32, and peak_gflops_int8,
// peak_gflops_fp8_e4m3 and peak_gflops_fp8_e5m2 where the tensor cores have the type.
DevicePeaks cuda_peaks(int cc_major, int cc_minor, double sms, double sm_clock_mhz);

}  // namespace ktune
