// GEMM benchmarks of the CUDA backend against cuBLAS, measured in the same process with the
// same method (CUDA events; amortized = a CUDA graph of many launches between one event pair).
//
//   cuda_bench_gemm tune   [--shapes 16x4096x4096,...] [--dtype f16] [--cache DIR] [--best FILE]
//                          [--tune-mode warm_l2|rotating|per_launch]
//       1. tunes each shape with the default space (exhaustive), timing configs in --tune-mode
//          (default warm_l2: a graph of launches on the same buffers), prints the best config's
//          speedup over cuBLAS (paired in the tune mode, and re-measured in each mode: warm L2,
//          rotating buffers larger than L2, per-launch with an L2 flush);
//          For memory-bound shapes, also the bandwidth ceiling in each mode: the fastest
//          config of a kernel that only reads the shape's bytes (read_ceiling.cu), timed
//          against the same cuBLAS; cuBLAS / ceiling bounds the ratio any kernel can reach.
//       2. tuning wall time per shape with an empty compile cache (cold) and again (warm),
//          configs per second.
//   cuda_bench_gemm repeat --best FILE [--runs 5] [--warmup-ms 1000]
//       3. re-measures each shape's best config in fresh processes; spread = max/min - 1.
//   cuda_bench_gemm measure --shape MxNxK --dtype f16 --config KEY   (one fresh-process sample)
// --dtype f16 | bf16 tunes the gemm family; --dtype w8a16 the qmatmul family (batch x out x in).
//
// Each mode ends with `name=value` lines, one per figure.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/tuner.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

struct Args {
  std::string mode;
  std::vector<std::string> shapes{"16x4096x4096",   "128x4096x4096", "1024x4096x4096",
                                  "4096x4096x4096", "16x14336x4096", "4096x14336x4096"};
  std::string dtype = "f16";
  fs::path cache = fs::temp_directory_path() / ("ktune_bench_cache_" + std::to_string(::getpid()));
  fs::path best = "gemm_best.json";
  std::string config;
  int runs = 5;
  double warmup_ms = 5;               // measure/repeat: load before the first sample (the tuner's own)
  std::string tune_mode = "warm_l2";  // how the search times configs: a winner for cold weights tunes cold
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) throw InputError("usage: cuda_bench_gemm tune|repeat|measure [options] (see the source's header)");
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw InputError("option " + k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--shapes" || k == "--shape") {
      a.shapes.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) a.shapes.push_back(s);
    } else if (k == "--dtype")
      a.dtype = v;
    else if (k == "--cache")
      a.cache = v;
    else if (k == "--best")
      a.best = v;
    else if (k == "--config")
      a.config = v;
    else if (k == "--runs")
      a.runs = std::stoi(v);
    else if (k == "--warmup-ms")
      a.warmup_ms = std::stod(v);
    else if (k == "--tune-mode")
      a.tune_mode = v;
    else
      throw InputError("unknown option " + k);
  }
  return a;
}

// "MxNxK"; for qmatmul (--dtype w8a16) batch x out x in.
Problem problem_of(const std::string& shape, const std::string& dtype) {
  int m = 0, n = 0, k = 0;
  if (std::sscanf(shape.c_str(), "%dx%dx%d", &m, &n, &k) != 3) throw InputError("shape '" + shape + "' is not MxNxK");
  Problem p;
  if (dtype == "w8a16") {
    p.family = "qmatmul";
    p.fields = {{"batch", std::to_string(m)},
                {"out", std::to_string(n)},
                {"in", std::to_string(k)},
                {"x_dtype", "f16"},
                {"w_dtype", "i8"}};
  } else {
    p.family = "gemm";
    p.fields = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}, {"dtype", dtype}};
  }
  return p;
}

DeviceInfo first_device(Backend& b) {
  auto devices = b.devices();
  if (devices.empty()) throw RunError("no CUDA device: " + cuda_unavailable_reason());
  return devices.front();
}

// Keeps the measured trials, to show the runners-up.
class Collect : public TuneObserver {
 public:
  std::vector<Trial> ok;
  void on_event(const TuneEvent& e) override {
    if (auto* l = std::get_if<event::Log>(&e)) std::fprintf(stderr, "  %s\n", l->message.c_str());
    if (auto* f = std::get_if<event::TrialFinished>(&e); f && f->trial.status == TrialStatus::Ok)
      ok.push_back(f->trial);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Remeasured {
  double kernel_ns = 0, other_ns = 0;
};

// Kernel `k` of session `s` and kernel `o` of session `so`, timed with `settings` in alternation.
Remeasured paired(const MeasureSettings& settings, ProblemSession& s, PreparedKernel& k, ProblemSession& so,
                  PreparedKernel& o) {
  const auto [ours, theirs] = measure_pair(
      settings, [&](const SampleRequest& q) { return s.sample(k, q); },
      [&](const SampleRequest& q) { return so.sample(o, q); });
  return {ours.stats.median_ns, theirs.stats.median_ns};
}

// The config and cuBLAS (other_ns) timed with `settings` in one fresh session.
Remeasured remeasure(Backend& b, const DeviceInfo& dev, const Problem& p, const Config& c,
                     const MeasureSettings& settings) {
  auto s = b.open(dev, b.family(p.family), p, 1);
  auto k = s->prepare(c);
  s->validate(*k, Tolerance{});
  auto base = s->prepare_baseline();
  return paired(settings, *s, *k, *s, *base);
}

// The bandwidth ceiling of a memory-bound shape in one measurement mode: the read_ceiling kernel
// (read_ceiling.cu) tuned over its own space to read the shape's minimum traffic, then timed in
// alternation with cuBLAS and, separately, with the config `c`. `reader` is read_ceiling.json,
// loaded once by the caller.
struct Ceiling {
  Remeasured vs_cublas, vs_config;
};
Ceiling ceiling(Backend& b, const DeviceInfo& dev, const KernelFamily& reader, const KernelFamily& gemm_family,
                const Problem& gemm_problem, const Config& c, const MeasureSettings& settings) {
  const auto bytes = static_cast<std::uint64_t>(gemm_family.bytes(gemm_problem) + 15) / 16 * 16;
  Problem p;
  p.family = reader.name;
  p.fields = {{"bytes", std::to_string(bytes)}};
  TuneRequest req;
  req.family = reader;
  req.problems = {p};
  req.space = reader.default_space;
  req.measure = settings;
  req.measure.warmup_ms = 5;
  Collect observer;
  const RunSummary run = Tuner(b, dev).run(req, observer);
  const auto& best = run.results.at(0).best;
  if (!best) throw RunError("no read_ceiling config ran for " + std::to_string(bytes) + " bytes");
  auto s = b.open(dev, reader, p, 1);
  auto read = s->prepare(best->config);
  auto gemm = b.open(dev, gemm_family, gemm_problem, 1);
  auto base = gemm->prepare_baseline();
  auto ours = gemm->prepare(c);
  return {paired(settings, *s, *read, *gemm, *base), paired(settings, *s, *read, *gemm, *ours)};
}

MeasureSettings bench_settings() {
  MeasureSettings m;
  m.noise_target = 0.005;
  m.min_samples = 10;
  m.max_samples = 200;
  m.warmup_ms = 50;
  return m;
}

// The bench's timing in one of its three modes.
MeasureSettings mode_settings(const std::string& mode) {
  MeasureSettings m = bench_settings();
  if (mode == "rotating") {
    m.rotate_buffers = true;
  } else if (mode == "per_launch") {
    m.method = Method::PerLaunch;
    m.max_samples = 100;
  } else if (mode != "warm_l2") {
    throw InputError("--tune-mode '" + mode + "' is not warm_l2, rotating or per_launch");
  }
  return m;
}

int tune(const Args& a) {
  const MeasureSettings search = mode_settings(a.tune_mode);
  fs::remove_all(a.cache);
  const DeviceInfo dev = first_device(*make_cuda_backend(CudaBackendOptions{fs::path{}}));
  std::printf("device: %s, %d SMs, L2 %.0f MiB, peak f16 %.0f TFLOP/s, %.0f GB/s (spec)\n", dev.name.c_str(),
              static_cast<int>(dev.property("sms")), dev.property("l2_bytes") / 1048576,
              dev.property("peak_gflops_f16") / 1000, dev.property("mem_bandwidth_gbs"));
  nlohmann::json best = nlohmann::json::object();
  std::vector<std::pair<std::string, double>> figures;
  // Figure names of other dtypes and tune modes than f16 tuned warm.
  const std::string tag =
      (a.dtype == "f16" ? "" : a.dtype + "_") + (a.tune_mode == "warm_l2" ? "" : "tuned_" + a.tune_mode + "_");
  for (const auto& shape : a.shapes) {
    const Problem p = problem_of(shape, a.dtype);
    // A compile cache of its own per shape: the cold pass compiles everything.
    auto backend = make_cuda_backend(CudaBackendOptions{a.cache / shape});
    const KernelFamily gemm = backend->family(p.family);
    TuneRequest req;
    req.family = gemm;
    req.problems = {p};
    req.space = gemm.default_space;
    req.measure.rotate_buffers = search.rotate_buffers;
    req.measure.method = search.method;
    // The GPU stays busy (and clocked up) for the whole run, so a config needs only a short
    // warm-up of its own: the first sample already absorbs module load and graph creation.
    req.measure.warmup_ms = 5;
    Collect collect[2];
    double walls[2] = {0, 0};
    RunSummary runs[2];
    for (int pass = 0; pass < 2; ++pass) {  // 0: empty compile cache, 1: warm
      Tuner tuner(*backend, dev);
      const auto t0 = std::chrono::steady_clock::now();
      runs[pass] = tuner.run(req, collect[pass]);
      walls[pass] = seconds_since(t0);
    }
    const ProblemResult& r = runs[0].results.at(0);
    std::uint64_t trials = 0;
    for (const auto& [k, v] : runs[0].status_counts) trials += v;
    if (!r.best || !r.baseline || !r.best_paired) {
      std::printf("%s: no valid config or no baseline\n", shape.c_str());
      continue;
    }
    const double ratio = *r.speedup();  // cuBLAS and the winner timed in alternation, in the tune mode
    std::string statuses;
    for (const auto& [k, v] : runs[0].status_counts) statuses += " " + k + "=" + std::to_string(v);
    std::printf(
        "%s %s, tuned %s: best %s  %.2f us (%.1f TFLOP/s, %.0f GB/s)  paired with cuBLAS: %.2f us vs %.2f us  ratio "
        "%.3f  [%llu trials:%s]\n",
        shape.c_str(), a.dtype.c_str(), a.tune_mode.c_str(), r.best->config.key().c_str(),
        r.best->stats.median_ns / 1e3, r.best->tflops, r.best->gbps, r.best_paired->median_ns / 1e3,
        r.baseline->median_ns / 1e3, ratio, static_cast<unsigned long long>(trials), statuses.c_str());
    auto& top = collect[0].ok;
    std::sort(top.begin(), top.end(),
              [](const Trial& x, const Trial& y) { return x.stats.median_ns < y.stats.median_ns; });
    for (std::size_t i = 1; i < std::min<std::size_t>(top.size(), 5); ++i)
      std::printf("    #%zu %s  %.2f us\n", i + 1, top[i].config.key().c_str(), top[i].stats.median_ns / 1e3);
    std::printf("    tuning wall time: cold %.2f s (%.1f configs/s), warm %.2f s (%.1f configs/s)\n", walls[0],
                static_cast<double>(trials) / walls[0], walls[1], static_cast<double>(trials) / walls[1]);
    figures.emplace_back(tag + "ratio_search_" + shape, ratio);
    figures.emplace_back(tag + "tune_cold_s_" + shape, walls[0]);
    figures.emplace_back(tag + "tune_warm_s_" + shape, walls[1]);
    figures.emplace_back(tag + "configs_per_s_warm_" + shape, static_cast<double>(trials) / walls[1]);
    figures.emplace_back(tag + "space_valid_" + shape, static_cast<double>(r.space_valid));

    // The same winner in each mode: warm L2 (the search's own pairing where it tuned warm, else a
    // fresh session), rotating input copies larger than L2 (amortized), and one event pair per
    // launch after an L2 flush.
    const MeasureSettings warm = mode_settings("warm_l2"), rotate = mode_settings("rotating"),
                          per_launch = mode_settings("per_launch");
    const Remeasured hot = a.tune_mode == "warm_l2" ? Remeasured{r.best_paired->median_ns, r.baseline->median_ns}
                                                    : remeasure(*backend, dev, p, r.best->config, warm);
    const Remeasured cold = remeasure(*backend, dev, p, r.best->config, rotate);
    const Remeasured pl = remeasure(*backend, dev, p, r.best->config, per_launch);
    std::printf(
        "    re-measured: warm L2 %.2f us vs cuBLAS %.2f us (ratio %.3f); rotating buffers %.2f us vs %.2f us (ratio "
        "%.3f); per-launch + flush %.2f us vs %.2f us (ratio %.3f)\n",
        hot.kernel_ns / 1e3, hot.other_ns / 1e3, hot.other_ns / hot.kernel_ns, cold.kernel_ns / 1e3,
        cold.other_ns / 1e3, cold.other_ns / cold.kernel_ns, pl.kernel_ns / 1e3, pl.other_ns / 1e3,
        pl.other_ns / pl.kernel_ns);
    figures.emplace_back(tag + "ratio_warm_l2_" + shape, hot.other_ns / hot.kernel_ns);
    figures.emplace_back(tag + "ratio_rotating_" + shape, cold.other_ns / cold.kernel_ns);
    figures.emplace_back(tag + "ratio_per_launch_" + shape, pl.other_ns / pl.kernel_ns);
    // Memory-bound shapes (intensity below the device's ridge point): how close any kernel
    // could come, measured in each mode against the same cuBLAS.
    const double ridge = dev.property("peak_gflops_f16") / dev.property("mem_bandwidth_gbs");
    if (gemm.flops(p) / gemm.bytes(p) < ridge) {
      const KernelFamily reader = backend->load_family_spec(fs::path(KTUNE_BENCH_CUDA_DIR) / "read_ceiling.json");
      const std::pair<const char*, const MeasureSettings*> modes[] = {
          {"warm_l2", &warm}, {"rotating", &rotate}, {"per_launch", &per_launch}};
      for (const auto& [mode, settings] : modes) {
        const Ceiling c = ceiling(*backend, dev, reader, gemm, p, r.best->config, *settings);
        const double bound = c.vs_cublas.other_ns / c.vs_cublas.kernel_ns,
                     reached = c.vs_config.kernel_ns / c.vs_config.other_ns;
        std::printf(
            "    %s ceiling: reading %.1f MB takes %.2f us (%.0f GB/s) vs cuBLAS %.2f us: no kernel exceeds ratio "
            "%.3f; "
            "ktune %.2f us reaches %.0f%% of the ceiling\n",
            mode, gemm.bytes(p) / 1e6, c.vs_cublas.kernel_ns / 1e3, gemm.bytes(p) / c.vs_cublas.kernel_ns,
            c.vs_cublas.other_ns / 1e3, bound, c.vs_config.other_ns / 1e3, 100 * reached);
        figures.emplace_back(tag + "ceiling_ratio_" + mode + "_" + shape, bound);
        figures.emplace_back(tag + "pct_of_ceiling_" + mode + "_" + shape, 100 * reached);
      }
    }
    best[shape] = {{"config", r.best->config.key()},
                   {"median_ns", r.best->stats.median_ns},
                   {"paired_ns", r.best_paired->median_ns},
                   {"cublas_ns", r.baseline->median_ns}};
    std::fflush(stdout);
  }
  std::ofstream(a.best) << best.dump(2) << '\n';
  for (const auto& [k, v] : figures) std::printf("%s=%.4g\n", k.c_str(), v);
  return 0;
}

int measure_once(const Args& a) {
  auto backend = make_cuda_backend(CudaBackendOptions{a.cache});
  const DeviceInfo dev = first_device(*backend);
  const Problem p = problem_of(a.shapes.at(0), a.dtype);
  auto s = backend->open(dev, backend->family(p.family), p, 1);
  auto k = s->prepare(Config::from_key(a.config));
  s->validate(*k, Tolerance{});
  // A fresh process meets an idle GPU at its boost clock. The default warm-up (5 ms, the
  // tuner's) measures near boost, as tuning does; a long one (--warmup-ms 1000) measures at the
  // clock the power limit holds under sustained load.
  MeasureSettings settings = bench_settings();
  settings.warmup_ms = a.warmup_ms;
  const auto out = measure(
      settings, [&](const SampleRequest& q) { return s->sample(*k, q); }, std::nullopt);
  const auto clock = dynamic_cast<GpuSessionInfo&>(*s).measure_sm_clock_mhz();
  std::printf("median_ns=%.1f samples=%zu sm_clock_mhz=%.0f\n", out.stats.median_ns, out.stats.count, clock);
  return 0;
}

int repeat(const Args& a, const char* self) {
  std::ifstream in(a.best);
  if (!in) throw InputError("no " + a.best.string() + ": run `cuda_bench_gemm tune --best FILE` first");
  const nlohmann::json best = nlohmann::json::parse(in);
  std::vector<std::pair<std::string, double>> figures;
  for (const auto& [shape, entry] : best.items()) {
    std::vector<double> medians;
    std::string clocks;
    for (int i = 0; i < a.runs; ++i) {
      const std::string cmd = std::string(self) + " measure --shape " + shape + " --dtype " + a.dtype + " --cache " +
                              (a.cache / shape).string() + " --warmup-ms " + std::to_string(a.warmup_ms) +
                              " --config '" + entry["config"].get<std::string>() + "'";
      FILE* pipe = popen(cmd.c_str(), "r");
      if (!pipe) throw RunError("cannot run " + cmd);
      char line[512];
      double median = 0, mhz = 0;
      while (std::fgets(line, sizeof line, pipe))
        if (std::strncmp(line, "median_ns=", 10) == 0)
          std::sscanf(line, "median_ns=%lf samples=%*d sm_clock_mhz=%lf", &median, &mhz);
      if (pclose(pipe) != 0 || median <= 0) throw RunError("fresh-process measurement failed: " + cmd);
      medians.push_back(median);
      clocks += " " + std::to_string(static_cast<int>(mhz));
    }
    const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
    const double spread = *hi / *lo - 1;
    std::printf("%s %s: %d fresh processes (%.0f ms warm-up), median %.2f..%.2f us, spread %.2f%% (SM clock MHz:%s)\n",
                shape.c_str(), entry["config"].get<std::string>().c_str(), a.runs, a.warmup_ms, *lo / 1e3, *hi / 1e3,
                spread * 100, clocks.c_str());
    figures.emplace_back("spread_pct_" + shape, spread * 100);
  }
  for (const auto& [k, v] : figures) std::printf("%s=%.3g\n", k.c_str(), v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a stage cut short by its timeout still shows its shapes
  try {
    const Args a = parse(argc, argv);
    if (a.mode == "tune") return tune(a);
    if (a.mode == "measure") return measure_once(a);
    if (a.mode == "repeat") return repeat(a, argv[0]);
    throw InputError("unknown mode '" + a.mode + "': use tune, repeat or measure");
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
