#include "ktune/backends/cuda_spec.h"

namespace ktune {

const SpecDialect& cuda_spec_dialect() {
  static const SpecDialect d = [] {
    SpecDialect d;
    d.backend = "cuda";
    // What the backend's describe() reports (backend.cpp).
    d.device_properties = {"sms",
                           "smem_per_block",
                           "smem_per_block_optin",
                           "smem_per_sm",
                           "regs_per_block",
                           "regs_per_sm",
                           "warp_size",
                           "max_threads_per_block",
                           "l2_bytes",
                           "sm_clock_mhz",
                           "mem_clock_mhz",
                           "mem_bandwidth_gbs",
                           "cc_major",
                           "cc_minor",
                           "peak_gflops_f16",
                           "peak_gflops_f32",
                           "peak_gflops_int8",
                           "peak_gflops_fp8_e4m3",
                           "peak_gflops_fp8_e5m2"};
    d.shared_memory_limit = "smem_per_block_optin";
    d.tensor_maps = true;
    d.clusters = true;  // sm_90 and newer; the derived cc_major constraint holds older devices off
    d.references["cublas_gemm"] = SpecDialect::ReferenceKind::gemm();  // cuBLAS, f32 output
    // cuBLASLt's block-scaled fp8 gemm (CUDA 12.9+, Hopper): a (codes [m, k]), b ([n, k]), a_scale
    // ([m, k/128]), b_scale ([ceil(n/128), k/128]) and c (the output) arguments, m, n, k expressions.
    SpecDialect::BaselineKind block_scaled;
    block_scaled.arguments = {"a", "b", "a_scale", "b_scale", "c"};
    block_scaled.expressions = {"m", "n", "k"};
    d.baselines["cublaslt_block_scaled"] = block_scaled;
    return d;
  }();
  return d;
}

DevicePeaks cuda_peaks(int major, int minor, double sms, double sm_clock_mhz) {
  // Dense tensor-core f16 (f32 accumulate) and plain f32 per SM per clock, by architecture; the
  // 8-bit types run at twice f16's rate where the tensor cores have them (int8 from Turing on,
  // fp8 from Ada on: sm_89, Hopper, Blackwell).
  double f16 = 256, f32 = 128;
  if (major == 7) f16 = minor == 0 ? 1024 : 512;                                // V100; T4
  if (major == 8) f16 = minor == 0 ? 2048 : 512, f32 = minor == 0 ? 128 : 256;  // A100; A10/L4/4090
  if (major == 9) f16 = 4096, f32 = 256;                                        // H100/H200
  if (major == 10) f16 = 8192, f32 = 256;                                       // B200
  if (major >= 11) f16 = 1024, f32 = 256;                                       // consumer Blackwell
  const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  const double gflops_per_rate = sms * sm_clock_mhz / 1000;
  DevicePeaks p;
  p.properties["peak_gflops_f16"] = f16 * gflops_per_rate;
  p.properties["peak_gflops_f32"] = f32 * gflops_per_rate;
  if (major > 7 || (major == 7 && minor >= 2))
    p.properties["peak_gflops_int8"] = 2 * f16 * gflops_per_rate;
  else
    p.missing["no_peak_int8"] = arch + " has no int8 tensor cores";
  for (const char* fp8 : {"fp8_e4m3", "fp8_e5m2"}) {
    if (major >= 9 || (major == 8 && minor >= 9))
      p.properties[std::string("peak_gflops_") + fp8] = 2 * f16 * gflops_per_rate;
    else
      p.missing[std::string("no_peak_") + fp8] = arch + " has no fp8 tensor cores (sm_89 and newer)";
  }
  return p;
}

}  // namespace ktune
