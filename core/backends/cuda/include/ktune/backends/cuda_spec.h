#pragma once
// The CUDA backend's spec dialect: CUDA device properties, TMA tensor maps, the cuBLAS
// reference. Plain data (no toolkit), built with every configuration so specs can be checked
// anywhere.
#include <map>
#include <string>

#include "ktune/kernel_spec.h"

namespace ktune {

const SpecDialect& cuda_spec_dialect();

// A CUDA device's peak rates from its compute capability, SM count and SM clock, from a table of
// dense FLOP (or OPs) per SM per clock: properties peak_gflops_f16 (tensor cores, f32
// accumulation), peak_gflops_f32, and peak_gflops_int8, peak_gflops_fp8_e4m3 and
// peak_gflops_fp8_e5m2 where the tensor cores have the type. For a type they lack, `missing`
// holds the note DeviceInfo::text keeps as "no_peak_<type>", which the charts show instead.
struct CudaPeaks {
  std::map<std::string, double> properties;
  std::map<std::string, std::string> missing;
};
CudaPeaks cuda_peaks(int cc_major, int cc_minor, double sms, double sm_clock_mhz);

}  // namespace ktune
