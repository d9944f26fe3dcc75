// The CUDA gemm_a8w8_blockscale family's spec without a GPU: it is built in with the CPU family's
// key, its shape rules refuse K off the 128-block grid naming what to do, its inputs are finite
// e4m3 codes (fp8) or int8 codes over [-127, 127], and positive scales of each type's range, in
// the layouts the kernels read; an fp8 config is one launch of one producer and BLOCK_M/64
// consumer warpgroups over every tile, an int8 config one launch of WARPS_M x WARPS_N warps a
// tile and K slice, taking no tensor map; fp8 needs Hopper and int8 sm_80, and neither type's
// configs multiply the other's parameters. Configs covering every tile shape, ring depth,
// promotion depth (fp8) and warp grid (int8), and the reference, compile with NVRTC within the
// device's limits: fp8 for sm_90a (the H100), int8 for sm_90a and sm_80 (the A100), on M = 16,
// 128, 1024 (N = K = 4096) and a ragged shape. Running them waits for a GPU
// (cuda/test_a8w8_blockscale_gpu).
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
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
const cuda::Compiler& ampere_compiler() {
  static const ktune_test::ScratchCompiler s("ktune_a8w8_spec_sm80_", "sm_80");
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

// The H100 (sm_90a) and the A100 (sm_80), as the spec tests see them.
struct Target {
  const char* name;
  Variables device;
  const cuda::Compiler& compiler;
};
std::vector<Target> targets() {
  return {{"sm_90a", h100(), compiler()}, {"sm_80", ktune_test::a100(), ampere_compiler()}};
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
  s.family().check_shape(problem(16, 4096, 4096, "int8"));
  CHECK_THROWS(InputError, s.family().check_shape(problem(16, 4096, 4000)), "multiple of 128");
  CHECK_THROWS(InputError, s.family().check_shape(problem(16, 4096, 4000, "int8")), "multiple of 128");
}

// Scales of a_scale [M, K/128] and b_scale [ceil(N/128), K/128], within [lo, hi]: the CPU
// family's per-block magnitudes (1/16 to 16) over the codes' largest value.
void check_scales(const SpecInputs& in, double lo, double hi, const std::string& key) {
  for (const auto& [name, count] : {std::pair{"a_scale", 100 * 3}, {"b_scale", 3 * 3}}) {
    const auto& data = in.inputs.at(name).data;
    CHECK_MSG(data.size() == 4u * count, key + " " + name);
    for (std::size_t i = 0; i < data.size() / 4; ++i) {
      const double v = load_elem(data.data(), ElemType::F32, i);
      CHECK_MSG(v >= lo && v <= hi, key + " " + name + " " + std::to_string(v));
    }
  }
}

// fp8: finite e4m3 codes spanning the range; int8: codes over [-127, 127] (never -128, which
// has no positive twin); scales of each type's range, in the layouts the kernels read.
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
  check_scales(in, 1.0 / 16 / 448 * 0.999, 16.0 / 448 * 1.001, "fp8");
  const SpecInputs i8 = generate_spec_inputs(s, problem(100, 300, 384, "int8"), h100(), 5);
  for (const char* name : {"A", "W"}) {
    int lo = 0, hi = 0;
    for (const unsigned char c : i8.inputs.at(name).data) {
      lo = std::min(lo, int(static_cast<signed char>(c)));
      hi = std::max(hi, int(static_cast<signed char>(c)));
    }
    CHECK_MSG(lo == -127 && hi == 127, std::string(name) + ": int8 codes over [" + std::to_string(lo) + ", " +
                                           std::to_string(hi) + "], not [-127, 127]");
  }
  check_scales(i8, 1.0 / 16 / 127 * 0.999, 16.0 / 127 * 1.001, "int8");
}

// A producer warpgroup and BLOCK_M/64 consumers, a block per tile and K slice, or a persistent
// grid of one block per SM (the H100's 132) taking them in turn, or of one cluster of two blocks
// per two SMs taking tiles twice as tall; split K adds the launch that sums the slices, except
// where PERSISTENT 2 splits the last wave's tiles (they sum themselves).
void test_launch_plan() {
  const KernelSpec s = load();
  Config c = s.family().default_config;
  for (const auto& [bm, bn, split, persistent, cluster] : {std::tuple{64, 128, 1, 0, 1},
                                                           {128, 256, 1, 0, 1},
                                                           {64, 64, 4, 0, 1},
                                                           {64, 128, 1, 1, 1},
                                                           {128, 256, 1, 1, 1},
                                                           {128, 128, 4, 2, 1},
                                                           {128, 128, 1, 1, 2},
                                                           {64, 256, 2, 2, 2}}) {
    c.set("BLOCK_M", bm);
    c.set("BLOCK_N", bn);
    c.set("SPLITK", split);
    c.set("PERSISTENT", persistent);
    c.set("CLUSTER", cluster);
    const auto plan = gpu::plan_build(s, s.launches(), problem(1000, 4100, 512), c, h100(), compiler());
    CHECK_MSG(plan.launches.size() == (split > 1 && persistent != 2 ? 2u : 1u), c.key());
    const LaunchGeometry& g = plan.launches.front().geometry;
    const std::uint64_t tile_m = bm * cluster;
    const std::uint64_t items = ((1000 + tile_m - 1) / tile_m) * ((4100 + bn - 1) / bn) * split;
    CHECK_MSG(g.grid[0] == (persistent ? cluster * std::min<std::uint64_t>(items, 132 / cluster) : items), c.key());
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
  // The last wave split along K where its slices fit in one wave of 132 SMs: 544 tiles of
  // 128 x 128 at 4096 x 2112 are 4 waves and 16 tiles (8 slices each: 128 items); 512 tiles of
  // 128 x 256 at 4096^3 leave 116 and 256 of 128 x 128 at 1024 x 4096 leave 124 (2 slices each
  // would be more than a wave).
  const auto tail_splits = [&](const Problem& p, int bm, int bn) {
    int most = 0;
    for (const Config& v : s.family().default_space.enumerate(context(s, p)))
      if (v.get("PERSISTENT") == 2 && v.get("BLOCK_M") == bm && v.get("BLOCK_N") == bn)
        most = std::max<int>(most, v.get("SPLITK"));
    return most;
  };
  CHECK(tail_splits(problem(4096, 2112, 7168), 128, 128) == 8);
  // In clusters of two the same shape is 272 tiles of 256 x 128 on 66 clusters: 4 waves and 8.
  const auto clustered_tail_splits = [&](const Problem& p, int bm, int bn) {
    int most = 0;
    for (const Config& v : s.family().default_space.enumerate(context(s, p)))
      if (v.get("PERSISTENT") == 2 && v.get("CLUSTER") == 2 && v.get("BLOCK_M") == bm && v.get("BLOCK_N") == bn)
        most = std::max<int>(most, v.get("SPLITK"));
    return most;
  };
  CHECK(clustered_tail_splits(problem(4096, 2112, 7168), 128, 128) == 8);
  // A cluster needs rows for both its blocks: none at M = 64.
  for (const Config& v : s.family().default_space.enumerate(context(s, problem(64, 16384, 4096))))
    CHECK_MSG(v.get("CLUSTER") == 1 || v.get("BLOCK_M") < 64, v.key());
  CHECK(tail_splits(problem(4096, 4096, 4096), 128, 256) == 0);
  CHECK(tail_splits(problem(1024, 4096, 4096), 128, 128) == 0);
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

// int8: one launch of WARPS_M x WARPS_N warps a tile and K slice (the fp8 kernel and its tensor
// maps stay out), its ring of BLOCK_M + BLOCK_N rows of 128 codes a stage in dynamic shared
// memory; split K adds the launch that sums the slices.
void test_int8_launch_plan() {
  const KernelSpec s = load();
  Config c = s.family().default_config;
  for (const auto& [bm, bn, wm, wn, stages, split] :
       {std::tuple{64, 128, 2, 2, 4, 1}, {16, 64, 1, 4, 6, 4}, {128, 256, 2, 4, 3, 1}}) {
    c.set("BLOCK_M", bm);
    c.set("BLOCK_N", bn);
    c.set("WARPS_M", wm);
    c.set("WARPS_N", wn);
    c.set("num_stages", stages);
    c.set("SPLITK", split);
    const auto plan = gpu::plan_build(s, s.launches(), problem(1000, 4100, 512, "int8"), c, h100(), compiler());
    CHECK_MSG(plan.launches.size() == (split > 1 ? 2u : 1u), c.key());
    const LaunchGeometry& g = plan.launches.front().geometry;
    CHECK_MSG(g.entry == "gemm_a8w8_blockscale_int8", g.entry);
    CHECK_MSG(g.grid[0] == static_cast<std::uint64_t>(((1000 + bm - 1) / bm) * ((4100 + bn - 1) / bn)), c.key());
    CHECK_MSG(g.grid[1] == static_cast<std::uint64_t>(split), c.key());
    CHECK_MSG(g.threads() == static_cast<std::uint64_t>(wm * wn * 32), c.key());
    CHECK_MSG(g.shared_bytes == static_cast<std::uint64_t>(stages * (bm + bn) * 128), c.key());
    for (const auto& arg : plan.launches.front().args) CHECK_MSG(arg != "tmA" && arg != "tmW", c.key());
  }
}

// fp8 needs Hopper and int8 sm_80 or later; each type's configs keep the other's parameters at
// their defaults, so neither multiplies the other's space; int8 tiles shrink to M (16 rows at
// decode) and warp tiles stay within 64 x 64 and 2048 outputs.
void test_spaces_by_type() {
  const KernelSpec s = load();
  const SearchSpace& space = s.family().default_space;
  const auto on = [&](const Variables& device, const Problem& p) {
    return space.enumerate(ktune_test::context_on(device, s, p));
  };
  Variables volta = h100();
  volta["cc_major"] = 7;
  for (const long M : {16L, 128L, 1024L}) {
    const Problem fp8 = problem(M, 4096, 4096), int8 = problem(M, 4096, 4096, "int8");
    CHECK_MSG(on(ktune_test::a100(), fp8).empty(), fp8.key() + ": fp8 configs on sm_80");
    CHECK_MSG(on(volta, int8).empty(), int8.key() + ": int8 configs on sm_70");
    CHECK_MSG(!on(ktune_test::a100(), int8).empty(), int8.key() + ": no int8 config on sm_80");
    for (const Config& c : on(h100(), fp8))
      CHECK_MSG(c.get("WARPS_M") == 2 && c.get("WARPS_N") == 2 && c.get("BLOCK_M") >= 64, c.key());
    std::set<std::string> int8_tiles;
    for (const Config& c : on(h100(), int8)) {
      CHECK_MSG(c.get("PROMOTE_K") == 32 && c.get("OVERLAP") == 0 && c.get("PERSISTENT") == 0 && c.get("CLUSTER") == 1,
                c.key());
      CHECK_MSG(M != 16 || c.get("BLOCK_M") == 16, c.key());
      const std::int64_t wtm = c.get("BLOCK_M") / c.get("WARPS_M"), wtn = c.get("BLOCK_N") / c.get("WARPS_N");
      CHECK_MSG(wtm % 16 == 0 && wtn % 16 == 0 && wtm <= 64 && wtn <= 64 && wtm * wtn <= 2048, c.key());
      int8_tiles.insert(std::to_string(c.get("BLOCK_M")) + "x" + std::to_string(c.get("BLOCK_N")));
    }
    CHECK_MSG(int8_tiles.size() >= (M == 16 ? 3u : 6u),
              int8.key() + ": " + std::to_string(int8_tiles.size()) + " int8 tile shapes");
  }
}

// The covering configs of `p` on `t`, and the reference, plan, compile and fit the device; returns
// how many configs built.
int build_covering(const KernelSpec& s, const Problem& p, const Target& t) {
  const auto valid = s.family().default_space.enumerate(ktune_test::context_on(t.device, s, p));
  const auto chosen = ktune_test::a8w8_covering(valid);
  CHECK_MSG(!chosen.empty(), p.key() + " on " + t.name + ": no valid config");
  int built = 0;
  for (const Config& c : chosen) {
    const std::string why = ktune_test::build_on(t.compiler, s, s.launches(), p, c, t.device);
    CHECK_MSG(why.empty(), p.key() + " " + c.key() + " on " + t.name + ": " + why);
    built += why.empty();
  }
  const std::string ref =
      ktune_test::build_on(t.compiler, s, {s.reference().launch}, p, s.family().default_config, t.device);
  CHECK_MSG(ref.empty(), p.key() + " reference on " + t.name + ": " + ref);
  std::printf("%s on %s: %zu valid configs, %zu built\n", p.key().c_str(), t.name, valid.size(), chosen.size());
  return built;
}

const std::array<long, 3> kShapes[] = {{16, 4096, 4096}, {128, 4096, 4096}, {1024, 4096, 4096}, {100, 300, 384}};

// fp8: every tile shape, ring depth and promotion depth, and the reference, build for sm_90a
// within the H100's limits (and the last wave's splits at DeepSeek-V3's 4096 x 2112 x 7168);
// small M keeps one 64-row consumer.
void test_builds() {
  const KernelSpec s = load();
  int built = 0;
  std::vector<std::array<long, 3>> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({4096, 2112, 7168});
  for (const auto& [M, N, K] : shapes) {
    const Problem p = problem(M, N, K, "fp8_e4m3", M == 100 ? "f32" : "bf16");
    CHECK_MSG(!s.family().default_space.violated(s.family().default_config, context(s, p)), p.key());
    for (const Config& c : ktune_test::a8w8_covering(s.family().default_space.enumerate(context(s, p))))
      CHECK_MSG(M != 16 || c.get("BLOCK_M") == 64, c.key());
    built += build_covering(s, p, targets().front());
  }
  CHECK(built >= 4 * 3);
}

// int8: every tile shape, ring depth, split and warp grid, and the reference, build for sm_90a
// (the H100) and sm_80 (the A100) within each one's limits.
void test_int8_builds() {
  const KernelSpec s = load();
  for (const Target& t : targets()) {
    int built = 0;
    for (const auto& [M, N, K] : kShapes)
      built += build_covering(s, problem(M, N, K, "int8", M == 100 ? "f32" : "bf16"), t);
    CHECK_MSG(built >= 4 * 6, std::string(t.name) + ": " + std::to_string(built) + " int8 configs built");
  }
}

}  // namespace

int main() {
  test_built_in_with_the_cpu_key();
  test_shape_rules();
  test_inputs();
  test_launch_plan();
  test_int8_launch_plan();
  test_spaces_by_type();
  test_builds();
  test_int8_builds();
  return ktune_test::finish("test_a8w8_blockscale_spec");
}
