// bench_cpu_gemm: tunes ktune's CPU GEMM with the core's Tuner on 256^3, 1024^3 and 2048^3,
// single-threaded and on every hardware thread, and times OpenBLAS sgemm in the same process
// with the same method (ktune::measure: warm-up, then samples until the noise target, median).
// The tuned winner is measured again beside OpenBLAS rather than quoting the best of many
// trials, which would favour ktune by selection.
//
//   bench_cpu_gemm [--quick]      --quick: a few configs per shape (a couple of minutes)
// Last line: ratio_vs_openblas_1024_1t=<OpenBLAS time / ktune time>.
#include <cblas.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/tuner.h"

using namespace ktune;
using ktune::bench::Printer;
using ktune::bench::restrict_space;

namespace {

Problem cube(long n) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(n)}, {"N", std::to_string(n)}, {"K", std::to_string(n)}, {"dtype", "f32"}};
  return p;
}

struct Row {
  long n;
  int threads;
  std::string config;
  Stats ktune, openblas;
};

Stats time_openblas(const Problem& p, int threads, const MeasureSettings& settings) {
  const long n = p.num("M");
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&a, &b})
    for (auto& x : *v) x = u(rng);
  openblas_set_num_threads(threads);
  // The same product the ktune session times: alpha 1.5, beta 0, row-major, no transposes.
  auto sample = [&](const SampleRequest& r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < r.launches; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.5f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / r.launches;
  };
  return measure(settings, sample, std::nullopt).stats;
}

Stats time_ktune(Backend& backend, const DeviceInfo& dev, const KernelFamily& family, const Problem& p,
                 const Config& config, const MeasureSettings& settings) {
  auto session = backend.open(dev, family, p, 1);
  auto kernel = session->prepare(config);
  session->validate(*kernel, Tolerance{});
  return measure(
             settings, [&](const SampleRequest& r) { return session->sample(*kernel, r); }, std::nullopt)
      .stats;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<bool> flag = bench::quick_flag(argc, argv, "bench_cpu_gemm");
  if (!flag) return 2;
  const bool quick = *flag;
  try {
    auto backend = make_cpu_backend();
    const DeviceInfo dev = backend->devices().at(0);
    const KernelFamily family = backend->family("gemm");
    const int hw = static_cast<int>(dev.property("threads_hw", 1));
    std::printf("device: %s (%d threads, isa %s, peak %.0f GFLOP/s f32)\n", dev.name.c_str(), hw,
                dev.text.at("isa").c_str(), dev.property("peak_gflops_f32"));
    std::printf("openblas: %s\n", openblas_get_config());

    const MeasureSettings settings;  // the tuner's defaults: amortized, warm inputs
    const std::vector<long> sizes = {256, 1024, 2048};
    std::vector<int> modes = {1};
    if (hw > 1) modes.push_back(hw);

    std::vector<Row> rows;
    for (int threads : modes) {
      std::map<std::string, std::vector<ParamValue>> values = {{"threads", {threads}}};
      if (quick) {
        values["MR"] = {6, 14};
        values["NR"] = {16, 32};
        values["KC"] = {384};
        values["loop_order"] = {0};
      }
      TuneRequest req;
      req.family = family;
      for (long n : sizes) req.problems.push_back(cube(n));
      req.space = restrict_space(family.default_space, values);
      req.measure = settings;
      req.seed = 1;
      Printer printer;
      std::fprintf(stderr, "tuning with threads=%d%s\n", threads, quick ? " (quick space)" : "");
      Tuner tuner(*backend, dev);
      const RunSummary summary = tuner.run(req, printer);
      for (const ProblemResult& r : summary.results) {
        if (!r.best) throw RunError("no config passed on " + r.problem.key());
        Row row{r.problem.num("M"), threads, r.best->config.key(), {}, {}};
        row.ktune = time_ktune(*backend, dev, family, r.problem, r.best->config, settings);
        row.openblas = time_openblas(r.problem, threads, settings);
        rows.push_back(row);
      }
    }

    std::printf("\n%-16s %7s %11s %11s %10s %10s %7s  %s\n", "shape", "threads", "ktune_ms", "openblas_ms",
                "ktune_GF/s", "oblas_GF/s", "ratio", "ktune config");
    double ratio_1024_1t = 0;
    for (const Row& r : rows) {
      const double flops = 2.0 * r.n * r.n * r.n;
      const double ratio = r.openblas.median_ns / r.ktune.median_ns;
      if (r.n == 1024 && r.threads == 1) ratio_1024_1t = ratio;
      std::printf("%-16s %7d %11.3f %11.3f %10.1f %10.1f %7.3f  %s\n",
                  (std::to_string(r.n) + "x" + std::to_string(r.n) + "x" + std::to_string(r.n)).c_str(), r.threads,
                  r.ktune.median_ns / 1e6, r.openblas.median_ns / 1e6, flops / r.ktune.median_ns,
                  flops / r.openblas.median_ns, ratio, r.config.c_str());
    }
    std::printf("ratio_vs_openblas_1024_1t=%.3f\n", ratio_1024_1t);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
