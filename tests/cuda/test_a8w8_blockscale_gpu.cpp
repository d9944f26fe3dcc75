// The gemm_a8w8_blockscale family on the device, int8 and fp8 codes: its reference kernel against
// a brute force on the host (f64, every code dequantized with its block's scale), then configs
// covering every tile shape, ring depth, promotion depth (fp8's PROMOTE_K: how long the tensor
// cores sum in reduced precision) and warp grid (int8's WARPS_M x WARPS_N) against that reference
// with ktune's default atol and rtol, bf16 and f32 out, on shapes with partial tiles on every side
// (M, N off the tile grid; N off the 128-column scale grid), one tile (decode), several K blocks
// and split-K with a ragged (and an empty) slice. int8 sums each K block exactly, so every output
// must be within the tolerance; fp8 may miss it on 1 % (below). int8 runs on sm_80 and later,
// fp8 on Hopper (sm_90a) only: elsewhere the test says what it skipped.
#include <cstdio>
#include <cstdlib>

#include "a8w8_covering.h"
#include "check.h"
#include "device_checks.h"
#include "gpu.h"
#include "ktune/backends/gpu.h"
#include "ktune/host_data.h"
#include "ktune/measurement.h"
#include "ktune/search_space.h"

using namespace ktune;

namespace {

struct Shape {
  long M, N, K;
  std::string out;
};

// Y[m, n] = sum over k of (A[m, k] a_scale[m, k/128]) (W[n, k] b_scale[n/128, k/128]), codes
// read as int8 or e4m3: each 128-deep block's dot product of the codes, times its two scales.
std::vector<double> brute_force(const GpuSessionInfo& s, const Shape& sh, bool int8) {
  const auto values = [int8](const std::vector<unsigned char>& codes) {
    std::vector<double> v(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i)
      v[i] =
          int8 ? static_cast<double>(static_cast<signed char>(codes[i])) : static_cast<double>(e4m3_to_f32(codes[i]));
    return v;
  };
  const std::vector<double> a = values(s.host_input("A")), w = values(s.host_input("W"));
  const auto &sa = s.host_input("a_scale"), &sb = s.host_input("b_scale");
  const long kb = sh.K / 128;
  std::vector<double> out(sh.M * sh.N, 0);
  for (long m = 0; m < sh.M; ++m)
    for (long n = 0; n < sh.N; ++n) {
      double acc = 0;
      for (long b = 0; b < kb; ++b) {
        const double* ar = a.data() + m * sh.K + b * 128;
        const double* wr = w.data() + n * sh.K + b * 128;
        double dot = 0;
        for (int k = 0; k < 128; ++k) dot += ar[k] * wr[k];
        acc += dot * load_elem(sa.data(), ElemType::F32, m * kb + b) *
               load_elem(sb.data(), ElemType::F32, (n / 128) * kb + b);
      }
      out[m * sh.N + n] = acc;
    }
  return out;
}

// Validates the covering configs of q_dtype `q` on every shape; returns the validations run.
int validate_type(const ktune_test::Gpu& gpu, const KernelFamily& family, const std::string& q, const Tolerance& tol) {
  // The fourth splits 17 K blocks 2, 4 and 8 ways (8: three a slice, the last slice empty); the
  // last has more tiles than an H100 or H200 has SMs for every tile but 128 x 256, so that a
  // persistent block takes one tile or two, and a last wave of 12 to 48 tiles (on 132 SMs) that
  // PERSISTENT 2 splits 2 or 4 ways along its 9 K blocks (4: three a slice, the last empty).
  const Shape shapes[] = {{16, 200, 256, "bf16"},
                          {200, 391, 512, "bf16"},  // odd N: Y stored a value at a time
                          {130, 264, 384, "f32"},
                          {40, 136, 2176, "bf16"},
                          {1100, 2000, 1152, "bf16"}};
  int validated = 0;
  for (const Shape& sh : shapes) {
    const Problem p = ktune_test::make_problem(family, {{"M", std::to_string(sh.M)},
                                                        {"N", std::to_string(sh.N)},
                                                        {"K", std::to_string(sh.K)},
                                                        {"q_dtype", q},
                                                        {"out_dtype", sh.out}});
    auto session = gpu.backend->open(gpu.device, family, p, 2024);
    const auto& info = dynamic_cast<const GpuSessionInfo&>(*session);
    ktune_test::check_reference(info.reference_output(), brute_force(info, sh, q == "int8"), tol, p.key());
    Variables ctx = gpu.device.variables();
    for (const auto& [name, v] : family.variables(p)) ctx[name] = v;
    const auto chosen = ktune_test::a8w8_covering(family.default_space.enumerate(ctx));
    validated += ktune_test::validate_configs(*session, chosen, tol, p.key(), [](const Config&) { return 1; });
    std::printf("%s: reference = brute force, %zu configs validated\n", p.key().c_str(), chosen.size());
  }
  return validated;
}

// The spec's baseline, cuBLASLt's block-scaled fp8 gemm (torch._scaled_mm's call), computes the
// family's product where its layouts hold (M a multiple of 4, K of 512, N of 8): its output must
// match the reference as a config's does, or the ratios the tuner prints would time another
// computation. Elsewhere there is none, and the session says so by its empty name.
int validate_baseline(const ktune_test::Gpu& gpu, const KernelFamily& family, const Tolerance& tol) {
  int validated = 0;
  for (const Shape& sh : {Shape{256, 2112, 1024, "bf16"}, Shape{64, 384, 512, "f32"}, Shape{130, 264, 512, "bf16"}}) {
    const Problem p = ktune_test::make_problem(family, {{"M", std::to_string(sh.M)},
                                                        {"N", std::to_string(sh.N)},
                                                        {"K", std::to_string(sh.K)},
                                                        {"q_dtype", "fp8_e4m3"},
                                                        {"out_dtype", sh.out}});
    auto session = gpu.backend->open(gpu.device, family, p, 2024);
    const bool applies = sh.M % 4 == 0;
    CHECK_MSG(session->baseline_name() == (applies ? "cuBLASLt block-scaled" : ""),
              p.key() + ": baseline '" + session->baseline_name() + "'");
    if (!applies) continue;
    try {
      auto base = session->prepare_baseline();
      CHECK_MSG(base != nullptr, p.key() + ": no baseline kernel");
      if (!base) continue;
      const Validation v = session->validate(*base, tol);
      CHECK_MSG(v.mismatch_fraction <= tol.max_mismatch_fraction,
                p.key() + " cuBLASLt block-scaled: " + std::to_string(100 * v.mismatch_fraction) +
                    " % of outputs out of tolerance");
      std::printf("%s: cuBLASLt block-scaled against the reference: max abs error %g, %.3f %% beyond tolerance\n",
                  p.key().c_str(), v.max_abs_error, 100 * v.mismatch_fraction);
      ++validated;
    } catch (const TrialFailure& e) {
      CHECK_MSG(false, p.key() + " cuBLASLt block-scaled: " + to_string(e.status()) + ": " + e.what());
    }
  }
  return validated;
}

// A PERSISTENT 2 config at a shape its constraints rule out, as a registry's nearest bucket can hand
// it to serving code: its last wave has more slices than the grid has blocks. tail_reduce waits for
// all of a tile's slices, so splitting that wave would hang; the kernel takes every tile whole.
int validate_outside_constraints(const ktune_test::Gpu& gpu, const KernelFamily& family, const Tolerance& tol) {
  const int sms = static_cast<int>(gpu.device.property("sms")), rows = 3, split = 4;
  Config c = family.default_config;
  for (auto [k, v] : {std::pair{"BLOCK_M", 128},
                      {"BLOCK_N", 128},
                      {"num_stages", 4},
                      {"SPLITK", split},
                      {"PROMOTE_K", 128},
                      {"PERSISTENT", 2}})
    c.set(k, v);
  int cols = sms / rows + 1;  // tiles past one wave, the last wave's slices past the blocks
  while (rows * cols % sms * split <= sms) ++cols;
  const Problem p = ktune_test::make_problem(family, {{"M", std::to_string(rows * 128)},
                                                      {"N", std::to_string(cols * 128 - 40)},
                                                      {"K", "1152"},
                                                      {"q_dtype", "fp8_e4m3"},
                                                      {"out_dtype", "bf16"}});
  Variables ctx = gpu.device.variables();
  for (const auto& [name, v] : family.variables(p)) ctx[name] = v;
  const auto why = family.default_space.violated(c, ctx);
  CHECK_MSG(why.has_value(), p.key() + " " + c.key() + " should be outside the constraints");
  auto session = gpu.backend->open(gpu.device, family, p, 2024);
  const int validated = ktune_test::validate_configs(*session, {c}, tol, p.key(), [](const Config&) { return 2; });
  std::printf("%s %s, outside the constraints (%s): validated, no hang\n", p.key().c_str(), c.key().c_str(),
              why ? why->c_str() : "");
  return validated;
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_a8w8_blockscale_gpu");
  const int cc = static_cast<int>(gpu.device.property("cc_major"));
  const std::string arch =
      "sm_" + std::to_string(cc) + std::to_string(static_cast<int>(gpu.device.property("cc_minor")));
  if (cc < 8) {
    std::printf("test_a8w8_blockscale_gpu skipped: int8 needs sm_80 (mma.sync m16n8k32), fp8 Hopper; this is %s\n",
                arch.c_str());
    return 77;
  }
  const KernelFamily family = gpu.backend->family("gemm_a8w8_blockscale");
  // int8: ktune's default tolerance, every output within it.
  int validated = validate_type(gpu, family, "int8", Tolerance{});
  if (cc == 9) {
    // ktune's default atol and rtol, and 1 % of the outputs allowed beyond them: Hopper's fp8 wgmma
    // adds the products of each 32-deep instruction with about 14 bits of mantissa (DeepSeek-V3,
    // section 3.3.2), so an output near zero whose partial sums reach thousands errs by 0.1-0.5.
    // The H200's first run put 0.07-0.13 % of the outputs beyond the default (PROMOTE_K 32) and up
    // to 0.48 % (PROMOTE_K 128); a wrong index or scale errs by the outputs' own size everywhere.
    Tolerance tol;
    tol.max_mismatch_fraction = 0.01;
    validated += validate_type(gpu, family, "fp8_e4m3", tol);
    validated += validate_baseline(gpu, family, tol);
    validated += validate_outside_constraints(gpu, family, tol);
  } else {
    std::printf("fp8 skipped: its kernel is Hopper's (sm_90a wgmma), this is %s\n", arch.c_str());
  }
  std::printf("%d validations\n", validated);
  return ktune_test::finish("test_a8w8_blockscale_gpu");
}
