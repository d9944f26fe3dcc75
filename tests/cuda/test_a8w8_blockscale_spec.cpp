// The CUDA gemm_a8w8_blockscale family's spec without a GPU: it is built in with the CPU family's
// key, its shape rules refuse K off the 128-block grid and int8 (not on CUDA yet) naming what to
// do, its inputs are finite e4m3 codes and positive scales of the layouts the kernel reads, each
// config is one launch of one producer and BLOCK_M/64 consumer warpgroups over every tile, and
// configs covering every tile shape, ring depth and promotion depth, and the reference, compile
// with NVRTC for sm_90a within the H100's limits on M = 16, 128, 1024 (N = K = 4096) and a ragged
// shape. Running them waits for a GPU (cuda/test_a8w8_blockscale_gpu).
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "a8w8_covering.h"
#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "h100.h"
#include "ktune/backends/cuda.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"
#include "ktune/spec_inputs.h"
#include "spec_build.h"

using namespace ktune;
using ktune_test::h100;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(KTUNE_SOURCE_DIR);

const cuda::Compiler& compiler() {
  static const ktune_test::ScratchCompiler s("ktune_a8w8_spec_", "sm_90a");
  return s.c;
}

KernelSpec load() {
  return KernelSpec::load(kSource / "resources/kernels/cuda/gemm_a8w8_blockscale.json", cuda_spec_dialect());
}

Problem problem(long M, long N, long K, const std::string& q = "fp8_e4m3", const std::string& out = "bf16") {
  Problem p;
  p.family = "gemm_a8w8_blockscale";
  p.fields = {
      {"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)}, {"q_dtype", q}, {"out_dtype", out}};
  return p;
}

Variables context(const KernelSpec& s, const Problem& p) { return ktune_test::h100_context(s, p); }

std::string build(const KernelSpec& s, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c) {
  return ktune_test::build_on(compiler(), s, launches, p, c, h100());
}

// Built in (embedded), with the CPU family's key, FLOP and byte counts.
void test_built_in_with_the_cpu_key() {
  const KernelSpec s = load();
  std::string names;
  for (const auto& f : s.family().key_fields) names += f.name + " ";
  CHECK_MSG(names == "M N K q_dtype out_dtype ", names);
  CHECK(s.family().bucket_field == "M");
  const Problem p = problem(16, 300, 256);
  CHECK(s.family().flops(p) == 2.0 * 16 * 300 * 256);
  CHECK_MSG(s.family().bytes(p) == 16 * 256 + 300 * 256 + 4 * 16 * 2 + 4 * 3 * 2 + 2 * 16 * 300,
            std::to_string(s.family().bytes(p)));
  const auto backend = make_cuda_backend(CudaBackendOptions{fs::path()});
  bool listed = false;
  for (const auto& f : backend->families()) listed |= f.name == "gemm_a8w8_blockscale";
  CHECK_MSG(listed, "gemm_a8w8_blockscale is not among the CUDA backend's built-in families");
}

void test_shape_rules() {
  const KernelSpec s = load();
  s.family().check_shape(problem(16, 4096, 4096));
  s.family().check_shape(problem(100, 300, 384, "fp8_e4m3", "f32"));
  CHECK_THROWS(InputError, s.family().check_shape(problem(16, 4096, 4000)), "multiple of 128");
  CHECK_THROWS(InputError, s.family().check_shape(problem(16, 4096, 4096, "int8")), "--backend cpu");
}

// Codes are finite e4m3 spanning the range, scales positive, in the layouts the kernel reads:
// a_scale [M, K/128], b_scale [ceil(N/128), K/128].
void test_inputs() {
  const KernelSpec s = load();
  const SpecInputs in = generate_spec_inputs(s, problem(100, 300, 384), h100(), 5);
  CHECK(in.inputs.at("A").data.size() == 100 * 384 && in.inputs.at("W").data.size() == 300 * 384);
  for (const char* name : {"A", "W"}) {
    float amax = 0;
    for (const unsigned char c : in.inputs.at(name).data) {
      CHECK_MSG((c & 0x7f) != 0x7f, std::string(name) + " holds a NaN code");
      amax = std::max(amax, std::fabs(e4m3_to_f32(c)));
    }
    CHECK_MSG(amax >= 400, std::string(name) + " does not span e4m3's range");
  }
  for (const auto& [name, count] : {std::pair{"a_scale", 100 * 3}, {"b_scale", 3 * 3}}) {
    const auto& data = in.inputs.at(name).data;
    CHECK_MSG(data.size() == 4u * count, name);
    for (std::size_t i = 0; i < data.size() / 4; ++i) CHECK(load_elem(data.data(), ElemType::F32, i) > 0);
  }
}

// A producer warpgroup and BLOCK_M/64 consumers, a block per tile and K slice, or a persistent
// grid of one block per SM (the H100's 132) taking them in turn; split K adds the launch that
// sums the slices.
void test_launch_plan() {
  const KernelSpec s = load();
  Config c = s.family().default_config;
  for (const auto& [bm, bn, split, persistent] :
       {std::tuple{64, 128, 1, 0}, {128, 256, 1, 0}, {64, 64, 4, 0}, {64, 128, 1, 1}, {128, 256, 1, 1}}) {
    c.set("BLOCK_M", bm);
    c.set("BLOCK_N", bn);
    c.set("SPLITK", split);
    c.set("PERSISTENT", persistent);
    const auto plan = gpu::plan_build(s, s.launches(), problem(1000, 4100, 512), c, h100(), compiler());
    CHECK_MSG(plan.launches.size() == (split > 1 ? 2u : 1u), c.key());
    const LaunchGeometry& g = plan.launches.front().geometry;
    const std::uint64_t items = ((1000 + bm - 1) / bm) * ((4100 + bn - 1) / bn) * split;
    CHECK_MSG(g.grid[0] == (persistent ? std::min<std::uint64_t>(items, 132) : items), c.key());
    CHECK_MSG(g.grid[1] == 1, c.key());
    CHECK_MSG(g.threads() == static_cast<std::uint64_t>((bm / 64 + 1) * 128), c.key());
  }
  // Persistent only where the tiles outnumber the SMs, overlapped partial sums only where two of
  // them fit in registers beside the accumulators.
  const auto allowed = [&](const Problem& p, const char* name, int bn) {
    bool any = false;
    for (const Config& v : s.family().default_space.enumerate(context(s, p)))
      any |= v.get(name) == 1 && v.get("BLOCK_N") == bn;
    return any;
  };
  CHECK(!allowed(problem(16, 1024, 4096), "PERSISTENT", 128));  // 8 tiles, split 8 ways at most
  CHECK(allowed(problem(4096, 7168, 2048), "PERSISTENT", 128));
  CHECK(allowed(problem(1024, 4096, 4096), "OVERLAP", 128));
  CHECK(!allowed(problem(1024, 4096, 4096), "OVERLAP", 256));
  // Split K only where the tiles leave SMs idle: decode, not 512 tiles of 64 x 128 at M = 1024.
  const auto splits = [&](const Problem& p, int bm, int bn) {
    int most = 0;
    for (const Config& v : s.family().default_space.enumerate(context(s, p)))
      if (v.get("BLOCK_M") == bm && v.get("BLOCK_N") == bn) most = std::max<int>(most, v.get("SPLITK"));
    return most;
  };
  CHECK(splits(problem(16, 4096, 4096), 64, 128) == 8);
  CHECK(splits(problem(1024, 4096, 4096), 64, 128) == 1);
}

// Every tile shape and ring depth, and the reference, build within the H100's limits; small M
// keeps one 64-row consumer.
void test_builds() {
  const KernelSpec s = load();
  int built = 0;
  for (const Problem& p : {problem(16, 4096, 4096), problem(128, 4096, 4096), problem(1024, 4096, 4096),
                           problem(100, 300, 384, "fp8_e4m3", "f32")}) {
    const auto valid = s.family().default_space.enumerate(context(s, p));
    CHECK_MSG(!s.family().default_space.violated(s.family().default_config, context(s, p)), p.key());
    const auto chosen = ktune_test::a8w8_covering(valid);
    for (const Config& c : chosen) {
      CHECK_MSG(p.field("M") != "16" || c.get("BLOCK_M") == 64, c.key());
      const std::string why = build(s, s.launches(), p, c);
      CHECK_MSG(why.empty(), p.key() + " " + c.key() + ": " + why);
      built += why.empty();
    }
    const std::string ref = build(s, {s.reference().launch}, p, s.family().default_config);
    CHECK_MSG(ref.empty(), p.key() + " reference: " + ref);
    std::printf("%s: %zu valid configs, %zu built\n", p.key().c_str(), valid.size(), chosen.size());
  }
  CHECK(built >= 4 * 3);
}

}  // namespace

int main() {
  test_built_in_with_the_cpu_key();
  test_shape_rules();
  test_inputs();
  test_launch_plan();
  test_builds();
  return ktune_test::finish("test_a8w8_blockscale_spec");
}
