// bench_cpu_a8w8: ktune's CPU gemm_a8w8_blockscale (int8 and fp8 e4m3, bf16 output) against
// ktune's own f32 gemm on operands of the same shape (what serving code would run on weights
// dequantized to f32), at a decode shape (M=16, N=K=2048) and a square one (1024^3, sized
// for a 2-core machine). Each family is tuned with the core's Tuner (random search over its
// default space, threads 1 or all), then the winners and each family's default config are
// timed again together, in alternation (measure_alternating), with rotated input copies larger
// than the last-level cache (cold-cache throughput, what a model walking its layers sees).
//
//   bench_cpu_a8w8 [--quick]      --quick: 12 configs per problem instead of 48
// Prints a table and name=value lines: <q>_vs_gemm_<shape> = f32 gemm time / a8w8 time, both
// tuned (> 1: the 8-bit kernel is faster), and the same against each one's default config.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench_support.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/tuner.h"

using namespace ktune;

namespace {

struct Shape {
  const char* name;
  long M, N, K;
};

Problem gemm_problem(const Shape& s) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(s.M)}, {"N", std::to_string(s.N)}, {"K", std::to_string(s.K)}, {"dtype", "f32"}};
  return p;
}

Problem a8_problem(const Shape& s, const char* q) {
  Problem p;
  p.family = "gemm_a8w8_blockscale";
  p.fields = {{"M", std::to_string(s.M)},
              {"N", std::to_string(s.N)},
              {"K", std::to_string(s.K)},
              {"q_dtype", q},
              {"out_dtype", "bf16"}};
  return p;
}

// The best config of each problem, tuned by random search.
std::map<std::string, Config> tune(Backend& backend, const DeviceInfo& dev, const KernelFamily& family,
                                   const std::vector<Problem>& problems, std::size_t budget,
                                   const MeasureSettings& settings, int hw) {
  TuneRequest req;
  req.family = family;
  req.problems = problems;
  req.space = bench::restrict_space(
      family.default_space, {{"threads", hw > 1 ? std::vector<ParamValue>{1, hw} : std::vector<ParamValue>{1}}});
  req.strategy = {"random", budget, 1, 0};
  req.measure = settings;
  req.seed = 1;
  bench::Printer printer;
  std::fprintf(stderr, "tuning %s (random, %zu configs per problem)\n", family.name.c_str(), budget);
  const RunSummary summary = Tuner(backend, dev).run(req, printer);
  std::map<std::string, Config> best;
  for (const ProblemResult& r : summary.results) {
    if (!r.best) throw RunError("no config passed on " + r.problem.key());
    best[r.problem.key()] = r.best->config;
  }
  return best;
}

struct Entry {
  std::string name;  // "gemm_f32", "int8", "fp8_e4m3"
  bool tuned;
  Config config;
  std::unique_ptr<ProblemSession> session;
  std::unique_ptr<PreparedKernel> kernel;
  Stats stats;
};

}  // namespace

int main(int argc, char** argv) {
  const std::optional<bool> quick = bench::quick_flag(argc, argv, "bench_cpu_a8w8");
  if (!quick) return 2;
  const std::size_t budget = *quick ? 12 : 48;
  try {
    auto backend = make_cpu_backend();
    const DeviceInfo dev = backend->devices().at(0);
    const int hw = static_cast<int>(dev.property("threads_hw", 1));
    std::printf("device: %s (%d threads, isa %s, int8_vnni %g, peak %.0f GFLOP/s f32)\n", dev.name.c_str(), hw,
                dev.text.at("isa").c_str(), dev.property("int8_vnni"), dev.property("peak_gflops_f32"));
    const KernelFamily gemm = backend->family("gemm"), a8 = backend->family("gemm_a8w8_blockscale");
    MeasureSettings settings;
    settings.rotate_buffers = true;

    const std::vector<Shape> shapes = {{"decode", 16, 2048, 2048}, {"square", 1024, 1024, 1024}};
    const std::vector<const char*> qtypes = {"int8", "fp8_e4m3"};
    std::vector<Problem> gp, ap;
    for (const Shape& s : shapes) {
      gp.push_back(gemm_problem(s));
      for (const char* q : qtypes) ap.push_back(a8_problem(s, q));
    }
    auto gbest = tune(*backend, dev, gemm, gp, budget, settings, hw);
    auto abest = tune(*backend, dev, a8, ap, budget, settings, hw);

    std::printf("\n%-8s %-9s %-7s %10s %8s  %s\n", "shape", "kernel", "config", "median_ms", "TOPS", "config");
    std::vector<std::string> ratios;
    for (const Shape& s : shapes) {
      std::vector<Entry> entries;
      auto add = [&](const std::string& name, const KernelFamily& f, const Problem& p, bool tuned, const Config& c) {
        Entry e{name, tuned, c, backend->open(dev, f, p, 1), nullptr, {}};
        e.kernel = e.session->prepare(c);
        e.session->validate(*e.kernel, Tolerance{});
        entries.push_back(std::move(e));
      };
      const Problem g = gemm_problem(s);
      add("gemm_f32", gemm, g, true, gbest.at(g.key()));
      add("gemm_f32", gemm, g, false, gemm.default_config);
      for (const char* q : qtypes) {
        const Problem p = a8_problem(s, q);
        add(q, a8, p, true, abest.at(p.key()));
        add(q, a8, p, false, a8.default_config);
      }
      std::vector<Sampler> samplers;
      for (Entry& e : entries)
        samplers.push_back([&e](const SampleRequest& r) { return e.session->sample(*e.kernel, r); });
      const auto outcomes = measure_alternating(settings, samplers);
      const double flops = 2.0 * s.M * s.N * s.K;
      for (std::size_t i = 0; i < entries.size(); ++i) {
        entries[i].stats = outcomes[i].stats;
        std::printf("%-8s %-9s %-7s %10.3f %8.3f  %s\n", s.name, entries[i].name.c_str(),
                    entries[i].tuned ? "tuned" : "default", entries[i].stats.median_ns / 1e6,
                    flops / entries[i].stats.median_ns / 1e3, entries[i].config.key().c_str());
      }
      auto median = [&](const std::string& name, bool tuned) {
        for (const Entry& e : entries)
          if (e.name == name && e.tuned == tuned) return e.stats.median_ns;
        return 0.0;
      };
      for (const char* q : qtypes) {
        char line[160];
        std::snprintf(line, sizeof line, "%s_vs_gemm_%s=%.3f", q, s.name, median("gemm_f32", true) / median(q, true));
        ratios.push_back(line);
        std::snprintf(line, sizeof line, "%s_vs_gemm_%s_defaults=%.3f", q, s.name,
                      median("gemm_f32", false) / median(q, false));
        ratios.push_back(line);
        std::snprintf(line, sizeof line, "%s_tuned_vs_default_%s=%.3f", q, s.name, median(q, false) / median(q, true));
        ratios.push_back(line);
        std::snprintf(line, sizeof line, "%s_tops_%s=%.3f", q, s.name, flops / median(q, true) / 1e3);
        ratios.push_back(line);
      }
    }
    std::printf("\n");
    for (const auto& r : ratios) std::printf("%s\n", r.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_a8w8: %s\n", e.what());
    return 1;
  }
  return 0;
}
