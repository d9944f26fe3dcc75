// The grouped_gemm family on the device: its reference kernel against a brute force on the host
// (f64, straight from each routed row's expert), then configs covering every value of every
// parameter and every fusion choice against that reference, in each pass, on routings with empty
// and hot experts (64 experts for 48 routed rows; 4 experts for 300), f16 and bf16, and sizes that
// leave partial tiles on every side; then, with the reference alone, a shape of more tiles than
// two a block for every persistent config (blocks taking turns over several tiles, ping-pong
// consumers' turns at the ring). The configs come from the family's default space: on a Hopper
// GPU both kernels (WGMMA 0 and 1) in every pass, the wgmma kernel's A by TMA and gathered through
// the routing (dW's tiles past an expert's rows zero-filled); elsewhere mma.sync alone.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "check.h"
#include "device_checks.h"
#include "gpu.h"
#include "grouped_covering.h"
#include "ktune/backends/gpu.h"
#include "ktune/host_data.h"
#include "ktune/measurement.h"
#include "ktune/search_space.h"

using namespace ktune;

namespace {

struct Shape {
  long experts, tokens, topk, hidden, inter;
  std::string dtype, pass;
  bool many_tiles = false;  // persistent configs only, against the reference (too large for the brute force)
};

std::vector<std::int32_t> ints(const std::vector<unsigned char>& bytes) {
  std::vector<std::int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// fwd y[r] = x[t] w[e]^T; dX dx[r] = dy[r] w[e]; dW dw[e] = sum over r of e: dy[r]^T x[t].
std::vector<double> brute_force(const GpuSessionInfo& s, const Shape& sh) {
  const ElemType t = elem_type_from_string(sh.dtype);
  const auto route = ints(s.host_input("route"));
  const long H = sh.hidden, I = sh.inter, R = sh.tokens * sh.topk;
  auto at = [&](const char* name, long i) { return load_elem(s.host_input(name).data(), t, i); };
  std::vector<double> out;
  if (sh.pass == "fwd") {
    out.assign(R * I, 0);
    for (long r = 0; r < R; ++r)
      for (long n = 0; n < I; ++n)
        for (long k = 0; k < H; ++k)
          out[r * I + n] += at("x", r / sh.topk * H + k) * at("w", (route[r] * I + n) * H + k);
  } else if (sh.pass == "dX") {
    out.assign(R * H, 0);
    for (long r = 0; r < R; ++r)
      for (long k = 0; k < I; ++k) {
        const double d = at("dy", r * I + k);
        for (long n = 0; n < H; ++n) out[r * H + n] += d * at("w", (route[r] * I + k) * H + n);
      }
  } else {
    out.assign(sh.experts * I * H, 0);
    for (long r = 0; r < R; ++r)
      for (long m = 0; m < I; ++m) {
        const double d = at("dy", r * I + m);
        for (long n = 0; n < H; ++n) out[(route[r] * I + m) * H + n] += d * at("x", r / sh.topk * H + n);
      }
  }
  return out;
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_grouped_gemm_gpu");
  const KernelFamily family = gpu.backend->family("grouped_gemm");
  const SearchSpace& space = family.default_space;
  std::vector<Shape> shapes;
  for (const char* pass : {"fwd", "dX", "dW"}) {
    shapes.push_back({64, 24, 2, 72, 136, "bf16", pass});            // mostly empty experts, partial tiles
    shapes.push_back({4, 150, 2, 200, 56, "f16", pass});             // hot experts spanning several row tiles
    shapes.push_back({8, 2048, 2, 1024, 1024, "bf16", pass, true});  // 270-1,100 tiles: several a block
  }
  Tolerance tol;
  tol.atol = 0.05, tol.rtol = 0.02;
  int validated = 0;
  for (const Shape& sh : shapes) {
    const Problem p = ktune_test::make_problem(family, {{"experts", std::to_string(sh.experts)},
                                                        {"tokens", std::to_string(sh.tokens)},
                                                        {"topk", std::to_string(sh.topk)},
                                                        {"hidden", std::to_string(sh.hidden)},
                                                        {"intermediate", std::to_string(sh.inter)},
                                                        {"dtype", sh.dtype},
                                                        {"pass", sh.pass}});
    auto session = gpu.backend->open(gpu.device, family, p, 4321);
    const auto& info = dynamic_cast<const GpuSessionInfo&>(*session);
    if (!sh.many_tiles) ktune_test::check_reference(info.reference_output(), brute_force(info, sh), tol, p.key());
    Variables ctx = gpu.device.variables();
    for (const auto& [name, v] : family.variables(p)) ctx[name] = v;
    std::vector<Config> valid = space.enumerate(ctx);
    if (sh.many_tiles) std::erase_if(valid, [](const Config& c) { return c.get_or("PERSISTENT", 0) == 0; });
    const auto chosen = ktune_test::grouped_covering(valid);
    validated += ktune_test::validate_configs(*session, chosen, tol, p.key(), [](const Config&) { return 1; });
    std::printf("%s: %s, %zu configs validated\n", p.key().c_str(),
                sh.many_tiles ? "persistent configs" : "reference = brute force", chosen.size());
  }
  std::printf("%d validations\n", validated);
  return ktune_test::finish("test_grouped_gemm_gpu");
}
