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
                           "peak_gflops_f32"};
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

}  // namespace ktune
