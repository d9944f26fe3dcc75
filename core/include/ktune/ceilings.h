#pragma once
// The ceilings a kernel's throughput is held against (the workbench's throughput chart and its
// roofline): the device's peak for the precision a problem computes in, and its memory
// bandwidth. A ceiling that is not known is said, with why, never replaced by another
// precision's: int8 drawn under the f32 peak reads as far from a roof it is not under.
//
// Peaks are device properties named peak_gflops_<precision> (GFLOP/s; for int8, GOP/s):
// peak_gflops_f32, peak_gflops_f16 (GPUs), peak_gflops_int8 (CPUs with VNNI), peak_gflops_fp8_e4m3
// (CPUs: fp8 decoded to f32), ...; bf16 falls back to f16, whose rate the GPUs ktune describes
// share. A device may explain a peak it lacks in its text, as no_peak_<precision>. The bandwidth
// is mem_bandwidth_gbs (a GPU's from its memory clock and bus, a CPU's measured read bandwidth).
#include <map>
#include <string>
#include <vector>

#include "ktune/device.h"
#include "ktune/trial.h"

namespace ktune {

// A GPU's peaks as its backend works them out (cuda_peaks, hip_peaks: a table of dense FLOP or OPs
// per SM or CU per clock, by architecture): `properties` holds peak_gflops_<precision>, and
// `missing`, for a precision the device has no rate for, the note DeviceInfo::text keeps as
// no_peak_<precision>, which the charts show instead of a line.
struct DevicePeaks {
  std::map<std::string, double> properties;
  std::map<std::string, std::string> missing;
};

// The precision a problem's arithmetic runs in, from its key ("M=16,N=64,K=64,q_dtype=int8"):
// q_dtype (8-bit GEMMs: the codes' type), else dtype, else x_dtype (a weight-only quantized
// matmul computes in its activations' type); spellings normalised ("float16" -> "f16", "e4m3" ->
// "fp8_e4m3", "i8" -> "int8"); "" when the key names none.
std::string compute_dtype(const std::string& problem_key);

struct Ceiling {
  double value = 0;         // GFLOP/s (GOP/s for integer precisions) or GB/s; 0: not known
  std::string precision;    // what it is the peak of ("int8"); empty for the bandwidth
  std::string property;     // the device property it comes from ("peak_gflops_int8")
  std::string why_unknown;  // when value is 0: why, as a clause ("no int8 peak is known: ...")
};

// The device's peak for the problem's precision; f32 for a key without one.
Ceiling compute_ceiling(const DeviceInfo& device, const std::string& problem_key);
// mem_bandwidth_gbs, or why it is not known.
Ceiling memory_ceiling(const DeviceInfo& device);
// The roofline: min(peak, bandwidth x intensity), in GFLOP/s; intensity in FLOP per byte of
// minimum traffic. Without a bandwidth or an intensity, the peak.
double roofline_gflops(double peak_gflops, double bandwidth_gbs, double flops_per_byte);

// A GPU's table peaks are worked out at its maximum clock (CUDA's sm_clock_mhz, HIP's clock_mhz),
// while a kernel at a power cap runs below it (an H200 at 700 W: 1,500-1,850 MHz of 1,980): the
// peak at the clock a trial ran at, read while it was timed (its sm_clock_mhz metric,
// conditions.h), is peak x that clock / the maximum. 0 where either clock is not known (a CPU; a
// run without NVML).
double peak_at_clock(double peak, const DeviceInfo& device, const std::map<std::string, double>& trial_metrics);

// One device's ceilings, looked up by problem key and remembered: a chart asks for each of
// 100,000 trials. Not thread-safe (its cache is filled as it is asked).
class DeviceCeilings {
 public:
  DeviceCeilings() = default;
  explicit DeviceCeilings(DeviceInfo device);
  const DeviceInfo& device() const { return device_; }
  const Ceiling& compute(const std::string& problem_key) const;
  const Ceiling& memory() const { return memory_; }
  // What a throughput chart of `trials` (those of problem `shape`; "" for all) cannot show, as
  // clauses joined by "; " ("" when it lacks nothing): no trial with the metric (GB/s when `bytes`,
  // else TFLOP/s or a recorded GFLOP/s) and why; precisions whose peak is not known and why; and,
  // where trials have the other metric, the bandwidth that the roofline or the GB/s roof needs.
  std::string gaps(const std::vector<Trial>& trials, const std::string& shape, bool bytes) const;

 private:
  DeviceInfo device_;
  Ceiling memory_ = memory_ceiling(DeviceInfo{});
  mutable std::map<std::string, Ceiling, std::less<>> by_key_;
};

}  // namespace ktune
