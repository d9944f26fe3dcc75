// The CUDA grouped_gemm family's spec without a GPU: it parses with the CPU family's key, its
// space on an H100 keeps every fusion choice for Unsloth's shapes, its routing inputs are the
// core's (hot and empty experts, expert order consistent), the unfused permutations are launches
// of their own exactly where a pass needs them, and configs covering every value of every
// parameter, in every pass and both dtypes, and the reference compile with NVRTC for sm_90 within
// the H100's limits. Running them waits for a GPU (cuda/test_grouped_gemm_gpu).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

using namespace ktune;
using ktune_test::h100;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(KTUNE_SOURCE_DIR);

const cuda::Compiler& compiler() {
  static const cuda::Compiler c("sm_90", {});
  return c;
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

Variables context(const KernelSpec& s, const Problem& p) {
  Variables v = h100();
  for (const auto& [k, x] : s.family().variables(p)) v[k] = x;
  return v;
}

// "" when config `c` plans, compiles and fits the H100; else why not.
std::string build(const KernelSpec& s, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c,
                  const Variables& generated) {
  try {
    const auto plan = gpu::plan_build(s, launches, p, c, generated, compiler());
    auto modules = gpu::compile_plan(compiler(), s, plan);
    gpu::check_compiled(s, p, c, plan, modules, generated, compiler());
  } catch (const TrialFailure& e) {
    return e.what();
  }
  return "";
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
  } cases[] = {{"fwd", true, false, 2}, {"fwd", false, true, 2}, {"fwd", false, false, 3},
               {"dX", true, false, 2},  {"dX", false, true, 2},  {"dX", false, false, 3},
               {"dW", true, false, 2},  {"dW", false, true, 2},  {"dW", false, false, 3}};
  for (const Case& c : cases) {
    const Problem p = problem(s, 8, 64, 2, 64, 64, "bf16", c.pass);
    Config config = base;
    config.set("permute_x", c.px);
    config.set("permute_y", c.py);
    const Variables ctx = generate_spec_inputs(s, p, h100(), 1).variables;
    const auto plan = gpu::plan_build(s, s.launches(), p, config, ctx, compiler());
    CHECK_MSG(static_cast<int>(plan.launches.size()) == c.launches,
              std::string(c.pass) + " " + config.key() + ": " + std::to_string(plan.launches.size()) + " launches");
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

}  // namespace

int main() {
  test_key_matches_the_cpu_family();
  test_routing_inputs();
  test_permutation_launches();
  test_space_and_builds();
  return ktune_test::finish("test_grouped_gemm_spec");
}
