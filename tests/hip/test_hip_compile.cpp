// Compile-only verification of the HIP backend for AMD targets (no GPU needed): which gfx targets
// the installed hipcc supports, and every built-in family's default space compiled for two of
// them, a wave64 (CDNA) and a wave32 (RDNA) one, built as the session builds them (the shared
// build plan: launch defines, register cap). Each config that passes the constraints must yield
// code objects; a compile error there is a config the constraints should have pruned
// (counted, goal zero).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/measurement.h"
#include "ktune/spec_catalog.h"
#include "targets.h"

namespace ktune::hip {
const std::vector<EmbeddedFile>& embedded_kernel_files();
}

using namespace ktune;
using namespace ktune::hip;
namespace fs = std::filesystem;

namespace {

const fs::path kCache = fs::temp_directory_path() / ("ktune_hip_test_cache_" + std::to_string(::getpid()));

bool is_code_object(const std::string& b) {
  return b.rfind(
             "\x7f"
             "ELF",
             0) == 0 ||
         b.rfind("__CLANG_OFFLOAD_BUNDLE__", 0) == 0;
}

// The first line of a compile error, for the summary.
std::string first_line(const std::string& s) {
  const auto nl = s.find('\n', s.find('\n') + 1);
  return s.substr(0, std::min<std::size_t>(nl, 300));
}

// Targets of ktune's table that hipcc can compile a trivial kernel for.
std::vector<TargetInfo> supported_targets() {
  std::vector<TargetInfo> ok;
  std::printf("hipcc %s (%s):\n", Compiler::version().c_str(), Compiler::hipcc().c_str());
  for (const auto& t : known_targets()) {
    try {
      Compiler(t.name, {})
          .compile({"#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }\n",
                    "probe.hip",
                    {}},
                   {}, {"k"});
      std::printf("  %-8s %-6s supported\n", t.name.c_str(), t.family.c_str());
      ok.push_back(t);
    } catch (const TrialFailure& e) {
      const std::string log = e.what();
      const auto p = log.find("error: ");
      std::printf("  %-8s %-6s NOT supported: %s\n", t.name.c_str(), t.family.c_str(),
                  p == std::string::npos ? "?" : log.substr(p, log.find('\n', p) - p).c_str());
    }
  }
  return ok;
}

struct Counts {
  std::atomic<int> compiled{0}, should_have_been_pruned{0}, bad_object{0};
  std::size_t pruned = 0, total = 0;
};

// A problem of the family: numeric key fields 256, text fields their `choice`-th choice.
Problem problem_of(const KernelSpec& s, std::size_t choice) {
  Problem p;
  p.family = s.family().name;
  for (const auto& k : s.family().key_fields)
    p.fields.emplace_back(
        k.name, k.numeric ? "256" : (k.choices.empty() ? k.default_value : k.choices[choice % k.choices.size()]));
  return p;
}

void compile_space(const KernelSpec& s, const TargetInfo& t, Counts& c) {
  const Compiler compiler(t.name, kCache);
  Variables device;
  for (const auto& [k, v] : target_properties(t)) device[k] = v;
  Variables context = device;
  for (const auto& [k, v] : s.family().variables(problem_of(s, 0))) context[k] = v;
  std::vector<std::pair<Config, std::string>> pruned;
  const std::vector<Config> configs = s.family().default_space.enumerate(context, &pruned);
  c.pruned += pruned.size();
  c.total += configs.size() + pruned.size();
  // Config i is built for text choice i (f16, bf16, f16, ...): both element types, no doubling.
  std::atomic<std::size_t> next{0};
  std::mutex print;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < configs.size();) {
      const Problem p = problem_of(s, i);
      try {
        // As the session builds it: the plan's modules, with launch defines and the register cap.
        const auto plan = gpu::plan_build(s, s.launches(), p, configs[i], device, compiler);
        for (const CompiledModule& m : gpu::compile_plan(compiler, s, plan))
          if (is_code_object(m.binary))
            ++c.compiled;
          else
            ++c.bad_object;
      } catch (const TrialFailure& e) {
        ++c.should_have_been_pruned;
        std::lock_guard lock(print);
        std::printf("  compile_error (should have been pruned) %s %s %s:\n    %s\n", s.family().name.c_str(),
                    t.name.c_str(), configs[i].key().c_str(), first_line(e.what()).c_str());
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < std::max(2u, std::thread::hardware_concurrency()); ++k) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
}

void test_default_spaces(const std::vector<TargetInfo>& supported) {
  // One wave64 and one wave32 target, preferring the gfx90a and gfx1100.
  std::vector<TargetInfo> chosen;
  for (int wave : {64, 32}) {
    const TargetInfo* pick = nullptr;
    for (const auto& t : supported)
      if (t.wavefront_size == wave && (!pick || t.name == "gfx90a" || t.name == "gfx1100")) pick = &t;
    if (pick) chosen.push_back(*pick);
  }
  CHECK_MSG(chosen.size() >= 2, "hipcc supports fewer than two AMD targets of ktune's table (one wave64, one wave32)");
  const SpecCatalog catalog(embedded_kernel_files(), hip_spec_dialect());
  const auto families = catalog.builtin_families();
  for (const char* want :
       {"gemm", "qmatmul"})  // the families: a spec that stops loading is a failure, not a skip
    CHECK_MSG(std::any_of(families.begin(), families.end(), [&](const KernelFamily& f) { return f.name == want; }),
              std::string("no built-in hip family ") + want);
  for (const auto& family : families) {
    const auto spec = catalog.find(family);
    for (const auto& t : chosen) {
      Counts c;
      compile_space(*spec, t, c);
      std::printf(
          "%s on %s (wave%d): %zu configs, %zu pruned by constraints, %d code objects, "
          "%d compile_error that constraints should have pruned, %d not a code object\n",
          spec->family().name.c_str(), t.name.c_str(), t.wavefront_size, c.total, c.pruned, c.compiled.load(),
          c.should_have_been_pruned.load(), c.bad_object.load());
      CHECK(c.compiled > 0);
      CHECK(c.should_have_been_pruned == 0);
      CHECK(c.bad_object == 0);
    }
  }
}

void test_cache_and_failures(const TargetInfo& t) {
  const Compiler compiler(t.name, kCache);
  const KernelSource src{
      "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(int* x) { x[0] = KV; }\n", "k.hip", {}};
  const CompiledModule first = compiler.compile(src, {"-DKV=1"}, {"k"});
  const CompiledModule again = compiler.compile(src, {"-DKV=1"}, {"k"});
  CHECK(!first.from_cache && again.from_cache && again.binary == first.binary && again.lowered == first.lowered);
  CHECK(!compiler.compile(src, {"-DKV=2"}, {"k"}).from_cache);              // options are part of the key
  CHECK(!Compiler(t.name, {}).compile(src, {"-DKV=1"}, {"k"}).from_cache);  // empty dir: no cache
  CHECK_THROWS(TrialFailure, compiler.compile(src, {}, {"k"}), "hipcc failed (exit 1) compiling k.hip for " + t.name);
  CHECK_THROWS(TrialFailure, compiler.compile(src, {"-DKV=1"}, {"k<int>"}), "extern \"C\"");
  try {
    compiler.compile(src, {}, {"k"});
  } catch (const TrialFailure& e) {
    CHECK(e.status() == TrialStatus::CompileError);
    CHECK_MSG(std::string(e.what()).find("'KV'") != std::string::npos, e.what());  // hipcc's log is kept
  }
}

// A spec's headers reach hipcc beside the source, by their include names (a header's own includes
// resolve from the spec's folder, as NVRTC's named headers do), and their text is part of the key.
void test_headers(const TargetInfo& t) {
  const Compiler compiler(t.name, kCache);
  KernelSource src{"#include \"sub/kv.h\"\nextern \"C\" __global__ void k(int* x) { x[0] = KV; }\n",
                   "k.hip",
                   {{"sub/kv.h", "#include \"base.h\"\n#define KV (BASE + 1)\n"},
                    {"base.h", "#include <hip/hip_runtime.h>\n#define BASE 1\n"}}};
  const CompiledModule first = compiler.compile(src, {}, {"k"});
  CHECK(!first.from_cache && is_code_object(first.binary));
  CHECK(compiler.compile(src, {}, {"k"}).from_cache);
  src.headers["base.h"] = "#include <hip/hip_runtime.h>\n#define BASE 2\n";
  CHECK(!compiler.compile(src, {}, {"k"}).from_cache);
  src.headers["../x.h"] = "";
  CHECK_THROWS(TrialFailure, compiler.compile(src, {}, {"k"}), "header \"../x.h\" of k.hip");
}

// ktune's own kernels (the device compare and the reference gemm) build for every target the
// families do: without a GPU they are compiled nowhere else.
void test_utilities(const std::vector<TargetInfo>& supported) {
  for (const auto& t : supported) {
    const Compiler compiler(t.name, kCache);
    const auto& u = compiler.utilities();
    try {
      const auto m = compiler.compile(u.program, {}, {"ktune_compare", "ktune_reference_gemm"});
      CHECK_MSG(is_code_object(m.binary), t.name);
    } catch (const TrialFailure& e) {
      CHECK_MSG(false, t.name + ": " + e.what());
    }
  }
}

void test_target_properties() {
  const auto cdna = target_info("gfx90a:sramecc+:xnack-");
  const auto rdna = target_info("gfx1100");
  CHECK(cdna && cdna->wavefront_size == 64 && cdna->mfma == 2 && !cdna->wmma);
  CHECK(rdna && rdna->wavefront_size == 32 && rdna->wmma && rdna->mfma == 0);
  CHECK(!target_info("gfx9999"));
  const auto p = target_properties(*rdna);
  CHECK(p.at("gfx_major") == 11 && p.at("gfx_minor") == 0 && p.at("wavefront_size") == 32);
  CHECK(target_properties(*cdna).at("gfx_major") == 9);
  // Every property the dialect lets a spec read is reported for a target, but a peak the target
  // has no rate for, which is said instead (RDNA3 has no fp8).
  const DevicePeaks peaks = hip_peaks("gfx1100", p.at("cus"), p.at("clock_mhz"));
  const std::string peak = "peak_gflops_";
  for (const auto& name : hip_spec_dialect().device_properties)
    CHECK_MSG(p.count(name) || (name.rfind(peak, 0) == 0 && peaks.missing.count("no_peak_" + name.substr(peak.size()))),
              name);
  CHECK(!p.count("peak_gflops_fp8_e4m3") && p.count("peak_gflops_int8"));
  const auto mi300 = target_properties(*target_info("gfx942"));
  CHECK(mi300.at("peak_gflops_fp8_e4m3") == 2 * mi300.at("peak_gflops_f16"));
}

}  // namespace

int main() {
  test_target_properties();
  const auto supported = supported_targets();
  if (!supported.empty()) {
    test_cache_and_failures(supported.front());
    test_headers(supported.front());
  }
  test_utilities(supported);
  test_default_spaces(supported);
  std::error_code ec;
  fs::remove_all(kCache, ec);
  return ktune_test::finish("hip/test_hip_compile");
}
