// Kernel specs, launch geometry, compile cache keys, pruning with H100 properties and host data
// conversions: everything of the CUDA backend that needs no GPU.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "check.h"
#include "compiler.h"
#include "h100.h"
#include "ktune/backends/cuda.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/problem.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

const fs::path kGemmSpec = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/gemm.json";

using ktune_test::h100;

Problem gemm_problem(int m, int n, int k, const std::string& dtype = "f16") {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}, {"dtype", dtype}};
  return p;
}

Variables context(const KernelSpec& s, const Problem& p) {
  Variables v = h100();
  for (const auto& [k, x] : s.family().variables(p)) v[k] = x;
  return v;
}

nlohmann::json gemm_json() {
  std::ifstream in(kGemmSpec);
  return nlohmann::json::parse(in);
}

// The gemm spec with one edit, parsed from its own folder; returns the InputError text or "".
std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = gemm_json();
  edit(j);
  try {
    KernelSpec::from_json(j, kGemmSpec.parent_path(), cuda_spec_dialect(), "edited gemm.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void test_builtin_gemm_spec() {
  const KernelSpec s = KernelSpec::load(kGemmSpec, cuda_spec_dialect());
  CHECK(s.family().name == "gemm");
  CHECK(s.family().key_fields.size() == 4);
  CHECK(s.family().bucket_field == "M");
  CHECK(s.source().find("mma.sync") != std::string::npos);
  CHECK(s.output().name == "C");
  CHECK(s.reference().kind == "cublas_gemm");
  const Problem p = gemm_problem(16, 4096, 4096);
  CHECK(s.family().flops(p) == 2.0 * 16 * 4096 * 4096);

  Config c = s.family().default_config;
  c.set("BM", 16);
  c.set("WM", 16);
  c.set("BN", 128);
  c.set("WN", 32);
  c.set("BK", 128);
  c.set("STAGES", 4);
  c.set("SPLITK", 8);
  const LaunchGeometry g = s.geometry(s.launches()[0], p, c, h100());
  CHECK(g.entry == "gemm");
  CHECK(g.grid[0] == 32 && g.grid[1] == 8 && g.grid[2] == 1);
  CHECK(g.block[0] == 128 && g.block[1] == 1);
  CHECK(g.shared_bytes == 4u * (16 * 136 + 128 * 136) * 2);
  CHECK(s.arg_count(*s.argument("ws"), p, c, h100()) == 1);  // Hopper: reduced in a cluster
  Variables ampere = h100();
  ampere["cc_major"] = 8;
  CHECK(s.arg_count(*s.argument("ws"), p, c, ampere) == 8u * 16 * 4096);
  CHECK(s.arg_count(*s.argument("locks"), p, c) == 32u);
  CHECK(s.arg_type(*s.argument("A"), p, c) == ElemType::F16);
  CHECK(s.arg_type(*s.argument("A"), gemm_problem(16, 64, 64, "bf16"), c) == ElemType::BF16);

  const auto opts = s.compile_options(gemm_problem(16, 4096, 4096, "bf16"), c);
  const std::set<std::string> set(opts.begin(), opts.end());
  CHECK(set.count("-DKT_BF16=1") && set.count("-DSPLITK=8") && set.count("-DBM=16") && set.count("-std=c++17"));
  CHECK(std::is_sorted(opts.begin() + 1, opts.end()));
  CHECK(s.substitute("x_${dtype}_${BM}", p, c) == "x_f16_16");
  CHECK_THROWS(InputError, s.substitute("${nope}", p, c), "nope");
}

// The Hopper kernel: its own launch, fed by two tensor maps over A and B.
void test_gemm_wgmma_launch() {
  const KernelSpec s = KernelSpec::load(kGemmSpec, cuda_spec_dialect());
  const Problem p = gemm_problem(4096, 4096, 4096);
  Config c = s.family().default_config;
  for (auto [k, v] : {std::pair{"BM", 128}, {"WM", 64}, {"BN", 256}, {"WN", 256}, {"STAGES", 4}, {"WGMMA", 1}})
    c.set(k, v);
  CHECK(!s.family().default_space.violated(c, context(s, p)));
  CHECK(!s.geometry(s.launches()[0], p, c, h100()).active);
  const LaunchGeometry g = s.geometry(s.launches()[1], p, c, h100());
  CHECK(g.active && g.entry == "gemm_wgmma");
  CHECK(g.block[0] == 384);                                         // producer + 2 consumers
  CHECK(g.shared_bytes == 1024u + 4 * (128 + 256) * 128 + 16 * 4);  // 1 KiB alignment slack
  const SpecArgument& tm = *s.argument("tmA");
  CHECK(tm.kind == SpecArgument::Kind::TensorMap && tm.tensor == "A" && tm.swizzle == 128);
  CHECK(tm.dims == (std::vector<std::string>{"K", "M"}) && tm.box == (std::vector<std::string>{"64", "BM"}));
  CHECK_THROWS(InputError, s.arg_count(tm, p, c), "not a buffer");
  // Swapped for a decode shape: a consumer warpgroup per 64 columns of B.
  c.set("BM", 16);
  c.set("WM", 16);
  c.set("SWAP_AB", 1);
  CHECK(s.geometry(s.launches()[1], gemm_problem(16, 4096, 4096), c, h100()).block[0] == 640);
  c.set("BN", 64);
  c.set("WN", 64);
  CHECK(s.geometry(s.launches()[1], gemm_problem(16, 4096, 4096), c, h100()).block[0] == 256);
  // A registry entry from before WGMMA existed still names the mma.sync kernel.
  Config old = s.family().default_config;
  std::vector<std::pair<std::string, ParamValue>> kept;
  for (const auto& [k, v] : old.values())
    if (k != "WGMMA" && k != "SWAP_AB") kept.emplace_back(k, v);
  const Config legacy(kept);
  CHECK(s.geometry(s.launches()[0], p, legacy, h100()).active);
  const auto opts = s.compile_options(p, legacy);
  CHECK(std::find(opts.begin(), opts.end(), "-DWGMMA=0") != opts.end());
}

// qmatmul is the gemm source built for int8 weights; tensor parallelism shards its out or in.
void test_builtin_qmatmul_spec() {
  const KernelSpec s = KernelSpec::load(kGemmSpec.parent_path() / "qmatmul.json", cuda_spec_dialect());
  CHECK(s.family().tp_split(TpSplitDim::Out)->fields.at(0).name == "out" &&
        s.family().tp_split(TpSplitDim::In)->fields.at(0).name == "in");
  Problem p;
  p.family = "qmatmul";
  p.fields = {{"batch", "16"}, {"out", "4096"}, {"in", "4096"}, {"x_dtype", "f16"}, {"w_dtype", "i8"}};
  const Config c = s.family().default_config;
  const auto opts = s.compile_options(p, c);
  CHECK(std::find(opts.begin(), opts.end(), "-DW8=1") != opts.end());
  CHECK(s.arg_type(*s.argument("W"), p, c) == ElemType::I8);
  CHECK(s.reference().fields.at("b_layout") == "nk");
  Variables ctx = h100();
  for (const auto& [k, x] : s.family().variables(p)) ctx[k] = x;
  const auto valid = s.family().default_space.enumerate(ctx);
  std::printf("qmatmul space for batch=16 out=4096 in=4096 on an H100: %zu valid configs\n", valid.size());
  CHECK(valid.size() >= 24 && valid.size() <= 240);
  // A decode batch on Hopper: both kernels compete; wgmma needs the arch-specific target.
  const cuda::Compiler compiler("sm_90a", {});
  int wgmma = 0;
  for (std::size_t i = 0; i < valid.size(); i += std::max<std::size_t>(1, valid.size() / 6)) {
    const bool wg = valid[i].get("WGMMA") == 1;
    wgmma += wg;
    const auto opts = s.compile_options(p, valid[i]);
    CHECK(std::find(opts.begin(), opts.end(), wg ? "-DSWAP_AB=1" : "-DSWAP_AB=0") != opts.end());
    CHECK(compiler.compile(s.program(), opts, {wg ? "gemm_wgmma" : "gemm"}).binary.size() > 1000);
  }
  CHECK(wgmma > 0);
  // A batch of 128 can take the swapped kernel with all 128 tokens on wgmma's N side.
  p.fields[0].second = "128";  // batch
  for (const auto& [k, x] : s.family().variables(p)) ctx[k] = x;
  const auto batch128 = s.family().default_space.enumerate(ctx);
  const auto wide = std::find_if(batch128.begin(), batch128.end(),
                                 [](const Config& c) { return c.get("WGMMA") == 1 && c.get("BM") == 128; });
  CHECK(wide != batch128.end());
  if (wide != batch128.end())
    CHECK(compiler.compile(s.program(), s.compile_options(p, *wide), {"gemm_wgmma"}).binary.size() > 1000);
  // Older GPUs have only the mma.sync kernel.
  Variables a100 = ctx;
  a100["cc_major"] = 8;
  for (const auto& c8 : s.family().default_space.enumerate(a100)) CHECK(c8.get("WGMMA") == 0);
}

// The example user spec: the config reference and scalar arguments of several types parse.
void test_example_user_spec() {
  const KernelSpec s = KernelSpec::load(kGemmSpec.parent_path() / "examples/axpy.json", cuda_spec_dialect());
  CHECK(s.family().name == "axpy" && s.reference().kind == "config");
  CHECK(s.argument("a") && !s.argument("a")->is_buffer() && s.argument("n")->dtype == "i64");
  Problem p;
  p.family = "axpy";
  p.fields = {{"n", "1000"}};
  Config c = s.family().default_config;
  c.set("ITEMS", 4);
  CHECK(s.geometry(s.launches()[0], p, c, h100()).grid[0] == 1);  // ceil(1000 / 1024)
  CHECK(s.family().default_space.enumerate(h100()).size() == 20);
}

void test_spec_errors_name_the_culprit() {
  CHECK(parse_error([](nlohmann::json&) {}).empty());
  CHECK(parse_error([](nlohmann::json& j) { j.erase("name"); }).find("\"name\"") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["launches"][0]["grid"][0] = "ceil_div(M,BMM)"; }).find("'BMM'") !=
        std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) {
          j["launches"][0]["args"].push_back("D");
        }).find("'D' is not a declared argument") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) {
          j["arguments"][0]["role"] = "output";
          j["arguments"][0].erase("init");
        }).find("exactly one") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["arguments"][3]["buffer"] = "f8"; }).find("f8") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["reference"]["kind"] = "magic"; }).find("reference.kind") !=
        std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["arguments"][5]["tensor_map"] = "Z"; }).find("'Z' is not a buffer") !=
        std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["arguments"][5]["box"].push_back("8"); }).find("differ in rank") !=
        std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["arguments"][5]["swizzle"] = 48; }).find("swizzle") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["arguments"][5]["role"] = "output"; }).find("only a buffer") !=
        std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["source"] = "missing.cu"; }).find("missing.cu") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) {
          j["compile"]["defines"]["KT_BF16"]["map"].erase("bf16");
        }).find("dtype=bf16") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["bucket_field"] = "dtype"; }).find("numeric") != std::string::npos);
  CHECK(parse_error([](nlohmann::json& j) { j["launches"][0]["shared_bytes"] = "STAGES*("; }).find("shared_bytes") !=
        std::string::npos);
  CHECK_THROWS(InputError, KernelSpec::load("/nonexistent/spec.json", cuda_spec_dialect()), "/nonexistent/spec.json");
}

void test_pruning_with_h100_properties() {
  const KernelSpec s = KernelSpec::load(kGemmSpec, cuda_spec_dialect());
  const SearchSpace& space = s.family().default_space;
  for (auto [m, n, k] : {std::tuple{16, 4096, 4096}, {128, 4096, 4096}, {4096, 4096, 4096}, {16, 14336, 4096}}) {
    const Problem p = gemm_problem(m, n, k);
    const Variables ctx = context(s, p);
    const auto valid = space.enumerate(ctx);
    std::printf("gemm space for M=%d N=%d K=%d on an H100: %zu valid configs\n", m, n, k, valid.size());
    CHECK_MSG(valid.size() >= 12, "M=" + std::to_string(m) + ": " + std::to_string(valid.size()) + " configs");
    int wgmma = 0;
    for (const auto& c : valid) {
      // Exactly one kernel launches: mma.sync (64 to 256 threads) or wgmma (a producer and a
      // consumer warpgroup per 64 rows of the MMA's M side: BM, or swapped BN).
      std::vector<LaunchGeometry> active;
      for (const auto& l : s.launches())
        if (LaunchGeometry g = s.geometry(l, p, c, h100()); g.active) active.push_back(g);
      CHECK(active.size() == 1);
      const LaunchGeometry& g = active.front();
      CHECK(g.shared_bytes <= 232448);
      const double wgmma_threads = 128 * (1 + (c.get("SWAP_AB") ? c.get("BN") : c.get("BM")) / 64);
      CHECK_MSG(
          c.get("WGMMA") ? g.threads() == wgmma_threads && g.threads() <= 640 : g.threads() >= 64 && g.threads() <= 256,
          c.key() + " " + std::to_string(g.threads()));
      CHECK(c.get("VEC") == 8);
      wgmma += static_cast<int>(c.get("WGMMA"));
    }
    CHECK(wgmma == static_cast<int>(valid.size()));  // aligned shapes on Hopper: wgmma only
    CHECK(valid.size() <= 100);  // M = 128 with 6- and 8-stage rings: within 10 s cold (bench/cuda/RESULTS.md, 2)
    // An Ampere device gets the mma.sync kernel instead.
    Variables a100 = ctx;
    a100["cc_major"] = 8;
    const auto ampere = space.enumerate(a100);
    CHECK(!ampere.empty());
    for (const auto& c : ampere) CHECK(c.get("WGMMA") == 0);
  }
  // Five deep stages of 128x256 B tiles need 360 KB: pruned by the shared-memory constraint.
  Config big = s.family().default_config;
  for (auto [k, v] : {std::pair{"BM", 16}, {"WM", 16}, {"BN", 256}, {"WN", 64}, {"BK", 128}, {"STAGES", 5}})
    big.set(k, v);
  Variables ampere = context(s, gemm_problem(16, 4096, 4096));
  ampere["cc_major"] = 8;
  const auto why = space.violated(big, ampere);
  CHECK(why && why->find("shared memory") != std::string::npos);
  // K = 1002 only allows 4-byte vectors.
  const auto odd = space.enumerate(context(s, gemm_problem(7, 520, 1002)));
  CHECK(!odd.empty());
  for (const auto& c : odd) CHECK(c.get("VEC") == 2 && c.get("WGMMA") == 0);  // TMA needs 16-byte aligned rows
}

void test_cache_keys() {
  using cuda::Compiler;
  const auto key = [](const std::string& source, const std::vector<std::string>& options,
                      const std::vector<std::string>& entries, const std::string& arch, const std::string& version,
                      std::map<std::string, std::string> headers = {}) {
    return Compiler::cache_key({source, "k.cu", std::move(headers)}, options, entries, arch, version);
  };
  const std::string k0 = key("src", {"-DA=1", "-DB=2"}, {"gemm"}, "sm_90", "13.0");
  CHECK(k0.size() == 32);
  CHECK(k0 == key("src", {"-DA=1", "-DB=2"}, {"gemm"}, "sm_90", "13.0"));
  CHECK(k0 != key("src ", {"-DA=1", "-DB=2"}, {"gemm"}, "sm_90", "13.0"));
  CHECK(k0 != key("src", {"-DA=1", "-DB=3"}, {"gemm"}, "sm_90", "13.0"));
  CHECK(k0 != key("src", {"-DA=1", "-DB=2"}, {"gemm"}, "sm_89", "13.0"));
  CHECK(k0 != key("src", {"-DA=1", "-DB=2"}, {"gemm"}, "sm_90", "13.1"));
  CHECK(k0 != key("src", {"-DA=1", "-DB=2"}, {"gemm2"}, "sm_90", "13.0"));
  CHECK(key("s", {"ab", "c"}, {}, "sm_90", "13.0") != key("s", {"a", "bc"}, {}, "sm_90", "13.0"));
  // A header is part of what is compiled: editing it, or including another, rebuilds the cubins.
  const std::string h = key("src", {}, {"gemm"}, "sm_90", "13.0", {{"ktune_device.cuh", "// v1"}});
  CHECK(h != key("src", {}, {"gemm"}, "sm_90", "13.0"));
  CHECK(h == key("src", {}, {"gemm"}, "sm_90", "13.0", {{"ktune_device.cuh", "// v1"}}));
  CHECK(h != key("src", {}, {"gemm"}, "sm_90", "13.0", {{"ktune_device.cuh", "// v2"}}));
  CHECK(h != key("src", {}, {"gemm"}, "sm_90", "13.0", {{"other.cuh", "// v1"}}));
  CHECK(key("s", {}, {}, "sm_90", "13.0", {{"a", "bc"}}) != key("s", {}, {}, "sm_90", "13.0", {{"ab", "c"}}));
  // The source's file name only names it in messages.
  CHECK(Compiler::cache_key({"src", "other.cu", {}}, {}, {"gemm"}, "sm_90", "13.0") ==
        key("src", {}, {"gemm"}, "sm_90", "13.0"));
  // The built-in kernels' shared header is part of their key.
  const KernelSpec s = KernelSpec::load(kGemmSpec, cuda_spec_dialect());
  KernelSource edited = s.program();
  CHECK(edited.headers.count("ktune_device.cuh") == 1);
  edited.headers["ktune_device.cuh"] += "\n// edited\n";
  CHECK(Compiler::cache_key(edited, {}, {"gemm"}, "sm_90", "13.0") !=
        Compiler::cache_key(s.program(), {}, {"gemm"}, "sm_90", "13.0"));
}

// NVRTC needs no GPU: the built-in gemm compiles here, a broken source gives its log, and the
// second compile comes from the disk cache.
void test_nvrtc_compile_and_cache() {
  const fs::path dir = fs::temp_directory_path() / ("ktune_cache_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const cuda::Compiler compiler("sm_90", dir);
  const KernelSpec s = KernelSpec::load(kGemmSpec, cuda_spec_dialect());
  const auto opts = s.compile_options(gemm_problem(16, 4096, 4096), s.family().default_config);
  const auto first = compiler.compile(s.program(), opts, {"gemm"});
  CHECK(!first.from_cache && first.binary.size() > 1000);
  const auto second = compiler.compile(s.program(), opts, {"gemm"});
  CHECK(second.from_cache && second.binary == first.binary && second.lowered == first.lowered);
  // Split-K on Hopper: the slices form a cluster (distributed shared memory reduction).
  Config split = s.family().default_config;
  for (auto [k, v] : {std::pair{"BM", 16}, {"WM", 16}, {"BN", 256}, {"WN", 32}, {"SPLITK", 8}}) split.set(k, v);
  CHECK(compiler.compile(s.program(), s.compile_options(gemm_problem(16, 4096, 4096, "bf16"), split), {"gemm"})
            .binary.size() > 1000);
  try {
    compiler.compile({"extern \"C\" __global__ void k() { this is not C++; }", "broken.cu", {}}, {}, {"k"});
    CHECK_MSG(false, "a broken source compiled");
  } catch (const TrialFailure& e) {
    CHECK(e.status() == TrialStatus::CompileError);
    CHECK(std::string(e.what()).find("broken.cu") != std::string::npos);
  }
  // Template entry points are found through NVRTC name expressions.
  const auto t =
      compiler.compile({"template <int N> __global__ void k(int* p) { p[0] = N; }", "t.cu", {}}, {}, {"k<3>"});
  CHECK(t.lowered.size() == 1 && t.lowered[0] != "k<3>" && t.lowered[0].find("k") != std::string::npos);
  fs::remove_all(dir);
}

void test_host_data() {
  using namespace cuda;
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 0.1f, 1000.3f})
    CHECK(std::abs(f16_to_f32(f32_to_f16(f)) - f) <= std::abs(f) * 1e-3f + 1e-7f);
  CHECK(f32_to_f16(1.f) == 0x3c00 && f32_to_f16(-2.f) == 0xc000 && f32_to_f16(1e6f) == 0x7c00);
  CHECK(std::isnan(f16_to_f32(0xffff)) && std::isnan(bf16_to_f32(0xffff)));
  CHECK(f32_to_bf16(1.f) == 0x3f80 && bf16_to_f32(0x3f80) == 1.f);
  ArgInit init;
  init.kind = ArgInit::Kind::Uniform;
  const auto a = generate(ElemType::F16, 100000, init, 42), b = generate(ElemType::F16, 100000, init, 42);
  const auto c = generate(ElemType::F16, 100000, init, 43);
  CHECK(a == b && a != c);
  double lo = 1, hi = -1;
  for (std::size_t i = 0; i < 100000; ++i) {
    lo = std::min(lo, load_elem(a.data(), ElemType::F16, i));
    hi = std::max(hi, load_elem(a.data(), ElemType::F16, i));
  }
  CHECK(lo >= -1 && lo < -0.99 && hi <= 1 && hi > 0.99);
  init.lo = -128;
  init.hi = 127;
  const auto q = generate(ElemType::I8, 10000, init, 1);
  std::set<double> seen;
  for (std::size_t i = 0; i < 10000; ++i) seen.insert(load_elem(q.data(), ElemType::I8, i));
  CHECK(*seen.begin() == -128 && *seen.rbegin() == 127);

  std::vector<unsigned char> got(4 * 3);
  for (int i = 0; i < 3; ++i) store_elem(got.data(), ElemType::F32, i, i);
  Tolerance tol;
  auto r = compare(got.data(), ElemType::F32, {0, 1, 2}, tol);
  CHECK(r.mismatches == 0);
  r = compare(got.data(), ElemType::F32, {0, 1, 2.5}, tol);
  CHECK(r.mismatches == 1 && r.worst_index == 2 && std::abs(r.validation.max_abs_error - 0.5) < 1e-12);
  store_elem(got.data(), ElemType::F32, 0, NAN);
  r = compare(got.data(), ElemType::F32, {0, 1, 2}, tol);
  CHECK(r.mismatches == 1 && r.worst_index == 0);
}

// Without a driver the backend still loads, lists its families and says why it has no device.
void test_backend_without_device() {
  auto backend = make_cuda_backend(CudaBackendOptions{fs::path{}});
  CHECK(backend->name() == "cuda");
  CHECK(backend->family("gemm").key_fields.size() == 4);
  const auto versions = backend->versions();
  CHECK(!versions.empty());
  if (backend->devices().empty()) CHECK(!cuda_unavailable_reason().empty());
  const KernelFamily user = backend->load_family_spec(kGemmSpec);
  CHECK(user.source == kGemmSpec.string());
}

}  // namespace

int main() {
  test_builtin_gemm_spec();
  test_gemm_wgmma_launch();
  test_builtin_qmatmul_spec();
  test_example_user_spec();
  test_spec_errors_name_the_culprit();
  test_pruning_with_h100_properties();
  test_cache_keys();
  test_nvrtc_compile_and_cache();
  test_host_data();
  test_backend_without_device();
  return ktune_test::finish("test_kernel_spec");
}
