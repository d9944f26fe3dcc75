// Kernel Tuner's examples run on a device: configs spread over each space validate (matmul
// against cuBLAS; convolution against its naive kernel, which reads the filter from its
// argument, so a d_filter left unfilled fails; reduction by the sum of its partial results;
// both passes of the two-pass reduction against the reference config) and time with both
// methods. Configs whose static shared memory ptxas refuses must fail as compile errors.
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
    int ok = 0, refused = 0;
    std::unique_ptr<PreparedKernel> timed;
    for (std::size_t i = 0; i < valid.size(); i += std::max<std::size_t>(1, valid.size() / 12)) {
      try {
        auto kernel = session->prepare(valid[i]);
        const Validation v = session->validate(*kernel, Tolerance{});
        CHECK(v.mismatch_fraction == 0);
        ++ok;
        if (!timed) timed = std::move(kernel);
      } catch (const TrialFailure& e) {
        const bool shared = e.status() == TrialStatus::CompileError && std::string(e.what()).find("shared") != std::string::npos;
        refused += shared;
        CHECK_MSG(shared, file + " " + valid[i].key() + ": " + to_string(e.status()) + ": " + e.what());
      }
    }
    std::printf("%s: %d configs validated, %d refused for static shared memory\n", file.c_str(), ok, refused);
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
