// The HIP backend on an AMD GPU: devices and their properties, the built-in gemm validated
// against the device reference for both element types and a ragged shape, and both timing
// methods; qmatmul (w8a16) validated against the same reference with int8 N x K weights and
// per-column scales. Skips (77) with the runtime's reason where no AMD GPU is visible.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "check.h"
#include "ktune/backends/hip.h"
#include "ktune/measurement.h"

using namespace ktune;

int main() {
  const auto cache = std::filesystem::temp_directory_path() / ("ktune_hip_gpu_cache_" + std::to_string(::getpid()));
  auto backend = make_hip_backend(HipBackendOptions{cache});
  const auto devices = backend->devices();
  if (devices.empty()) {
    std::printf("hip/test_hip_gpu skipped: no AMD GPU (%s)\n", hip_unavailable_reason().c_str());
    return 77;
  }
  const DeviceInfo& dev = devices.front();
  std::printf("on %s (%s, wave%d, %d CUs)\n", dev.name.c_str(), dev.text.at("arch").c_str(),
              static_cast<int>(dev.property("wavefront_size")), static_cast<int>(dev.property("cus")));
  CHECK(dev.property("wavefront_size") == 32 || dev.property("wavefront_size") == 64);
  CHECK(dev.property("lds_per_block") > 0 && dev.property("cus") > 0);
  const KernelFamily gemm = backend->family("gemm");
  for (const auto& [m, n, k, dtype] :
       {std::tuple{256, 256, 256, "f16"}, {256, 256, 256, "bf16"}, {100, 72, 40, "f16"}}) {
    Problem p;
    p.family = "gemm";
    p.fields = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}, {"dtype", dtype}};
    try {
      auto session = backend->open(dev, gemm, p, 1);
      auto kernel = session->prepare(gemm.default_config);
      const Validation v = session->validate(*kernel, Tolerance{});
      CHECK(v.mismatch_fraction == 0);
      if (dev.property("has_mfma") >= 2) {  // the matrix-core kernel against the same reference
        Config mfma = gemm.default_config;
        mfma.set("MFMA", 1);
        auto mk = session->prepare(mfma);
        CHECK(session->validate(*mk, Tolerance{}).mismatch_fraction == 0);
      }
      SampleRequest req;
      req.launches = 10;
      req.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      const double amortized = session->sample(*kernel, req);
      req.method = Method::PerLaunch;
      const double per_launch = session->sample(*kernel, req);
      std::printf("gemm %dx%dx%d %s: max error %g, amortized %.0f ns, per_launch %.0f ns\n", m, n, k, dtype,
                  v.max_abs_error, amortized, per_launch);
      CHECK(amortized > 0 && per_launch > 0);
    } catch (const std::exception& e) {
      CHECK_MSG(false, e.what());
    }
  }
  const KernelFamily qmatmul = backend->family("qmatmul");
  for (const auto& [batch, out, in] : {std::tuple{16, 256, 256}, {5, 72, 40}}) {
    Problem p;
    p.family = "qmatmul";
    p.fields = {{"batch", std::to_string(batch)}, {"out", std::to_string(out)}, {"in", std::to_string(in)}};
    try {
      auto session = backend->open(dev, qmatmul, p, 1);
      for (int mfma : {0, 1}) {
        if (mfma && dev.property("has_mfma") < 2) continue;
        Config c = qmatmul.default_config;
        c.set("MFMA", mfma);
        auto kernel = session->prepare(c);
        const Validation v = session->validate(*kernel, Tolerance{});
        std::printf("qmatmul %dx%dx%d MFMA=%d: max error %g\n", batch, out, in, mfma, v.max_abs_error);
        CHECK(v.mismatch_fraction == 0);
      }
    } catch (const std::exception& e) {
      CHECK_MSG(false, e.what());
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  return ktune_test::finish("hip/test_hip_gpu");
}
