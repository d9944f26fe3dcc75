// bench_cpu_grouped_gemm: ktune's tuned CPU grouped_gemm (MoE) against what a framework without
// a grouped kernel does: gather the routed rows into expert order, run one GEMM per expert through
// ktune's own CPU gemm, scatter the results back. The loop runs with the gemm family's default
// blocking and with a gemm config tuned on the pass's average expert shape, both on every
// hardware thread, as the grouped kernel. Gathers, scatters and the transposition dW's per-expert
// GEMM needs are timed with the loop. All three are timed in alternation (measure_alternating:
// same clocks, same machine load) on the same routing and operands, and the loop's output is
// checked against the grouped kernel's.
//
//   bench_cpu_grouped_gemm [--quick]      --quick: fewer configs per tune (a few minutes)
// Prints per problem ratio_vs_loop_tuned_<shape>_<pass>=<loop time / grouped time> (> 1: the
// grouped kernel is faster) and ratio_vs_loop_default_<shape>_<pass>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "gemm.h"
#include "grouped_gemm.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/tuner.h"

using namespace ktune;
using namespace ktune::cpu;

namespace {

struct MoeShape {
  const char* name;
  long experts, tokens, topk, hidden, intermediate;
};

Config tune(Backend& backend, const DeviceInfo& dev, const KernelFamily& family, const Problem& p,
            const SearchSpace& space, const MeasureSettings& settings) {
  TuneRequest req;
  req.family = family;
  req.problems = {p};
  req.space = space;
  req.measure = settings;
  req.seed = 1;
  bench::Printer printer;
  const RunSummary s = Tuner(backend, dev).run(req, printer);
  if (!s.results.at(0).best) throw RunError("no config passed on " + family.name + " " + p.key());
  return s.results.at(0).best->config;
}

// The loop baseline's buffers and one launch of it.
struct Loop {
  const Routing& r;
  GroupedShape shape;
  GroupedOperands op;
  const float* w_t;  // fwd: w transposed per expert to [hidden, intermediate], the layout a plain GEMM wants
  AlignedBuffer<float> a, c;
  std::vector<AlignedBuffer<float>> ws;

  Loop(const Routing& r, GroupedShape s, GroupedOperands op, const float* w_t) : r(r), shape(s), op(op), w_t(w_t) {
    const std::size_t n = static_cast<std::size_t>(r.rows() * std::max(s.hidden, s.intermediate));
    a.resize(n);
    c.resize(n);
  }

  void run(const GemmPlan& g, ThreadPool& pool, AlignedBuffer<float>& b) {
    const long H = shape.hidden, I = shape.intermediate;
    const int T = g.threads;
    StopFlag none{Clock::time_point{}};
    auto gemm = [&](const float* A, const float* B, float* C, long M, long N, long K) {
      run_gemm(g, {A, B, C, M, N, K, 1.0f, 0.0f}, ws, pool, none);
    };
    switch (shape.pass) {
      case MoePass::Fwd:
        permute_rows(a.data(), op.x, r.token, H, true, pool, T);
        for (long e = 0; e < r.experts; ++e)
          if (r.count(e))
            gemm(a.data() + r.offset[e] * H, w_t + e * H * I, c.data() + r.offset[e] * I, r.count(e), I, H);
        permute_rows(op.out, c.data(), r.row, I, false, pool, T);
        break;
      case MoePass::DX:
        permute_rows(a.data(), op.dy, r.row, I, true, pool, T);
        for (long e = 0; e < r.experts; ++e)
          if (r.count(e))
            gemm(a.data() + r.offset[e] * I, op.w + e * I * H, c.data() + r.offset[e] * H, r.count(e), H, I);
        permute_rows(op.out, c.data(), r.row, H, false, pool, T);
        break;
      case MoePass::DW:
        // dw_e = dy_e^T x_e: x rows gathered, dy rows gathered and transposed to [I, rows of e].
        permute_rows(b.data(), op.x, r.token, H, true, pool, T);
        pool.run(T, [&](int t) {
          for (long e = t; e < r.experts; e += T)
            for (long s = 0; s < r.count(e); ++s) {
              const float* src = op.dy + r.row[r.offset[e] + s] * I;
              float* dst = a.data() + r.offset[e] * I + s;
              for (long n = 0; n < I; ++n) dst[n * r.count(e)] = src[n];
            }
        });
        for (long e = 0; e < r.experts; ++e)
          gemm(a.data() + r.offset[e] * I, b.data() + r.offset[e] * H, op.out + e * I * H, I, H, r.count(e));
        break;
    }
  }
};

Problem pass_problem(const MoeShape& s, const char* pass) {
  Problem p;
  p.family = "grouped_gemm";
  p.fields = {{"experts", std::to_string(s.experts)},
              {"tokens", std::to_string(s.tokens)},
              {"topk", std::to_string(s.topk)},
              {"hidden", std::to_string(s.hidden)},
              {"intermediate", std::to_string(s.intermediate)},
              {"dtype", "f32"},
              {"pass", pass}};
  return p;
}

// The per-expert GEMM of the pass at the average expert load.
Problem expert_problem(const MoeShape& s, MoePass pass) {
  const long rows = std::max(1L, (s.tokens * s.topk + s.experts - 1) / s.experts);
  long M = rows, N = s.intermediate, K = s.hidden;
  if (pass == MoePass::DX) std::swap(N, K);
  if (pass == MoePass::DW) M = s.intermediate, N = s.hidden, K = rows;
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)}, {"dtype", "f32"}};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<bool> flag = bench::quick_flag(argc, argv, "bench_cpu_grouped_gemm");
  if (!flag) return 2;
  const bool quick = *flag;
  try {
    auto backend = make_cpu_backend();
    const DeviceInfo dev = backend->devices().at(0);
    const KernelFamily grouped = backend->family("grouped_gemm"), gemm = backend->family("gemm");
    const int hw = static_cast<int>(dev.property("threads_hw", 1));
    const int lanes = static_cast<int>(dev.property("simd_width_f32", 4));
    std::printf("device: %s (%d threads, isa %s)\n", dev.name.c_str(), hw, dev.text.at("isa").c_str());

    MeasureSettings settings;  // the tuner's defaults: amortized, warm inputs
    settings.max_ms_per_config = 1000;
    std::map<std::string, std::vector<ParamValue>> common = {{"threads", {hw}}, {"vec", {lanes}}};
    if (quick) {
      common["MR"] = {6, 14};
      common["NR"] = {2 * lanes};
      common["NB"] = {128, 512};
    }
    const std::vector<MoeShape> shapes = {
        {"mixtral", 8, 256, 2, 512, 1792},  // Mixtral-8x7B's routing, sizes scaled by 1/8
        {"e64", 64, 256, 6, 512, 352},      // 64 experts top-6 (2048 -> 1408 scaled by 1/4)
    };
    ThreadPool pool(hw);
    std::printf("\n%-8s %-4s %10s %10s %10s %9s %9s  %s\n", "shape", "pass", "grouped_ms", "loop_tuned", "loop_dflt",
                "vs_tuned", "vs_dflt", "grouped config | gemm config");
    std::vector<std::string> ratios;
    for (const MoeShape& s : shapes) {
      for (const char* pass_name : {"fwd", "dX", "dW"}) {
        const MoePass pass = moe_pass_from_string(pass_name);
        const Problem gp = pass_problem(s, pass_name);
        const Config best =
            tune(*backend, dev, grouped, gp, bench::restrict_space(grouped.default_space, common), settings);
        std::map<std::string, std::vector<ParamValue>> gemm_values = common;
        gemm_values["loop_order"] = {0, 1};
        const Config gemm_tuned = tune(*backend, dev, gemm, expert_problem(s, pass),
                                       bench::restrict_space(gemm.default_space, gemm_values), settings);
        Config gemm_default = gemm.default_config;
        gemm_default.set("threads", hw);

        // Operands and routing shared by the three.
        const long H = s.hidden, I = s.intermediate, R = s.tokens * s.topk;
        const Routing routing = generate_moe_routing(s.experts, s.tokens, s.topk, 7);
        std::mt19937_64 rng(3);
        std::uniform_real_distribution<float> u(-1, 1);
        auto random = [&](long n) {
          AlignedBuffer<float> b(n);
          for (long i = 0; i < n; ++i) b[i] = u(rng);
          return b;
        };
        AlignedBuffer<float> x = random(s.tokens * H), w = random(s.experts * I * H), dy = random(R * I), w_t(w.size());
        for (long e = 0; e < s.experts; ++e)
          for (long n = 0; n < I; ++n)
            for (long h = 0; h < H; ++h) w_t[(e * H + h) * I + n] = w[(e * I + n) * H + h];
        const std::size_t out_size = pass == MoePass::DW ? s.experts * I * H : R * (pass == MoePass::Fwd ? I : H);
        AlignedBuffer<float> out_grouped(out_size), out_loop(out_size), scratch_b(R * H);
        const GroupedShape shape{pass, H, I};

        const GroupedPlan plan = plan_grouped_gemm(best, hw, dev.property("max_workspace_bytes"));
        const std::vector<WorkItem> work = plan_work(plan, routing, shape);
        GroupedScratch scratch;
        scratch.reserve(routing, shape);
        std::vector<AlignedBuffer<float>> ws;
        StopFlag none{Clock::time_point{}};
        const GroupedOperands op{x.data(), w.data(), dy.data(), out_grouped.data()};
        Loop loop(routing, shape, {x.data(), w.data(), dy.data(), out_loop.data()}, w_t.data());
        const GemmPlan tuned_plan = plan_gemm(gemm_tuned, hw, dev.property("max_workspace_bytes"));
        const GemmPlan default_plan = plan_gemm(gemm_default, hw, dev.property("max_workspace_bytes"));

        auto timed = [](auto fn) {
          return [fn](const SampleRequest& r) {
            const auto t0 = Clock::now();
            for (int i = 0; i < r.launches; ++i) fn();
            return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / r.launches;
          };
        };
        Sampler g = timed([&] { run_grouped_gemm(plan, work, routing, shape, op, scratch, ws, pool, none); });
        Sampler lt = timed([&] { loop.run(tuned_plan, pool, scratch_b); });
        Sampler ld = timed([&] { loop.run(default_plan, pool, scratch_b); });
        // Same result, or the comparison means nothing.
        g({});
        lt({});
        double diff = 0;
        for (std::size_t i = 0; i < out_size; ++i)
          diff = std::max(diff, double(std::abs(out_grouped[i] - out_loop[i])));
        if (!(diff < 1e-3)) throw RunError("the loop and the grouped kernel disagree by " + std::to_string(diff));

        const auto m = measure_alternating(settings, {g, lt, ld});
        const double tg = m[0].stats.median_ns, tt = m[1].stats.median_ns, td = m[2].stats.median_ns;
        std::printf("%-8s %-4s %10.3f %10.3f %10.3f %9.3f %9.3f  %s | %s\n", s.name, pass_name, tg / 1e6, tt / 1e6,
                    td / 1e6, tt / tg, td / tg, best.key().c_str(), gemm_tuned.key().c_str());
        std::fflush(stdout);
        ratios.push_back(std::string("ratio_vs_loop_tuned_") + s.name + "_" + pass_name + "=" +
                         std::to_string(tt / tg));
        ratios.push_back(std::string("ratio_vs_loop_default_") + s.name + "_" + pass_name + "=" +
                         std::to_string(td / tg));
      }
    }
    for (const auto& r : ratios) std::printf("%s\n", r.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_grouped_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
