// The CUDA grouped_gemm family's spec without a GPU: it parses with the CPU family's key, its
// space on an H100 keeps every fusion choice for Unsloth's shapes, its routing inputs are the
// core's (hot and empty experts, expert order consistent), the unfused permutations are launches
// of their own exactly where a pass needs them, and configs covering every value of every
// parameter, in every pass and both dtypes, and the reference compile with NVRTC for sm_90a within
// the H100's limits; so do the Hopper kernel's (WGMMA=1, bench/cuda/grouped_space.json) configs
// of every tile shape in fwd and dX on Unsloth's shapes and a ragged one. Running them waits for a
// GPU (cuda/test_grouped_gemm_gpu).
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "grouped_covering.h"
#include "h100.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"
#include "ktune/spec_inputs.h"
#include "spec_build.h"

using namespace ktune;
using ktune_test::h100;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(KTUNE_SOURCE_DIR);

// The H100's target, as the backend compiles for it (wgmma needs the arch-specific one). Cached
// in a folder of this run's own: shapes share builds, and nothing stays behind.
const cuda::Compiler& compiler() {
  static const ktune_test::ScratchCompiler s("ktune_grouped_spec_", "sm_90a");
  return s.c;
}

KernelSpec load() {
  return KernelSpec::load(kSource / "resources/kernels/cuda/grouped_gemm.json", cuda_spec_dialect());
}

Problem problem(const KernelSpec& s, long experts, long tokens, long topk, long hidden, long inter,
                const std::string& dtype, const std::string& pass) {
  Problem p;
  p.family = s.family().name;
  p.fields = {{"experts", std::to_string(experts)},
              {"tokens", std::to_string(tokens)},
              {"topk", std::to_string(topk)},
              {"hidden", std::to_string(hidden)},
              {"intermediate", std::to_string(inter)},
              {"dtype", dtype},
              {"pass", pass}};
  return p;
}

Variables context(const KernelSpec& s, const Problem& p) { return ktune_test::h100_context(s, p); }

// "" when config `c` plans, compiles and fits the H100; else why not.
std::string build(const KernelSpec& s, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c,
                  const Variables& generated) {
  return ktune_test::build_on(compiler(), s, launches, p, c, generated);
}

std::vector<std::int32_t> ints(const HostInput& in) {
  std::vector<std::int32_t> v(in.data.size() / 4);
  std::memcpy(v.data(), in.data.data(), v.size() * 4);
  return v;
}

void test_key_matches_the_cpu_family() {
  const KernelSpec s = load();
  std::string names;
  for (const auto& f : s.family().key_fields) names += f.name + " ";
  CHECK_MSG(names == "experts tokens topk hidden intermediate dtype pass ", names);
  CHECK(s.family().bucket_field == "tokens");
  CHECK_THROWS(InputError, s.family().check_shape(problem(s, 2, 8, 3, 64, 64, "bf16", "fwd")), "topk");
  CHECK_THROWS(InputError, s.family().check_shape(problem(s, 8, 8, 2, 60, 64, "bf16", "fwd")), "multiples of 8");
}

// The routing the kernels read: skewed, with empty experts where they are many, offsets and
// expert order consistent; route_busiest sizes the grid.
void test_routing_inputs() {
  const KernelSpec s = load();
  const Problem p = problem(s, 64, 32, 2, 64, 64, "bf16", "fwd");
  const SpecInputs in = generate_spec_inputs(s, p, h100(), 11);
  const auto route = ints(in.inputs.at("route")), offsets = ints(in.inputs.at("offsets"));
  const auto rows = ints(in.inputs.at("rows")), toks = ints(in.inputs.at("toks"));
  CHECK(route.size() == 64 && offsets.size() == 65 && offsets.back() == 64);
  int empty = 0, busiest = 0;
  for (int e = 0; e < 64; ++e) {
    empty += offsets[e + 1] == offsets[e];
    busiest = std::max(busiest, offsets[e + 1] - offsets[e]);
    for (int i = offsets[e]; i < offsets[e + 1]; ++i) {
      CHECK(route[rows[i]] == e);
      CHECK(toks[i] == rows[i] / 2);
    }
  }
  CHECK_MSG(empty > 10, std::to_string(empty) + " empty experts of 64 for 64 routed rows");
  CHECK(in.variables.at("route_busiest") == busiest);
}

// The unfused sides are launches of their own, only where the pass has that side.
void test_permutation_launches() {
  const KernelSpec s = load();
  const Config base = s.family().default_config;
  struct Case {
    const char* pass;
    bool px, py;
    int launches;
    bool wgmma = false;  // the Hopper kernel: a fused side gathered by cp.async, as mma.sync's
  } cases[] = {{"fwd", true, false, 2},       {"fwd", false, true, 2},       {"fwd", false, false, 3},
               {"dX", true, false, 2},        {"dX", false, true, 2},        {"dX", false, false, 3},
               {"dW", true, false, 2},        {"dW", false, true, 2},        {"dW", false, false, 3},
               {"fwd", true, false, 2, true}, {"fwd", false, true, 2, true}, {"fwd", false, false, 3, true},
               {"dX", true, false, 2, true},  {"dX", false, true, 2, true},  {"dX", false, false, 3, true},
               {"dW", true, false, 2, true},  {"dW", false, true, 2, true},  {"dW", false, false, 3, true}};
  for (const Case& c : cases) {
    const Problem p = problem(s, 8, 64, 2, 64, 64, "bf16", c.pass);
    Config config = base;
    config.set("permute_x", c.px);
    config.set("permute_y", c.py);
    config.set("WGMMA", c.wgmma ? 1 : 0);
    if (c.wgmma) config.set("num_warps", 8);
    const Variables ctx = generate_spec_inputs(s, p, h100(), 1).variables;
    const auto plan = gpu::plan_build(s, s.launches(), p, config, ctx, compiler());
    CHECK_MSG(static_cast<int>(plan.launches.size()) == c.launches,
              std::string(c.pass) + " " + config.key() + ": " + std::to_string(plan.launches.size()) + " launches");
    const int gemms = static_cast<int>(std::count_if(plan.launches.begin(), plan.launches.end(), [&](const auto& l) {
      return plan.modules[l.module].names[l.name] == (c.wgmma ? "grouped_gemm_wgmma" : "grouped_gemm");
    }));
    CHECK_MSG(gemms == 1, std::string(c.pass) + " " + config.key() + ": " + std::to_string(gemms) + " GEMM launches");
  }
}

void test_space_and_builds() {
  const KernelSpec s = load();
  int built = 0;
  for (const char* pass : {"fwd", "dX", "dW"})
    for (const char* dtype : {"bf16", "f16"}) {
      const Problem p = problem(s, 8, 64, 2, 256, 512, dtype, pass);
      const Variables ctx = context(s, p);
      const auto valid = s.family().default_space.enumerate(ctx);
      CHECK_MSG(!s.family().default_space.violated(s.family().default_config, ctx), p.key());
      const Variables generated = generate_spec_inputs(s, p, h100(), 1).variables;
      const auto chosen = ktune_test::grouped_covering(valid);
      for (const Config& c : chosen) {
        const std::string why = build(s, s.launches(), p, c, generated);
        CHECK_MSG(why.empty(), p.key() + " " + c.key() + ": " + why);
        built += why.empty();
      }
      const std::string ref = build(s, {s.reference().launch}, p, s.family().default_config, generated);
      CHECK_MSG(ref.empty(), p.key() + " reference: " + ref);
      std::printf("%s: %zu valid configs, %zu built\n", p.key().c_str(), valid.size(), chosen.size());
    }
  CHECK(built > 40);
}

// The Hopper kernel in the family's space: on Unsloth's three shapes (Mixtral prefill,
// DeepSeek-like, decode) and a ragged one (partial tiles everywhere, empty experts), every pass
// builds every tile shape wgmma allows, both with its permuted operands read by TMA from the
// expert-order copies and with the fused side gathered through the routing by cp.async, with
// cooperative consumers and (tiles of 128 accumulators a thread at most) ping-pong ones, and in
// clusters of two multicasting B (fwd: every tile; dX and dW: B at least two 64-column boxes wide).
void test_wgmma_builds() {
  const KernelSpec s = load();
  const SearchSpace& space = s.family().default_space;
  CHECK(!space.violated(s.family().default_config, context(s, problem(s, 8, 64, 2, 256, 512, "bf16", "fwd"))));
  struct Shape {
    long experts, tokens, topk, hidden, inter;
  } shapes[] = {{8, 4096, 2, 4096, 14336}, {64, 4096, 6, 2048, 1408}, {8, 16, 2, 4096, 14336}, {16, 40, 3, 200, 72}};
  int built = 0;
  for (const Shape& sh : shapes)
    for (const char* pass : {"fwd", "dX", "dW"}) {
      const Problem p = problem(s, sh.experts, sh.tokens, sh.topk, sh.hidden, sh.inter, "bf16", pass);
      const Variables generated = generate_spec_inputs(s, p, h100(), 1).variables;
      std::set<std::string> tiles, variants;
      const auto valid = space.enumerate(context(s, p));
      std::size_t wgmma = 0;
      for (const Config& c : valid) {
        if (c.get("WGMMA") != 1) continue;
        ++wgmma;
        const std::string tile = std::to_string(c.get("BLOCK_SIZE_M")) + "x" + std::to_string(c.get("BLOCK_SIZE_N"));
        tiles.insert(tile);
        const bool gathered = std::string(pass) == "dW" ? c.get("permute_x") || c.get("permute_y")
                                                        : c.get(std::string(pass) == "fwd" ? "permute_x" : "permute_y");
        const std::string consumers = c.get("PINGPONG") ? " ping-pong" : c.get("CLUSTER") > 1 ? " cluster" : "";
        if (!variants.insert(tile + consumers + (gathered ? " gathered" : " tma")).second) continue;
        const auto plan = gpu::plan_build(s, s.launches(), p, c, generated, compiler());
        CHECK(std::any_of(plan.launches.begin(), plan.launches.end(),
                          [&](const auto& l) { return plan.modules[l.module].names[l.name] == "grouped_gemm_wgmma"; }));
        const std::string why = build(s, s.launches(), p, c, generated);
        CHECK_MSG(why.empty(), p.key() + " " + c.key() + ": " + why);
        built += why.empty();
      }
      std::printf("%s: %zu of %zu valid configs on wgmma, %zu tiles, %zu variants built\n", p.key().c_str(), wgmma,
                  valid.size(), tiles.size(), variants.size());
      CHECK_MSG(tiles.size() == 6,
                p.key() + ": " + std::to_string(tiles.size()) + " of the 6 wgmma tiles (64 or 128 x 64, 128 or 256)");
      // Ping-pong: every tile but 128 x 256 (256 accumulators a thread); clusters: fwd every tile.
      const std::size_t clustered = std::string(pass) == "fwd" ? 12 : 8;
      CHECK_MSG(variants.size() == 12 + 10 + clustered, p.key() + ": " + std::to_string(variants.size()) + " variants");
    }
  CHECK(built == 4 * (34 + 30 + 30));
  // The bench's space file keeps every pass on wgmma (what won on the H100).
  const SearchSpace bench = s.family().user_space(SearchSpace::load(kSource / "bench/cuda/grouped_space.json"));
  for (const char* pass : {"fwd", "dX", "dW"}) {
    const auto configs = bench.enumerate(context(s, problem(s, 8, 64, 2, 256, 512, "bf16", pass)));
    CHECK_MSG(!configs.empty(), pass);
    for (const Config& c : configs) CHECK_MSG(c.get("WGMMA") == 1, c.key());
  }
}

// The decode ceiling (bench/cuda/grouped_read.json) reads the weights of the experts the same key's
// routing gives rows to: same key fields, the same routing and offsets for a key, and it builds;
// dW, whose bytes are not the weights, is refused.
void test_read_ceiling() {
  const KernelSpec gemm = load();
  const KernelSpec read = KernelSpec::load(kSource / "bench/cuda/grouped_read.json", cuda_spec_dialect());
  std::string a, b;
  for (const auto& f : gemm.family().key_fields) a += f.name + " ";
  for (const auto& f : read.family().key_fields) b += f.name + " ";
  CHECK_MSG(a == b, b);
  Problem p = problem(gemm, 8, 16, 2, 4096, 14336, "bf16", "dX");
  const SpecInputs g = generate_spec_inputs(gemm, p, h100(), 3);
  p.family = read.family().name;
  const SpecInputs r = generate_spec_inputs(read, p, h100(), 3);
  CHECK(ints(g.inputs.at("route")) == ints(r.inputs.at("route")));
  CHECK(ints(g.inputs.at("offsets")) == ints(r.inputs.at("offsets")));
  CHECK(!read.family().default_space.enumerate(context(read, p)).empty());
  const std::string why = build(read, read.launches(), p, read.family().default_config, r.variables);
  CHECK_MSG(why.empty(), why);
  Problem dw = problem(read, 8, 16, 2, 4096, 14336, "bf16", "dW");
  dw.family = read.family().name;
  CHECK_THROWS(InputError, read.family().check_shape(dw), "pass=fwd or pass=dX");
}

}  // namespace

int main() {
  test_key_matches_the_cpu_family();
  test_routing_inputs();
  test_permutation_launches();
  test_space_and_builds();
  test_wgmma_builds();
  test_read_ceiling();
  return ktune_test::finish("test_grouped_gemm_spec");
}
