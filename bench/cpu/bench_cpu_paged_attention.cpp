// bench_cpu_paged_attention: ktune's CPU paged_attention (decode) against the memory read
// ceiling, in one process. Per shape: the Tuner searches the family's default space on the
// backend (seed 1); then, on the same seeded workload (ragged lengths, shuffled page table), the
// tuned config and the family default are timed beside a read-only pass over exactly the K/V
// bytes the sequences need (contiguous, every hardware thread: the best case a gathering kernel
// cannot beat), cold (caches evicted before each launch) and warm (back-to-back launches).
//
//   bench_cpu_paged_attention [--quick]     --quick: 12 configs per shape instead of 48
// Prints name=value lines, e.g. paged_attention_b16_fraction_of_ceiling_cold=0.83.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bench_support.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "ktune/tuner.h"
#include "paged_attention.h"
#include "thread_pool.h"

using namespace ktune;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
  long batch, q_heads, kv_heads, head_dim, page_size, context;
  std::string name;
  Problem problem() const {
    Problem p;
    p.family = "paged_attention";
    p.fields = {{"num_sequences", std::to_string(batch)},
                {"num_q_heads", std::to_string(q_heads)},
                {"num_kv_heads", std::to_string(kv_heads)},
                {"head_dim", std::to_string(head_dim)},
                {"page_size", std::to_string(page_size)},
                {"max_model_len", std::to_string(context)},
                {"dtype", "f32"}};
    return p;
  }
};

// Sums `n` floats from `p` with independent vector chains (the compiler cannot drop the reads).
__attribute__((target("avx2"))) float read_sum(const float* p, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float s = 0;
  for (float x : out) s += x;
  for (; i < n; ++i) s += p[i];
  return s;
}

class Evictor {
 public:
  explicit Evictor(double llc) : buf_(static_cast<std::size_t>(llc * 2) + (8 << 20)) {}
  void operator()(cpu::ThreadPool& pool) {
    const unsigned char v = ++value_;
    const int T = pool.size();
    pool.run(T, [&](int t) {
      const std::size_t b = buf_.size() * t / T, e = buf_.size() * (t + 1) / T;
      std::memset(buf_.data() + b, v, e - b);
    });
  }

 private:
  std::vector<unsigned char> buf_;
  unsigned char value_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// CPU time of the calling thread when `threads` is 1 (the pool's idle workers may still be
// spinning after an eviction), else of the whole process.
double cpu_ns(int threads) {
  timespec t;
  clock_gettime(threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// Medians of `launches` runs of fn, each after evicting the caches (cold) or back-to-back
// (warm): wall ns, and CPU ns (see cpu_ns). On a shared machine the wall time
// includes the time other processes held our cores; CPU time does not (and counts a thread
// stalled on memory as busy), so the two bracket what an idle machine would show.
struct Timing {
  double wall_ns, cpu_ns;
};
template <class Fn>
Timing time_runs(Fn fn, int threads, cpu::ThreadPool& pool, Evictor& evict, bool cold, int launches) {
  std::vector<double> wall, cpu;
  fn();  // untimed first run: pages touched, pool awake
  for (int i = 0; i < launches; ++i) {
    if (cold) evict(pool);
    const double c0 = cpu_ns(threads);
    const auto t0 = Clock::now();
    fn();
    wall.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    cpu.push_back(cpu_ns(threads) - c0);
  }
  return {median(wall), median(cpu)};
}

class Quiet : public TuneObserver {
 public:
  void on_event(const TuneEvent& e) override {
    if (auto* f = std::get_if<event::ProblemFinished>(&e); f && f->result.best)
      std::fprintf(stderr, "  tuned %s: %s %.3f ms\n", f->result.problem.key().c_str(),
                   f->result.best->config.key().c_str(), f->result.best->stats.median_ns / 1e6);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::optional<bool> flag = bench::quick_flag(argc, argv, "bench_cpu_paged_attention");
  if (!flag) return 2;
  const bool quick = *flag;
  if (!__builtin_cpu_supports("avx2")) {
    std::fprintf(stderr, "bench_cpu_paged_attention: the read ceiling needs AVX2\n");
    return 1;
  }
  try {
    auto backend = make_cpu_backend();
    const DeviceInfo dev = backend->devices().at(0);
    const KernelFamily family = backend->family("paged_attention");
    const int hw = static_cast<int>(dev.property("threads_hw", 1));
    std::printf("device: %s (%d threads, isa %s, l3 %.0f MiB)\n", dev.name.c_str(), hw, dev.text.at("isa").c_str(),
                dev.property("l3_bytes") / (1 << 20));
    cpu::ThreadPool pool(hw);
    Evictor evict(dev.property("l3_bytes", 32 << 20));

    // Llama-3-8B's attention (32 q heads, 8 kv heads, head_dim 128), pages of 16 tokens.
    const std::vector<Shape> shapes = {{16, 32, 8, 128, 16, 2048, "b16"}, {64, 32, 8, 128, 16, 1024, "b64"}};
    for (const Shape& s : shapes) {
      const Problem problem = s.problem();
      TuneRequest req;
      req.family = family;
      req.problems = {problem};
      req.space = family.default_space;
      req.strategy.kind = "random";
      req.strategy.budget = quick ? 12 : 48;
      req.strategy.seed = 1;
      Quiet quiet;
      const RunSummary summary = Tuner(*backend, dev).run(req, quiet);
      const auto& best = summary.results.at(0).best;
      if (!best) throw RunError("no config passed on " + problem.key());

      const cpu::PagedAttentionShape sh{s.batch,    s.q_heads,   s.kv_heads,
                                        s.head_dim, s.page_size, (s.context + s.page_size - 1) / s.page_size};
      const cpu::PagedAttentionWorkload w = cpu::make_paged_attention_workload(sh, s.context, 1);
      cpu::AlignedBuffer<float> out(w.q.size());
      const auto op = w.operands(out.data());
      const double kv_bytes = 8.0 * w.tokens() * s.kv_heads * s.head_dim;
      const double bytes = kv_bytes + 8.0 * s.batch * s.q_heads * s.head_dim;

      // The ceiling: the same K/V byte count read contiguously (half from each cache), all threads.
      const std::size_t half = static_cast<std::size_t>(kv_bytes / 8);
      auto ceiling = [&](int threads) {
        return [&, threads] {
          std::atomic<float> sink{0};
          pool.run(threads, [&](int t) {
            const std::size_t b = half * t / threads / 8 * 8,
                              e = t + 1 == threads ? half : half * (t + 1) / threads / 8 * 8;
            const float x = read_sum(w.k.data() + b, e - b) + read_sum(w.v.data() + b, e - b);
            sink.store(sink.load() + x);
          });
          return sink.load();
        };
      };
      auto kernel = [&](const Config& c) {
        const auto plan = cpu::plan_paged_attention(c, hw, sh, w.lengths);
        auto ws = std::make_shared<cpu::PagedAttentionWorkspace>();
        return [&, plan, ws] {
          cpu::StopFlag none{Clock::time_point{}};
          cpu::run_paged_attention(plan, op, *ws, pool, none);
        };
      };
      const int launches = quick ? 11 : 31;
      const std::string p = "paged_attention_" + s.name + "_";
      const Config tuned = best->config;
      std::printf("%sshape=%s\n", p.c_str(), problem.key().c_str());
      std::printf("%stokens=%ld\n", p.c_str(), w.tokens());
      std::printf("%sbytes_mib=%.1f\n", p.c_str(), bytes / (1 << 20));
      std::printf("%stuned_config=%s\n", p.c_str(), tuned.key().c_str());
      std::printf("%sdefault_config=%s\n", p.c_str(), family.default_config.key().c_str());
      for (const bool cold : {true, false}) {
        const char* mode = cold ? "cold" : "warm";
        const Timing c = time_runs(ceiling(hw), hw, pool, evict, cold, launches);
        // The same read with the tuned config's thread count: on a shared machine one thread
        // often wins the search, and its ceiling is one core's read rate.
        const int tuned_threads = static_cast<int>(tuned.get("threads"));
        const Timing c1 =
            tuned_threads == hw ? c : time_runs(ceiling(tuned_threads), tuned_threads, pool, evict, cold, launches);
        const Timing t = time_runs(kernel(tuned), tuned_threads, pool, evict, cold, launches);
        const Timing d = time_runs(kernel(family.default_config),
                                   static_cast<int>(family.default_config.get("threads")), pool, evict, cold, launches);
        auto line = [&](const char* name, double value) {
          std::printf("%s%s_%s=%.3f\n", p.c_str(), name, mode, value);
        };
        line("ceiling_gbps", kv_bytes / c.wall_ns);
        line("tuned_us", t.wall_ns / 1e3);
        line("tuned_gbps", bytes / t.wall_ns);
        line("default_us", d.wall_ns / 1e3);
        line("fraction_of_ceiling", c.wall_ns / t.wall_ns);
        line("default_fraction_of_ceiling", c.wall_ns / d.wall_ns);
        line("tuned_vs_default", d.wall_ns / t.wall_ns);
        line("ceiling_gbps_tuned_threads", kv_bytes / c1.wall_ns);
        line("fraction_of_ceiling_tuned_threads", c1.wall_ns / t.wall_ns);
        // Both in CPU time, at the tuned thread count: what other processes' load cannot skew.
        line("fraction_of_ceiling_tuned_threads_cputime", c1.cpu_ns / t.cpu_ns);
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_paged_attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
