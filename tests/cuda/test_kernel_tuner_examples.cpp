// Kernel Tuner's CUDA examples (matmul, convolution, reduction; stencil and pnpoly) as ktune
// specs under resources/kernels/cuda/examples/kernel_tuner: each parses, prunes to the number of
// configs Kernel Tuner tunes on an H100 (40, 7,296, 2,376, 31, 5,456: restrictions plus the
// threads-per-block limit ktune derives from the launch), and its configs compile with NVRTC for
// sm_90 with their C++ entry names lowered, __constant__ symbols planned and device limits
// checked. matmul compiles all 40; the others a sample spread over their spaces (NVRTC takes
// seconds per convolution config here). The stencil's check covers its interior; pnpoly's
// committed polygon and slopes agree (the slopes recomputed here in f32 from the vertices, as
// pnpoly_data.py computes them, bit for bit). Running them waits for a GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "h100.h"
#include "ktune/array_file.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"
#include "ktune/spec_inputs.h"

using namespace ktune;
using ktune_test::h100;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/examples/kernel_tuner";

const cuda::Compiler& compiler() {
  static const cuda::Compiler c("sm_90", {});
  return c;
}

Problem defaults(const KernelSpec& s) {
  Problem p;
  p.family = s.family().name;
  for (const auto& k : s.family().key_fields) p.fields.emplace_back(k.name, k.default_value);
  return p;
}

Variables context(const KernelSpec& s, const Problem& p) {
  Variables v = h100();
  for (const auto& [k, x] : s.family().variables(p)) v[k] = x;
  return v;
}

std::uint64_t pruned_by(const PruneReport& r, const std::string& prefix) {
  std::uint64_t n = 0;
  for (const auto& [expr, count] : r.pruned_by)
    if (expr.rfind(prefix, 0) == 0) n += count;
  return n;
}

// Builds config `c` as the session does before the driver: plan, NVRTC, cubin checks. Returns
// the failure message ("" when it built), and the fills of the first module.
std::string build(const KernelSpec& s, const std::vector<SpecLaunch>& launches, const Config& c,
                  std::vector<gpu::ConstantFill>* fills = nullptr, std::vector<CompiledModule>* out = nullptr) {
  const Problem p = defaults(s);
  try {
    const auto plan = gpu::plan_build(s, launches, p, c, h100(), compiler());
    auto modules = gpu::compile_plan(compiler(), s, plan);
    const auto f = gpu::check_compiled(s, p, c, plan, modules, h100(), compiler());
    if (fills) *fills = f.front();
    if (out) *out = std::move(modules);
  } catch (const TrialFailure& e) {
    return e.what();
  }
  return "";
}

bool has_option(const std::vector<std::string>& options, const std::string& o) {
  return std::find(options.begin(), options.end(), o) != options.end();
}

std::vector<Config> sample(const std::vector<Config>& all, std::size_t n, const Config& also) {
  std::vector<Config> out{also};
  for (std::size_t i = 0; i < all.size(); i += std::max<std::size_t>(1, all.size() / n)) out.push_back(all[i]);
  return out;
}

// The spec's space pruned for its default problem on an H100, printed.
PruneReport counts(const KernelSpec& s) {
  const PruneReport r = s.family().default_space.prune_report(context(s, defaults(s)));
  std::printf("%s: %llu configs, %llu valid\n", s.family().name.c_str(), (unsigned long long)r.total,
              (unsigned long long)r.valid);
  return r;
}

void test_matmul() {
  const KernelSpec s = KernelSpec::load(kDir / "matmul.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const PruneReport r = counts(s);
  CHECK(r.total == 288 && r.valid == 40);
  CHECK(pruned_by(r, "block_size_x == block_size_y*tile_size_y") == 244);
  CHECK(pruned_by(r, "block_size_x*block_size_y <= max_threads_per_block") == 4);  // 64 x 32 threads
  int built = 0, too_much_shared = 0;
  for (const auto& c : s.family().default_space.enumerate(context(s, p))) {
    std::vector<CompiledModule> modules;
    const std::string why = build(s, s.launches(), c, nullptr, &modules);
    // Its static tiles: 4 * bx * bx * (1 + tile_size_x) bytes; above 48 KiB ptxas refuses it
    // (Kernel Tuner's run fails those configs the same way).
    const double bx = c.get("block_size_x"), shared = 4 * bx * bx * (1 + c.get("tile_size_x"));
    if (shared > 48 * 1024) {
      ++too_much_shared;
      CHECK_MSG(why.find("too much shared data") != std::string::npos, c.key() + ": " + why);
      continue;
    }
    CHECK_MSG(why.empty(), c.key() + ": " + why);
    if (!why.empty()) continue;
    ++built;
    // Not extern "C": found under its mangled name, which is in the cubin.
    CHECK(modules.size() == 1 && modules[0].lowered == std::vector<std::string>{"_Z13matmul_kernelPfS_S_"});
    CHECK(modules[0].binary.find("_Z13matmul_kernelPfS_S_") != std::string::npos);
  }
  std::printf("matmul: %d configs built, %d refused by ptxas for static shared memory\n", built, too_much_shared);
  CHECK(built + too_much_shared == 40 && too_much_shared == 4);
}

void test_convolution() {
  const KernelSpec s = KernelSpec::load(kDir / "convolution.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const PruneReport r = counts(s);
  CHECK(r.total == 12288 && r.valid == 7296);
  CHECK(pruned_by(r, "use_padding == 0") == 3072);
  CHECK(pruned_by(r, "block_size_x*block_size_y <= max_threads_per_block") == 1920);
  CHECK(s.reference().kind == "kernel" && s.reference().launch.entry == "convolution_naive");
  CHECK(s.constants().size() == 1 && s.constants().at("d_filter") == "filter");
  // The reference kernel builds with the default config's defines, its own geometry.
  std::vector<gpu::ConstantFill> fills;
  CHECK(build(s, {s.reference().launch}, s.family().default_config, &fills).empty());
  const auto valid = s.family().default_space.enumerate(context(s, p));
  int built = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& c : sample(valid, 5, s.family().default_config)) {
    const double shared = 4 * (c.get("block_size_y") * c.get("tile_size_y") + 16) *
                          (c.get("block_size_x") * c.get("tile_size_x") + 16 + c.get("use_padding"));
    const std::string why = build(s, s.launches(), c, &fills);
    if (shared > 48 * 1024) {
      CHECK_MSG(!why.empty(), c.key() + " compiled with " + std::to_string(shared) + " bytes of static shared memory");
      continue;
    }
    CHECK_MSG(why.empty(), c.key() + ": " + why);
    if (!why.empty()) continue;
    ++built;
    // d_filter is filled from the filter argument after each load: 17 x 17 floats.
    CHECK(fills.size() == 1 && fills[0].symbol == "d_filter" && fills[0].lowered == "d_filter" &&
          fills[0].bytes == 1156);
  }
  std::printf("convolution: %d sampled configs built in %.1f s\n", built,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  CHECK(built >= 3);
}

void test_reduction() {
  const KernelSpec s = KernelSpec::load(kDir / "reduction.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const PruneReport r = counts(s);
  CHECK(r.total == 2376 && r.valid == 2376);
  // Configs write num_blocks partial sums: allocated for the largest, checked by their sum.
  CHECK(s.max_arg_count(s.output(), p, h100()) == 1024);
  CHECK(s.check().reduce == SpecCheck::Reduce::Sum && s.check().count == "num_blocks");
  const auto valid = s.family().default_space.enumerate(context(s, p));
  for (const auto& c : sample(valid, 10, s.family().default_config)) {
    std::vector<CompiledModule> modules;
    const std::string why = build(s, s.launches(), c, nullptr, &modules);
    CHECK_MSG(why.empty(), c.key() + ": " + why);
    if (why.empty()) CHECK(modules[0].lowered.front().rfind("_Z10sum_floats", 0) == 0);
  }
  // Both passes timed together: the second built apart with num_blocks=1.
  const KernelSpec two = KernelSpec::load(kDir / "reduction_two_pass.json", cuda_spec_dialect());
  CHECK(two.family().default_space.prune_report(context(two, p)).valid == 2376);
  const auto plan = gpu::plan_build(two, two.launches(), p, two.family().default_config, h100(), compiler());
  CHECK(plan.modules.size() == 2 && plan.launches.size() == 2);
  CHECK(plan.launches[1].geometry.grid[0] == 1 && plan.launches[1].geometry.block[0] == 256);
  const auto& second = plan.modules[1].options;
  CHECK(std::find(second.begin(), second.end(), "-Dnum_blocks=1") != second.end());
  CHECK(build(two, two.launches(), two.family().default_config).empty());
}

// Kernel Tuner's stencil: 8 block widths x 6 heights, 31 of them within 1,024 threads. The kernel
// never writes the grid's border, so the check covers the interior (Kernel Tuner's script hides
// the border by passing a copy of the input as the output).
void test_stencil() {
  const KernelSpec s = KernelSpec::load(kDir / "stencil.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const PruneReport r = counts(s);
  CHECK(r.total == 48 && r.valid == 31);
  CHECK(pruned_by(r, "block_size_x*block_size_y <= max_threads_per_block") == 17);
  const std::size_t w = 4096, h = 2048;
  const auto region = s.region_elements(p, w * h);
  CHECK(static_cast<std::size_t>(std::count(region.begin(), region.end(), 1)) == w * h - 12284);
  CHECK(region[0] == 0 && region[w - 1] == 0 && region[w] == 0 && region[w + 1] == 1 && region[w * h - 1] == 0);
  CHECK(s.reference().kind == "config" && s.reference().config.key() == s.family().default_config.key());
  for (const auto& c : sample(s.family().default_space.enumerate(context(s, p)), 6, s.family().default_config)) {
    std::vector<CompiledModule> modules;
    const std::string why = build(s, s.launches(), c, nullptr, &modules);
    CHECK_MSG(why.empty(), c.key() + ": " + why);
    if (!why.empty()) continue;
    CHECK(modules[0].lowered == std::vector<std::string>{"_Z14stencil_kernelPfS_"});
    const auto options = gpu::plan_build(s, s.launches(), p, c, h100(), compiler()).modules.at(0).options;
    CHECK(has_option(options, "-Ddomain_width=4096") && has_option(options, "-Ddomain_height=2048"));
  }
}

// The f32 values of a .npy file of the spec's folder.
std::vector<float> floats_of(const char* file, std::uint64_t count) {
  const auto bytes = load_array_file(kDir / file, "", ElemType::F32, count);
  std::vector<float> out(count);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// pnpoly's committed data: a polygon of 600 vertices on the unit circle, clockwise as Kernel
// Tuner's script makes it, and the slope of each edge j (from vertex j to vertex j-1) as
// cn_pnpoly's use_precomputed_slopes=1 configs read it, equal bit for bit to the division the
// other configs do in f32.
void test_pnpoly_data() {
  const auto xy = floats_of("vertices.npy", 1200), slopes = floats_of("slopes.npy", 600);
  double twice_area = 0;
  int differ = 0;
  for (int j = 0; j < 600; ++j) {
    const int k = j == 0 ? 599 : j - 1;
    const float x = xy[2 * j], y = xy[2 * j + 1], kx = xy[2 * k], ky = xy[2 * k + 1];
    CHECK_MSG(std::abs(std::hypot(x, y) - 1) < 1e-6, "vertex " + std::to_string(j) + " is off the unit circle");
    const volatile float dx = kx - x, dy = ky - y;  // f32 arithmetic, as on the device
    const float want = dx / dy;
    differ += std::memcmp(&want, &slopes[j], sizeof want) != 0;
    twice_area += double(kx) * y - double(x) * ky;
  }
  CHECK_MSG(differ == 0,
            std::to_string(differ) + " of slopes.npy's 600 slopes are not their edges' (rerun pnpoly_data.py)");
  CHECK(twice_area < -6.2 && twice_area > -2 * M_PI);  // clockwise, nearly the unit disc
}

// pnpoly: 31 x 11 x 4 x 2 x 2 = 5,456 configs, no restriction, all within 1,024 threads. The
// polygon and its slopes come from files into __constant__ memory; a problem whose vertex count
// the files do not hold is refused naming the file. The largest block gets a register cap.
void test_pnpoly() {
  const KernelSpec s = KernelSpec::load(kDir / "pnpoly.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const PruneReport r = counts(s);
  CHECK(r.total == 5456 && r.valid == 5456);
  CHECK((s.constants() == std::map<std::string, std::string>{{"d_slopes", "slopes"}, {"d_vertices", "vertex_xy"}}));
  Problem small = p;
  small.fields = {{"n", "1000"}, {"vertices", "600"}};
  const SpecInputs in = generate_spec_inputs(s, small, h100(), 1);
  CHECK(in.inputs.at("slopes").data == load_array_file(kDir / "slopes.npy", "", ElemType::F32, 600));
  CHECK(in.counts.at("vertex_xy") == 1200 && in.counts.at("points") == 2000);
  small.fields = {{"n", "1000"}, {"vertices", "500"}};
  CHECK_THROWS(InputError, generate_spec_inputs(s, small, h100(), 1), "vertices.npy");

  // The reference kernel reads both constants; its module gets both fills.
  std::vector<gpu::ConstantFill> fills;
  CHECK(build(s, {s.reference().launch}, s.family().default_config, &fills).empty());
  CHECK(fills.size() == 2);
  for (const auto& f : fills)
    CHECK_MSG(f.bytes == (f.symbol == "d_vertices" ? 4800u : 2400u), f.symbol + ": " + std::to_string(f.bytes));

  Config largest = s.family().default_config;
  for (const auto& [name, v] : {std::pair{"block_size_x", 992},
                                {"tile_size", 20},
                                {"between_method", 3},
                                {"use_precomputed_slopes", 1},
                                {"use_method", 1}})
    largest.set(name, ParamValue(v));
  // 31 warps are held as 32: 65536 / (32 x 32) registers a thread.
  CHECK(has_option(gpu::plan_build(s, s.launches(), p, largest, h100(), compiler()).modules.at(0).options,
                   "--maxrregcount=64"));
  const auto valid = s.family().default_space.enumerate(context(s, p));
  auto configs = sample(valid, 4, largest);
  configs.push_back(s.family().default_config);
  for (const auto& c : configs) {
    std::vector<CompiledModule> modules;
    const std::string why = build(s, s.launches(), c, &fills, &modules);
    CHECK_MSG(why.empty(), c.key() + ": " + why);
    if (why.empty()) CHECK(modules[0].lowered == std::vector<std::string>{"_Z9cn_pnpolyPiP6float2i"});
  }
}

// Blocks too large for the registers a kernel would use get a register cap from their size, so
// they run (spilling if they must) instead of failing at launch: on the H100 these convolution
// configs took 164 registers per thread at 768 threads and 168 at 512, and were launch errors.
void test_register_cap() {
  const KernelSpec s = KernelSpec::load(kDir / "convolution.json", cuda_spec_dialect());
  const Problem p = defaults(s);
  const auto options = [&](const Config& c, const Variables& device) {
    return gpu::plan_build(s, s.launches(), p, c, device, compiler()).modules.at(0).options;
  };
  Config c = s.family().default_config;  // 32 x 8 threads: 255 registers fit, no cap
  for (const auto& o : options(c, h100())) CHECK_MSG(o.rfind("--maxrregcount", 0) != 0, o);
  for (const auto& [bx, by, ty, cap] : {std::tuple{48, 16, 8, "80"}, std::tuple{128, 4, 4, "128"}}) {
    c.set("block_size_x", ParamValue(bx));
    c.set("block_size_y", ParamValue(by));
    c.set("tile_size_x", ParamValue(1));
    c.set("tile_size_y", ParamValue(ty));
    CHECK(has_option(options(c, h100()), std::string("--maxrregcount=") + cap));
    Variables no_regs = h100();
    no_regs.erase("regs_per_block");
    for (const auto& o : options(c, no_regs)) CHECK_MSG(o.rfind("--maxrregcount", 0) != 0, o);
    const std::string why = build(s, s.launches(), c);
    CHECK_MSG(why.empty(), c.key() + ": " + why);
  }
}

}  // namespace

int main() {
  test_matmul();
  test_convolution();
  test_reduction();
  test_stencil();
  test_pnpoly_data();
  test_pnpoly();
  test_register_cap();
  return ktune_test::finish("test_kernel_tuner_examples");
}
