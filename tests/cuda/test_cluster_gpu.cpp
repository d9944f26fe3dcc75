// Thread-block clusters on the GPU (sm_90): tests/cuda/data/cluster_rank.json launches 8 blocks
// in clusters of `cluster_x` along x, each writing %cluster_ctarank and %cluster_nctarank, and a
// reference kernel without a cluster writes what they must be. A cluster the driver never got
// (nctarank 1) fails validation; a cluster of 1 is a plain launch and reads 1. Timed both ways,
// so the cluster also survives graph capture.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>

#include "check.h"
#include "gpu.h"
#include "ktune/backend.h"
#include "ktune/backends/gpu.h"
#include "ktune/measurement.h"

using namespace ktune;
using ktune_test::status_of;

namespace {

const std::filesystem::path kSpec = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/cuda/data/cluster_rank.json";

void check_clusters_of(ktune_test::Gpu& gpu, const KernelFamily& f, int cluster_x) {
  std::printf("cluster_x = %d\n", cluster_x);
  const Problem p = ktune_test::make_problem(f, {{"cluster_x", std::to_string(cluster_x)}});
  auto s = gpu.backend->open(gpu.device, f, p, 3);
  const auto* info = dynamic_cast<GpuSessionInfo*>(s.get());
  CHECK(info != nullptr);
  if (!info) return;
  const auto& want = info->reference_output();
  CHECK(want.size() == 16);
  for (std::size_t b = 0; b < want.size() / 2; ++b)
    CHECK_MSG(
        want[2 * b] == static_cast<double>(b % static_cast<std::size_t>(cluster_x)) && want[2 * b + 1] == cluster_x,
        "reference block " + std::to_string(b));
  for (int threads : {32, 64}) {
    auto k = s->prepare(Config({{"THREADS", threads}}));
    auto [status, why] = status_of([&] { s->validate(*k, Tolerance{}); });
    CHECK_MSG(status == TrialStatus::Ok, why);
    for (const Method method : {Method::Amortized, Method::PerLaunch}) {
      SampleRequest r;
      r.method = method;
      r.launches = 4;
      r.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      double ns = 0;
      std::tie(status, why) = status_of([&] { ns = s->sample(*k, r); });
      CHECK_MSG(status == TrialStatus::Ok && ns > 0, why);
    }
    // After the captured graph ran, the output is still what clusters give.
    std::tie(status, why) = status_of([&] { s->validate(*k, Tolerance{}); });
    CHECK_MSG(status == TrialStatus::Ok, why);
  }
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_cluster_gpu");
  if (gpu.device.property("cc_major") < 9) {
    std::printf("test_cluster_gpu skipped: thread-block clusters need compute capability 9.0 or newer (%s is %d.x)\n",
                gpu.device.name.c_str(), static_cast<int>(gpu.device.property("cc_major")));
    return 77;
  }
  const KernelFamily f = gpu.backend->load_family_spec(kSpec);
  check_clusters_of(gpu, f, 2);
  check_clusters_of(gpu, f, 1);
  check_clusters_of(gpu, f, 8);
  // 3 does not divide the grid of 8: refused before the driver sees it.
  const Problem odd = ktune_test::make_problem(f, {{"cluster_x", "3"}});
  auto s = gpu.backend->open(gpu.device, f, odd, 3);
  auto [status, why] = status_of([&] { s->prepare(f.default_config); });
  CHECK_MSG(
      status == TrialStatus::LaunchError && why.find("not divisible by the cluster 3 x 1 x 1") != std::string::npos,
      why);
  return ktune_test::finish("test_cluster_gpu");
}
