// Kernel Tuner's examples run on a device: configs spread over each space validate (matmul
// against cuBLAS; convolution against its naive kernel, which reads the filter from its
// argument, so a d_filter left unfilled fails; reduction by the sum of its partial results;
// both passes of the two-pass reduction against the reference config) and time with both
// methods. A config may fail only for not fitting the device, and must say which limit: static
// shared memory that ptxas refuses (compile_error), or registers x threads over the device's
// registers per block, derived from the cubin and the launch geometry (launch_error).
#include <filesystem>

#include "check.h"
#include "gpu.h"
#include "ktune/measurement.h"

using namespace ktune;
namespace fs = std::filesystem;

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_kernel_tuner_examples_gpu");
  const fs::path dir = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/examples/kernel_tuner";
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> examples{
      {"matmul.json", {{"WIDTH", "512"}}},
      {"convolution.json", {{"image_width", "1000"}, {"image_height", "520"}}},  // blocks that do not divide the image
      {"reduction.json", {{"n", "8000000"}}},
      {"reduction_two_pass.json", {{"n", "8000000"}}}};
  for (const auto& [file, fields] : examples) {
    const KernelFamily family = gpu.backend->load_family_spec(dir / file);
    const Problem p = ktune_test::make_problem(family, fields);
    Variables ctx = gpu.device.variables();
    for (const auto& [name, v] : family.variables(p)) ctx[name] = v;
    const auto valid = family.default_space.enumerate(ctx);
    auto session = gpu.backend->open(gpu.device, family, p, 1234);
    int ok = 0, refused_shared = 0, refused_regs = 0;
    std::unique_ptr<PreparedKernel> timed;
    for (std::size_t i = 0; i < valid.size(); i += std::max<std::size_t>(1, valid.size() / 12)) {
      try {
        auto kernel = session->prepare(valid[i]);
        const Validation v = session->validate(*kernel, Tolerance{});
        CHECK(v.mismatch_fraction == 0);
        ++ok;
        if (!timed) timed = std::move(kernel);
      } catch (const TrialFailure& e) {
        const std::string what = e.what();
        const bool shared = e.status() == TrialStatus::CompileError && what.find("shared") != std::string::npos;
        const bool regs = e.status() == TrialStatus::LaunchError && what.find("regs_per_block") != std::string::npos;
        refused_shared += shared;
        refused_regs += regs;
        CHECK_MSG(shared || regs, file + " " + valid[i].key() + ": " + to_string(e.status()) + ": " + what);
      }
    }
    std::printf("%s: %d configs validated, %d refused for static shared memory, %d for registers per block\n",
                file.c_str(), ok, refused_shared, refused_regs);
    CHECK(ok >= 3);
    if (!timed) continue;
    for (Method method : {Method::Amortized, Method::PerLaunch}) {
      SampleRequest r;
      r.method = method;
      r.launches = 3;
      const double t = session->sample(*timed, r);
      CHECK(t > 0 && t < 1e9);
    }
  }
  return ktune_test::finish("test_kernel_tuner_examples_gpu");
}
