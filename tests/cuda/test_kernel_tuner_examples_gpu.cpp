// Kernel Tuner's examples run on a device: configs spread over each space validate (matmul
// against cuBLAS; convolution against its naive kernel, which reads the filter from its
// argument, so a d_filter left unfilled fails; reduction by the sum of its partial results;
// both passes of the two-pass reduction against the reference config; the stencil on its
// interior, its never-written border outside the check; pnpoly's flags against its naive
// kernel, every between/slopes/method form, within the --max-mismatch the docs give) and time
// with both methods. A config may fail only for not fitting the device, and must say which
// limit: static shared memory that ptxas refuses (compile_error), or registers x threads over the
// device's registers per block, derived from the cubin and the launch geometry (launch_error).
// pnpoly's precomputed slopes come from slopes.npy: with the file zeroed, the configs that read
// them fail and the others still pass.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "check.h"
#include "gpu.h"
#include "ktune/measurement.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

const fs::path kDir = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/examples/kernel_tuner";

// Flags computed with different between tests differ on a point level with a vertex: a few in a
// million (the docs' `--max-mismatch 1e-5` for 20 million points), allowed more at this size.
Tolerance exact_but_few() {
  Tolerance t;
  t.atol = t.rtol = 0;
  t.max_mismatch_fraction = 1e-4;
  return t;
}

// About a dozen configs spread over the space, in enumeration order.
std::vector<Config> spread(const std::vector<Config>& valid) {
  std::vector<Config> out;
  for (std::size_t i = 0; i < valid.size(); i += std::max<std::size_t>(1, valid.size() / 12)) out.push_back(valid[i]);
  return out;
}

// pnpoly: each of the 16 forms (between_method x use_precomputed_slopes x use_method) once, at
// block and tile sizes that vary with it, the largest (992 threads, 20 points a thread) included.
std::vector<Config> every_pnpoly_form(const Config& base) {
  const int tiles[] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20};
  std::vector<Config> out;
  for (int form = 0; form < 16; ++form) {
    Config c = base;
    c.set("between_method", ParamValue(form % 4));
    c.set("use_precomputed_slopes", ParamValue(form / 4 % 2));
    c.set("use_method", ParamValue(form / 8));
    c.set("block_size_x", ParamValue(form == 15 ? 992 : 32 * (1 + 7 * form % 31)));
    c.set("tile_size", ParamValue(form == 15 ? 20 : tiles[5 * form % 11]));
    out.push_back(c);
  }
  return out;
}

struct Tally {
  int ok = 0, refused_shared = 0, refused_regs = 0, wrong = 0;  // wrong: only those `wrong_ok` expects
};

// Prepares and validates `configs` of one problem, then times the first that validated with both
// methods. A failure is checked to be one the device's limits explain unless `wrong_ok` says
// which configs may be wrong results.
Tally tune_some(ktune_test::Gpu& gpu, const fs::path& spec, const Fields& fields, const Tolerance& tol,
                const std::vector<Config>& configs, const std::function<bool(const Config&)>& wrong_ok = {}) {
  const KernelFamily family = gpu.backend->load_family_spec(spec);
  const Problem p = ktune_test::make_problem(family, fields);
  auto session = gpu.backend->open(gpu.device, family, p, 1234);
  Tally n;
  std::unique_ptr<PreparedKernel> timed;
  for (const Config& c : configs) {
    const std::string what = spec.filename().string() + " " + c.key();
    try {
      auto kernel = session->prepare(c);
      const Validation v = session->validate(*kernel, tol);
      CHECK_MSG(v.mismatch_fraction <= tol.max_mismatch_fraction, what);
      CHECK_MSG(!wrong_ok || !wrong_ok(c), what + ": validated, but its data is wrong");
      ++n.ok;
      if (!timed) timed = std::move(kernel);
    } catch (const TrialFailure& e) {
      const std::string why = e.what();
      const bool shared = e.status() == TrialStatus::CompileError && why.find("shared") != std::string::npos;
      const bool regs = e.status() == TrialStatus::LaunchError && why.find("regs_per_block") != std::string::npos;
      const bool wrong = e.status() == TrialStatus::WrongResult && wrong_ok && wrong_ok(c);
      n.refused_shared += shared;
      n.refused_regs += regs;
      n.wrong += wrong;
      CHECK_MSG(shared || regs || wrong, what + ": " + to_string(e.status()) + ": " + why);
    }
  }
  std::printf("%s: %d configs validated, %d refused for static shared memory, %d for registers per block, %d wrong\n",
              spec.filename().c_str(), n.ok, n.refused_shared, n.refused_regs, n.wrong);
  if (timed) {
    for (Method method : {Method::Amortized, Method::PerLaunch}) {
      SampleRequest r;
      r.method = method;
      r.launches = 3;
      const double t = session->sample(*timed, r);
      CHECK(t > 0 && t < 1e9);
    }
  }
  return n;
}

std::vector<Config> valid_configs(ktune_test::Gpu& gpu, const fs::path& spec, const Fields& fields) {
  const KernelFamily family = gpu.backend->load_family_spec(spec);
  Variables ctx = gpu.device.variables();
  for (const auto& [name, v] : family.variables(ktune_test::make_problem(family, fields))) ctx[name] = v;
  return family.default_space.enumerate(ctx);
}

// The spec folder with slopes.npy's values zeroed (its header kept).
fs::path pnpoly_with_zero_slopes() {
  const fs::path dir = fs::temp_directory_path() / ("ktune_pnpoly_zero_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"pnpoly.json", "pnpoly.cu", "vertices.npy"})
    fs::copy_file(kDir / f, dir / f, fs::copy_options::overwrite_existing);
  std::ifstream in(kDir / "slopes.npy", std::ios::binary);
  std::string npy((std::istreambuf_iterator<char>(in)), {});
  const std::size_t header = 10 + (static_cast<unsigned char>(npy[8]) | static_cast<unsigned char>(npy[9]) << 8);
  std::fill(npy.begin() + header, npy.end(), '\0');
  std::ofstream(dir / "slopes.npy", std::ios::binary) << npy;
  return dir;
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_kernel_tuner_examples_gpu");
  const std::vector<std::pair<std::string, Fields>> round_one{
      {"matmul.json", {{"WIDTH", "512"}}},
      {"convolution.json", {{"image_width", "1000"}, {"image_height", "520"}}},  // blocks that do not divide the image
      {"reduction.json", {{"n", "8000000"}}},
      {"reduction_two_pass.json", {{"n", "8000000"}}}};
  for (const auto& [file, fields] : round_one)
    CHECK(tune_some(gpu, kDir / file, fields, Tolerance{}, spread(valid_configs(gpu, kDir / file, fields))).ok >= 3);

  // Every valid block shape, on a domain no block width divides.
  const Fields stencil{{"domain_width", "1000"}, {"domain_height", "522"}};
  const auto blocks = valid_configs(gpu, kDir / "stencil.json", stencil);
  CHECK(blocks.size() == 31);
  CHECK(tune_some(gpu, kDir / "stencil.json", stencil, Tolerance{}, blocks).ok == 31);

  const Fields pnpoly{{"n", "1000000"}, {"vertices", "600"}};
  const Config base = valid_configs(gpu, kDir / "pnpoly.json", pnpoly).front();
  // The register cap lets the 992-thread config (97 registers uncapped) run: all 16 validate.
  CHECK(tune_some(gpu, kDir / "pnpoly.json", pnpoly, exact_but_few(), every_pnpoly_form(base)).ok == 16);
  const fs::path zeroed = pnpoly_with_zero_slopes();
  const Tally without = tune_some(gpu, zeroed / "pnpoly.json", pnpoly, exact_but_few(), every_pnpoly_form(base),
                                  [](const Config& c) { return c.get("use_precomputed_slopes") == 1; });
  CHECK(without.ok == 8 && without.wrong == 8);
  fs::remove_all(zeroed);
  return ktune_test::finish("test_kernel_tuner_examples_gpu");
}
