// What a Kernel Tuner user's kernel needs from a spec, checked without a GPU: C++ and template
// entry names lowered by NVRTC, __constant__ symbols filled (and unfilled ones refused) from the
// cubin, launches with defines of their own, derived device limits, reference kernels, reduced
// checks and outputs sized by the config. Loading and running wait for a device
// (tests/cuda/*_gpu.cpp); everything decided before the driver is tested here.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include <nlohmann/json.hpp>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "cubin_info.h"
#include "h100.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"

using namespace ktune;
using ktune_test::h100;

namespace {

const cuda::Compiler& compiler() {
  static const cuda::Compiler c("sm_90", {});
  return c;
}

// A one-file spec: `source` as k.cu, the JSON edited by `edit`.
constexpr const char* kSource = R"(
__constant__ float d_filter[289];
__constant__ int table[4] = {1, 2, 3, 4};   // initialized in the source: needs no fill
namespace ns { __constant__ float scale[2]; }
__global__ void scale_kernel(float* out, const float* in, int n) {
  __shared__ float staged[TPB];
  const int i = blockIdx.x * TPB + threadIdx.x;
  staged[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = staged[threadIdx.x] * d_filter[i % 289] * ns::scale[0] * table[PASS % 4] * PASS;
}
template <typename F, int N> __global__ void fill(F* out) { out[threadIdx.x] = N; }
extern "C" __global__ void plain(float* out) { out[0] = 1; }
)";

nlohmann::json base_spec() {
  return nlohmann::json::parse(R"json({
    "name": "feature", "source": "k.cu", "key_fields": [{"name": "n", "default": 4096}],
    "space": {"parameters": {"TPB": [128, 256, 1024, 2048], "PASS": [1, 2]}},
    "default_config": {"TPB": 256, "PASS": 1},
    "arguments": [
      {"name": "out", "buffer": "f32", "count": "n", "role": "output"},
      {"name": "in", "buffer": "f32", "count": "n"},
      {"name": "filter", "buffer": "f32", "count": "289", "constant": "d_filter"},
      {"name": "scale", "buffer": "f32", "count": "2", "constant": "ns::scale"},
      {"name": "n", "scalar": "i32", "value": "n"}
    ],
    "launches": [{"entry": "scale_kernel", "grid": ["ceil_div(n, TPB)"], "block": ["TPB"], "shared_bytes": "0",
                  "args": ["out", "in", "n"]}]
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", kSource}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "feature.json", &files);
}

std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = base_spec();
  edit(j);
  try {
    spec(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Problem problem(const KernelSpec& s, int n = 4096) {
  Problem p;
  p.family = s.family().name;
  p.fields = {{"n", std::to_string(n)}};
  return p;
}

Config config(int t, int pass) { return Config({{"TPB", ParamValue(t)}, {"PASS", ParamValue(pass)}}); }

// plan_build .. check_compiled; returns the TrialFailure's status and message, or ok and "".
std::pair<TrialStatus, std::string> build(const KernelSpec& s, const Config& c, const Variables& device,
                                          std::vector<std::vector<gpu::ConstantFill>>* fills = nullptr) {
  try {
    const auto plan = gpu::plan_build(s, s.launches(), problem(s), c, device, compiler());
    const auto modules = gpu::compile_plan(compiler(), s, plan);
    auto f = gpu::check_compiled(s, problem(s), c, plan, modules, device, compiler());
    if (fills) *fills = std::move(f);
  } catch (const TrialFailure& e) {
    return {e.status(), e.what()};
  }
  return {TrialStatus::Ok, ""};
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// 1. A kernel without extern "C", a template instance and an extern "C" kernel, each found
// under its lowered name in the cubin NVRTC produced.
void test_name_expressions() {
  const auto m =
      compiler().compile({kSource, "k.cu", {}}, {"-DTPB=256", "-DPASS=1"}, {"scale_kernel", "fill<float, 4>", "plain"});
  CHECK(m.lowered.size() == 3);
  CHECK(m.lowered[0] == "_Z12scale_kernelPfPKfi");
  CHECK(m.lowered[1] == "_Z4fillIfLi4EEvPT_");
  CHECK(m.lowered[2] == "plain");
  const auto info = cuda::parse_cubin(m.binary);
  for (const auto& name : m.lowered) {
    CHECK_MSG(contains(m.binary, name), name + " not in the cubin");
    CHECK_MSG(info.functions.count(name) == 1, name + " not a function of the cubin");
  }
  try {
    compiler().compile({kSource, "k.cu", {}}, {"-DTPB=256", "-DPASS=1"}, {"no_such_kernel"});
    CHECK_MSG(false, "an unknown entry compiled");
  } catch (const TrialFailure& e) {
    CHECK(e.status() == TrialStatus::CompileError);
    CHECK_MSG(contains(e.what(), "no_such_kernel"), e.what());
  }
}

// What the cubin says: constants with their sizes, registers and static shared memory.
void test_cubin_info() {
  const auto m = compiler().compile({kSource, "k.cu", {}}, {"-DTPB=256", "-DPASS=1"}, {"scale_kernel", "ns::scale"});
  CHECK(m.lowered[1] == "_ZN2ns5scaleE");
  const auto info = cuda::parse_cubin(m.binary);
  CHECK(info.constants.count("d_filter") && info.constants.at("d_filter").bytes == 289 * 4);
  CHECK(info.constants.count("d_filter") && !info.constants.at("d_filter").initialized);
  CHECK(info.constants.count("table") && info.constants.at("table").initialized);
  CHECK(info.constants.count("_ZN2ns5scaleE") && info.constants.at("_ZN2ns5scaleE").bytes == 8);
  const auto& f = info.functions.at(m.lowered[0]);
  CHECK(f.static_shared == 256 * 4);
  CHECK(f.registers > 0 && f.registers < 256);
  CHECK_THROWS(std::runtime_error, cuda::parse_cubin("not an elf"), "ELF");
}

// 2. __constant__ memory: filled symbols planned per module, unfilled ones refused.
void test_constants() {
  const KernelSpec s = spec(base_spec());
  CHECK(s.constants().size() == 2 && s.constants().at("d_filter") == "filter");
  std::vector<std::vector<gpu::ConstantFill>> fills;
  auto [status, why] = build(s, config(256, 1), h100(), &fills);
  CHECK_MSG(status == TrialStatus::Ok, why);
  CHECK(fills.size() == 1 && fills[0].size() == 2);
  for (const auto& f : fills.empty() ? std::vector<gpu::ConstantFill>{} : fills[0]) {
    if (f.symbol == "d_filter")
      CHECK(f.lowered == "d_filter" && f.argument == "filter" && f.bytes == 1156);
    else
      CHECK(f.symbol == "ns::scale" && f.lowered == "_ZN2ns5scaleE" && f.bytes == 8);
  }
  // The convolution's failure: the kernel reads d_filter and nothing fills it.
  nlohmann::json j = base_spec();
  j["arguments"][2].erase("constant");
  std::tie(status, why) = build(spec(j), config(256, 1), h100());
  CHECK(status == TrialStatus::CompileError);
  CHECK_MSG(contains(why, "__constant__ 'd_filter' (1156 bytes)") && contains(why, "\"constant\": \"d_filter\""), why);
  j = base_spec();
  j["arguments"][2]["count"] = 300;
  std::tie(status, why) = build(spec(j), config(256, 1), h100());
  CHECK_MSG(status == TrialStatus::CompileError && contains(why, "holds 1200 bytes") && contains(why, "only 1156"),
            why);
  j = base_spec();
  j["arguments"].push_back({{"name", "extra"}, {"buffer", "f32"}, {"count", "4"}, {"constant", "nowhere"}});
  std::tie(status, why) = build(spec(j), config(256, 1), h100());
  CHECK_MSG(status == TrialStatus::CompileError && contains(why, "declares no such symbol"), why);
  CHECK(contains(parse_error([](auto& j) { j["arguments"][0]["constant"] = "d_filter"; }), "only an input buffer"));
  CHECK(contains(parse_error([](auto& j) { j["arguments"][3]["constant"] = "d_filter"; }),
                 "already filled by argument 'filter'"));
}

// 4. Launches with defines of their own are built apart and run in order, timed together.
void test_launch_defines() {
  nlohmann::json j = base_spec();
  j["launches"].push_back(j["launches"][0]);
  j["launches"][1]["defines"] = {{"PASS", "PASS + 1"}};
  const KernelSpec s = spec(j);
  const auto plan = gpu::plan_build(s, s.launches(), problem(s), config(256, 1), h100(), compiler());
  CHECK(plan.modules.size() == 2 && plan.launches.size() == 2);
  CHECK(plan.launches[0].module == 0 && plan.launches[1].module == 1);
  const auto& second = plan.modules.back().options;
  CHECK(std::find(second.begin(), second.end(), "-DPASS=2") != second.end());
  CHECK(std::find(second.begin(), second.end(), "-DPASS=1") == second.end());
  CHECK(std::find(second.begin(), second.end(), "-DTPB=256") != second.end());
  const auto modules = gpu::compile_plan(compiler(), s, plan);
  CHECK(modules.size() == 2 && modules[0].binary != modules[1].binary);
  // The same defines share one module.
  j["launches"][1]["defines"] = {{"PASS", "PASS"}};
  const KernelSpec same = spec(j);
  CHECK(gpu::plan_build(same, same.launches(), problem(same), config(256, 1), h100(), compiler()).modules.size() == 1);
  CHECK(contains(parse_error([](auto& j) { j["launches"][0]["defines"] = {{"PASS", "NOPE"}}; }), "'NOPE'"));
}

// 5. Threads and shared memory bounded without being told; registers from the cubin.
void test_derived_limits() {
  nlohmann::json j = base_spec();
  j["launches"][0]["shared_bytes"] = "TPB*128";
  const KernelSpec s = spec(j);
  std::vector<std::pair<Config, std::string>> pruned;
  Variables ctx = h100();
  ctx["n"] = 4096;
  const auto valid = s.family().default_space.enumerate(ctx, &pruned);
  CHECK(valid.size() == 6);  // TPB = 2048 is too many threads; TPB = 1024 needs 128 KiB: allowed on an H100
  CHECK(pruned.size() == 2);
  for (const auto& [c, why] : pruned)
    CHECK_MSG(c.get("TPB") == 2048 && contains(why, "derived") && contains(why, "max_threads_per_block"), why);
  Variables small = ctx;
  small["smem_per_block_optin"] = 65536;  // an older GPU: 1024*128 bytes no longer fit
  const auto why = s.family().default_space.violated(config(1024, 1), small);
  CHECK(why && contains(*why, "smem_per_block_optin"));
  // A config from another space (--space) meets the same limits when it is built.
  auto [status, msg] = build(s, config(2048, 1), h100());
  CHECK_MSG(status == TrialStatus::LaunchError && contains(msg, "2048 threads per block") &&
                contains(msg, "max_threads_per_block"),
            msg);
  std::tie(status, msg) = build(s, config(1024, 1), small);
  CHECK_MSG(status == TrialStatus::LaunchError && contains(msg, "smem_per_block_optin"), msg);
  // Registers x threads, from the cubin: a device with a 1024-register file cannot take 256 threads.
  Variables few = h100();
  few["regs_per_block"] = 1024;
  std::tie(status, msg) = build(spec(base_spec()), config(256, 1), few);
  CHECK_MSG(status == TrialStatus::LaunchError && contains(msg, "registers per thread x 256 threads") &&
                contains(msg, "regs_per_block"),
            msg);
  // Static + dynamic shared memory: 1 KiB static + 1 KiB dynamic against a 1.5 KiB device.
  Variables tiny = h100();
  tiny["smem_per_block_optin"] = 1536;
  nlohmann::json d = base_spec();
  d["launches"][0]["shared_bytes"] = 1024;
  std::tie(status, msg) = build(spec(d), config(256, 1), tiny);
  CHECK_MSG(status == TrialStatus::LaunchError && contains(msg, "1024 bytes of static + 1024 dynamic"), msg);
}

// 6. Thread-block clusters: parsed as "block" is, pruned before any compile by derived
// constraints naming the launch, checked again when planned, and carried by the plan.
KernelSpec clustered_spec() {
  nlohmann::json j = base_spec();
  j["space"]["parameters"]["CL"] = {1, 2, 3, 16};
  j["default_config"]["CL"] = 1;
  j["launches"][0]["cluster"] = {"CL"};
  return spec(j);
}

Config clustered(int tpb, int cl) { return Config({{"TPB", tpb}, {"PASS", 1}, {"CL", cl}}); }

void test_cluster_parsing() {
  const KernelSpec s = clustered_spec();
  CHECK((s.launches()[0].cluster == std::array<std::string, 3>{"CL", "1", "1"}));
  CHECK((spec(base_spec()).launches()[0].cluster == std::array<std::string, 3>{"1", "1", "1"}));
  const std::string not_array = parse_error([](auto& j) { j["launches"][0]["cluster"] = "CL"; });
  CHECK_MSG(contains(not_array, "launches[0].cluster: expected an array of 1 to 3 expressions"), not_array);
  const std::string four = parse_error([](auto& j) { j["launches"][0]["cluster"] = {1, 1, 1, 1}; });
  CHECK_MSG(contains(four, "launches[0].cluster: expected an array of 1 to 3 expressions"), four);
  const std::string unknown = parse_error([](auto& j) { j["launches"][0]["cluster"] = {"2", "NOPE"}; });
  CHECK_MSG(contains(unknown, "launches[0].cluster: 'NOPE'"), unknown);
  const std::string bad = parse_error([](auto& j) { j["launches"][0]["cluster"] = {"2 +"}; });
  CHECK_MSG(contains(bad, "launches[0].cluster"), bad);
  // Generated data shapes no launch's cluster; a grid reading it loses only the divisibility
  // constraint, which the plan checks instead.
  auto generated = [](nlohmann::json& j) {
    j["arguments"].push_back(
        {{"name", "lens"}, {"buffer", "i32"}, {"count", "4"}, {"init", {{"lengths", {{"min", "1"}, {"max", "8"}}}}}});
    j["launches"][0]["grid"] = {"lens_total"};
    j["launches"][0]["cluster"] = {"2"};
  };
  const std::string gen = parse_error([&](auto& j) {
    generated(j);
    j["launches"][0]["cluster"] = {"lens_total"};
  });
  CHECK_MSG(contains(gen, "launches[0].cluster: 'lens_total'") && contains(gen, "generated data"), gen);
  nlohmann::json g = base_spec();
  generated(g);
  const KernelSpec from_generated = spec(g);
  const auto& limits = from_generated.family().launch_limits;
  for (const auto& c : limits) CHECK_MSG(!contains(c.description, "divisible"), c.expr);
  CHECK(limits.size() == 3);  // threads, cc_major, at most 8 blocks
}

void test_cluster_limits() {
  const KernelSpec s = clustered_spec();
  Variables ctx = h100();
  ctx["n"] = 4096;  // grids of 32, 16, 4 and 2 blocks
  std::vector<std::pair<Config, std::string>> pruned;
  const auto valid = s.family().default_space.enumerate(ctx, &pruned);
  CHECK(valid.size() == 12);  // TPB 128, 256, 1024 x PASS 1, 2 x CL 1, 2
  CHECK(pruned.size() == 20);
  for (const auto& [c, why] : pruned) {
    if (c.get("TPB") == 2048) continue;  // too many threads
    const bool three = c.get("CL") == 3, sixteen = c.get("CL") == 16;
    CHECK_MSG(three || sixteen, c.key());
    if (three)
      CHECK_MSG(contains(why, "derived: launches[0] (scale_kernel) grid divisible by its cluster in every dimension") &&
                    contains(why, "(CL >= 1 ? mod((ceil_div(n, TPB)), CL) == 0 : 0)"),
                why);
    if (sixteen) CHECK_MSG(contains(why, "launches[0] (scale_kernel) cluster of at most 8 blocks"), why);
  }
  Variables ampere = ktune_test::a100();
  ampere["n"] = 4096;
  const auto why = s.family().default_space.violated(clustered(256, 2), ampere);
  CHECK(why &&
        contains(*why, "launches[0] (scale_kernel) thread-block cluster needs compute capability 9.0 (cc_major)"));
  CHECK(!s.family().default_space.violated(clustered(256, 1), ampere));
  // A cluster of ones is no cluster: the same limits as none.
  nlohmann::json ones = base_spec();
  ones["launches"][0]["cluster"] = {1, 1, 1};
  CHECK(spec(ones).family().launch_limits == spec(base_spec()).family().launch_limits);
  // A config from another space meets the same checks when planned.
  CHECK_MSG(contains(build(s, clustered(256, 3), h100()).second,
                     "the grid 16 x 1 x 1 is not divisible by the cluster 3 x 1 x 1"),
            build(s, clustered(256, 3), h100()).second);
  CHECK(contains(build(s, clustered(128, 16), h100()).second, "a cluster of 16 blocks, more than the portable 8"));
  CHECK(contains(build(s, clustered(256, 2), ktune_test::a100()).second, "compute capability 9.0"));
  CHECK(contains(build(s, clustered(256, 0), h100()).second, "empty grid, block or cluster"));
}

// The plan carries each launch's evaluated cluster; the GPU test's spec plans and compiles.
void test_cluster_plan() {
  const KernelSpec s = clustered_spec();
  auto [status, why] = build(s, clustered(256, 2), h100());
  CHECK_MSG(status == TrialStatus::Ok, why);
  const auto plan = gpu::plan_build(s, s.launches(), problem(s), clustered(256, 2), h100(), compiler());
  CHECK((plan.launches.at(0).geometry.cluster == std::array<std::uint64_t, 3>{2, 1, 1}));
  CHECK(plan.launches[0].geometry.clustered() && plan.launches[0].geometry.cluster_blocks() == 2);
  const auto plain = gpu::plan_build(s, s.launches(), problem(s), clustered(256, 1), h100(), compiler());
  CHECK(!plain.launches.at(0).geometry.clustered());

  const KernelSpec r = KernelSpec::load(std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/cuda/data/cluster_rank.json",
                                        cuda_spec_dialect());
  Problem p;
  p.family = r.family().name;
  p.fields = {{"cluster_x", "2"}};
  const Config c = r.family().default_config;
  const auto rp = gpu::plan_build(r, r.launches(), p, c, h100(), compiler());
  CHECK((rp.launches.at(0).geometry.cluster == std::array<std::uint64_t, 3>{2, 1, 1}));
  CHECK(rp.launches[0].geometry.grid[0] == 8);
  const auto modules = gpu::compile_plan(compiler(), r, rp);  // %cluster_ctarank: sm_90 only
  gpu::check_compiled(r, p, c, rp, modules, h100(), compiler());
  const auto ref = gpu::plan_build(r, {r.reference().launch}, p, c, h100(), compiler());
  CHECK(!ref.launches.at(0).geometry.clustered());
  Variables ctx = h100();
  ctx["cluster_x"] = 3;
  CHECK(r.family().default_space.enumerate(ctx).empty());  // 3 does not divide the grid of 8
  ctx["cluster_x"] = 8;
  CHECK(r.family().default_space.enumerate(ctx).size() == 2);
}

// 3. Reference kernels, reduced checks, outputs sized by the config, output fills.
void test_checks() {
  nlohmann::json j = base_spec();
  j["reference"] = {
      {"kind", "kernel"}, {"entry", "fill<float, 4>"}, {"grid", {1}}, {"block", {"min(n, 1024)"}}, {"args", {"out"}}};
  const KernelSpec s = spec(j);
  CHECK(s.reference().kind == "kernel" && s.reference().output == "out");
  CHECK(s.reference().launch.entry == "fill<float, 4>" && s.reference().launch.block[0] == "min(n, 1024)");
  const auto plan =
      gpu::plan_build(s, {s.reference().launch}, problem(s), s.family().default_config, h100(), compiler());
  CHECK(plan.launches.size() == 1 && plan.launches[0].geometry.threads() == 1024);
  CHECK(contains(parse_error([&](auto& e) {
                   e["reference"] = j["reference"];
                   e["reference"]["args"] = {"in"};
                 }),
                 "must take its output 'out'"));
  CHECK(contains(parse_error([&](auto& e) {
                   e["reference"] = j["reference"];
                   e["reference"]["output"] = "zz";
                 }),
                 "'zz'"));
  CHECK(contains(parse_error([&](auto& e) {
                   e["reference"] = j["reference"];
                   e["reference"]["grid"] = {"Q"};
                 }),
                 "reference.grid"));

  // Configs writing TPB partial results: allocated at the largest TPB the space allows here.
  j = base_spec();
  j["arguments"][0]["count"] = "TPB";
  CHECK(contains(parse_error([&](auto& e) { e = j; }), "add \"check\": {\"reduce\""));
  j["check"] = {{"reduce", "sum"}, {"count", "TPB"}, {"rtol", 1e-3}};
  const KernelSpec r = spec(j);
  CHECK(r.check().reduce == SpecCheck::Reduce::Sum && r.check().count == "TPB" && *r.check().rtol == 1e-3);
  CHECK(r.max_arg_count(r.output(), problem(r), h100()) == 1024);  // 2048 exceeds the device
  CHECK(r.max_arg_count(*r.argument("in"), problem(r), h100()) == 4096);
  std::vector<float> partials(1024);
  for (std::size_t i = 0; i < partials.size(); ++i) partials[i] = static_cast<float>(i);
  CHECK(r.reduced(partials.data(), ElemType::F32, 1024, problem(r), config(128, 1)) == 127.0 * 128 / 2);
  CHECK(r.reduced(partials.data(), ElemType::F32, 1024, problem(r), config(1024, 1)) == 1023.0 * 1024 / 2);
  partials[100] = std::numeric_limits<float>::quiet_NaN();  // poison never written: the sum is NaN
  CHECK(std::isnan(r.reduced(partials.data(), ElemType::F32, 1024, problem(r), config(128, 1))));
  CHECK_THROWS(InputError, r.reduced(partials.data(), ElemType::F32, 100, problem(r), config(128, 1)),
               "holds 100 elements");
  j["check"]["reduce"] = "max";
  partials[100] = 100;
  partials[7] = 5000;
  CHECK(spec(j).reduced(partials.data(), ElemType::F32, 1024, problem(r), config(128, 1)) == 5000);
  CHECK(spec(j).reduced(partials.data(), ElemType::F32, 1024, problem(r), config(1024, 1)) == 5000);
  partials[7] = 7;
  CHECK(spec(j).reduced(partials.data(), ElemType::F32, 1024, problem(r), config(256, 1)) == 255);
  CHECK(contains(parse_error([](auto& e) { e["check"] = {{"reduce", "mean"}}; }), "'mean' is not sum, max or none"));
  CHECK(contains(parse_error([](auto& e) { e["check"] = {{"count", "TPB"}}; }), "a count needs \"reduce\""));

  // Output fills: NaN poison by default, zero for kernels that accumulate.
  CHECK(spec(base_spec()).output().init.kind == ArgInit::Kind::Poison);
  nlohmann::json z = base_spec();
  z["arguments"][0]["init"] = "zero";
  CHECK(spec(z).output().init.kind == ArgInit::Kind::Zero);
  CHECK(contains(parse_error([](auto& e) { e["arguments"][0]["init"] = "ones"; }), "\"poison\""));
  // Kernel Tuner's own argument names are refused with the spec's spelling.
  CHECK(contains(parse_error([](auto& e) {
                   e["cmem_args"] = {{"d_filter", "filter"}};
                 }),
                 "cmem_args: is Kernel Tuner's"));
  CHECK(contains(parse_error([](auto& e) { e["cmem_args"] = {{"d_filter", "filter"}}; }), "\"constant\": \"SYMBOL\""));
  CHECK(contains(parse_error([](auto& e) { e["grid_div_x"] = {"block_size_x"}; }), "ceil_div"));
}

// One session serves both backends: a HIP spec may use every feature above; only what AMD GPUs
// lack (tensor maps) is refused by name, and LDS bounds its launches as shared memory does on CUDA.
void test_hip_features() {
  static const std::map<std::string, std::string> files{{"k.cu", kSource}};
  auto hip_spec = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = base_spec();
    edit(j);
    return KernelSpec::from_json(j, ".", hip_spec_dialect(), "feature.json", &files);
  };
  const KernelSpec s = hip_spec([](auto& j) {
    j["check"] = {{"reduce", "sum"}};
    j["launches"][0]["defines"] = {{"PASS", 2}};
    j["launches"][0]["shared_bytes"] = "TPB*128";
    j["arguments"][0]["init"] = "zero";
  });
  CHECK(s.constants().size() == 2 && s.check().reduce == SpecCheck::Reduce::Sum && !s.launches()[0].defines.empty());
  CHECK(s.shared_memory_limit() == "lds_per_block");
  Variables mi250{{"lds_per_block", 65536}, {"max_threads_per_block", 1024}, {"n", 4096}};
  const auto why = s.family().default_space.violated(config(1024, 1), mi250);  // 128 KiB of LDS
  CHECK(why && contains(*why, "lds_per_block"));
  CHECK(!s.family().default_space.violated(config(256, 1), mi250));
  CHECK(hip_spec([](auto& j) {
          j["reference"] = {{"kind", "kernel"}, {"entry", "plain"}, {"grid", {1}}, {"block", {1}}, {"args", {"out"}}};
        })
            .reference()
            .kind == "kernel");
  CHECK_THROWS(InputError, hip_spec([](auto& j) {
                 j["arguments"].push_back({{"name", "tm"}, {"tensor_map", "in"}, {"dims", {"n"}}, {"box", {"64"}}});
               }),
               "the hip backend has no tensor maps");
  CHECK_THROWS(InputError, hip_spec([](auto& j) { j["launches"][0]["cluster"] = {"2"}; }),
               "launches[0].cluster: the hip backend has no thread-block clusters");
  CHECK(hip_spec([](auto& j) {
          j["launches"][0]["cluster"] = {1, 1};
        })
            .family()
            .launch_limits == hip_spec([](auto&) {}).family().launch_limits);
}

}  // namespace

int main() {
  test_name_expressions();
  test_cubin_info();
  test_constants();
  test_launch_defines();
  test_derived_limits();
  test_cluster_parsing();
  test_cluster_limits();
  test_cluster_plan();
  test_checks();
  test_hip_features();
  return ktune_test::finish("test_spec_features");
}
