#include "paged_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "ktune/host_data.h"
#include "ktune/measurement.h"

namespace ktune::cpu {

namespace {

[[noreturn]] void fail(TrialStatus status, const std::string& msg) { throw TrialFailure(status, msg); }

// Per-thread scratch, in floats: scores [q_per_block, block tokens], the group's running output
// [group, head_dim], max and sum [group], the block's alpha [q_per_block], then page pointers.
struct Scratch {
  float *s, *o, *m, *l, *alpha;
  const float** kp;
  const float** vp;
};

std::size_t scratch_floats(const PagedAttentionPlan& p, const PagedAttentionShape& sh) {
  const long block = p.pages_per_block * sh.page_size;
  const std::size_t pointers = 2 * p.pages_per_block * sizeof(const float*) / sizeof(float) + 2;
  return p.q_per_block * block + sh.group() * (sh.head_dim + 2) + p.q_per_block + pointers + 16;
}

Scratch carve(float* base, const PagedAttentionPlan& p, const PagedAttentionShape& sh) {
  Scratch s;
  const long block = p.pages_per_block * sh.page_size;
  s.s = base;
  s.o = s.s + p.q_per_block * block;
  s.m = s.o + sh.group() * sh.head_dim;
  s.l = s.m + sh.group();
  s.alpha = s.l + sh.group();
  // Pointers after the floats, aligned to their size.
  auto addr = reinterpret_cast<std::uintptr_t>(s.alpha + p.q_per_block);
  addr = (addr + alignof(const float*) - 1) / alignof(const float*) * alignof(const float*);
  s.kp = reinterpret_cast<const float**>(addr);
  s.vp = s.kp + p.pages_per_block;
  return s;
}

// Online softmax over one block of n scores of QB heads: turns s into exp(s - new max) and
// returns each head's alpha (how much the output so far shrinks) in a[].
void softmax_block(float* s, long lds, int n, int qb, float* m, float* l, float* a) {
  for (int h = 0; h < qb; ++h) {
    float* row = s + h * lds;
    float mx = m[h];
    for (int t = 0; t < n; ++t) mx = std::max(mx, row[t]);
    // The first block: m = -inf, alpha = exp(-inf) = 0 and the (zeroed) output stays 0.
    a[h] = std::exp(m[h] - mx);
    float sum = 0;
    for (int t = 0; t < n; ++t) {
      row[t] = std::exp(row[t] - mx);
      sum += row[t];
    }
    l[h] = l[h] * a[h] + sum;
    m[h] = mx;
  }
}

void run_task(const PagedAttentionPlan& p, const PagedAttentionOperands& op, const PagedAttentionPlan::Task& task,
              const Scratch& sc, float* partial) {
  const PagedAttentionShape& sh = op.shape;
  const int d = static_cast<int>(sh.head_dim), ps = static_cast<int>(sh.page_size), G = static_cast<int>(sh.group());
  const int QB = p.q_per_block, PB = p.pages_per_block;
  const long block = static_cast<long>(PB) * ps;
  const long page_stride = sh.kv_heads * ps * d, head_off = static_cast<long>(task.head) * ps * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const float* q = op.q + (static_cast<long>(task.seq) * sh.q_heads + static_cast<long>(task.head) * G) * d;
  const std::int32_t* table = op.page_table + task.seq * sh.max_pages;
  std::fill(sc.o, sc.o + static_cast<long>(G) * d, 0.0f);
  std::fill(sc.m, sc.m + G, -std::numeric_limits<float>::infinity());
  std::fill(sc.l, sc.l + G, 0.0f);
  for (long t = task.t0; t < task.t1; t += block) {
    const int n = static_cast<int>(std::min(block, task.t1 - t));
    const int pages = (n + ps - 1) / ps;
    for (int i = 0; i < pages; ++i) {
      const long phys = table[t / ps + i];
      sc.kp[i] = op.k + phys * page_stride + head_off;
      sc.vp[i] = op.v + phys * page_stride + head_off;
    }
    // The next block's pages are scattered over the pool, where the hardware prefetcher cannot
    // follow: ask for them (into L2) while this block computes.
    if (p.prefetch && t + block < task.t1) {
      const long next = std::min(block, task.t1 - t - block);
      for (long i = 0; i < (next + ps - 1) / ps; ++i) {
        const long phys = table[(t + block) / ps + i];
        const long rows = std::min<long>(ps, next - i * ps);
        const char* kpage = reinterpret_cast<const char*>(op.k + phys * page_stride + head_off);
        const char* vpage = reinterpret_cast<const char*>(op.v + phys * page_stride + head_off);
        for (long b = 0; b < rows * d * 4; b += 64) {
          __builtin_prefetch(kpage + b, 0, 2);
          __builtin_prefetch(vpage + b, 0, 2);
        }
      }
    }
    for (int h0 = 0; h0 < G; h0 += QB) {
      p.set->attn_score[QB](n, sc.kp, ps, d, q + static_cast<long>(h0) * d, scale, sc.s, block);
      softmax_block(sc.s, block, n, QB, sc.m + h0, sc.l + h0, sc.alpha);
      p.set->attn_accum[QB](n, sc.vp, ps, d, sc.s, block, sc.alpha, sc.o + static_cast<long>(h0) * d);
    }
  }
  if (task.slot < 0) {
    float* out = op.out + (static_cast<long>(task.seq) * sh.q_heads + static_cast<long>(task.head) * G) * d;
    for (int h = 0; h < G; ++h) {
      const float inv = 1.0f / sc.l[h];
      for (int j = 0; j < d; ++j) out[h * d + j] = sc.o[h * d + j] * inv;
    }
    return;
  }
  // Unnormalized output with its max and sum, for the log-sum-exp combination.
  float* dst = partial + static_cast<long>(task.slot) * G * (d + 2);
  std::memcpy(dst, sc.o, sizeof(float) * G * d);
  std::memcpy(dst + static_cast<long>(G) * d, sc.m, sizeof(float) * G);
  std::memcpy(dst + static_cast<long>(G) * (d + 1), sc.l, sizeof(float) * G);
}

// out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s over a split sequence's partials, which
// plan_paged_attention numbered (seq, split, head) consecutively.
void combine(const PagedAttentionOperands& op, const float* partial, long seq, long first_slot, int splits, long head) {
  const PagedAttentionShape& sh = op.shape;
  const long d = sh.head_dim, G = sh.group(), slot_floats = G * (d + 2);
  for (long g = 0; g < G; ++g) {
    float M = -std::numeric_limits<float>::infinity();
    for (int s = 0; s < splits; ++s) {
      const float* part = partial + (first_slot + s * sh.kv_heads + head) * slot_floats;
      M = std::max(M, part[G * d + g]);
    }
    float* out = op.out + (seq * sh.q_heads + head * G + g) * d;
    float L = 0;
    for (int s = 0; s < splits; ++s) {
      const float* part = partial + (first_slot + s * sh.kv_heads + head) * slot_floats;
      const float w = std::exp(part[G * d + g] - M);
      L += w * part[G * (d + 1) + g];
      for (long j = 0; j < d; ++j) out[j] = (s == 0 ? 0.0f : out[j]) + w * part[g * d + j];
    }
    const float inv = 1.0f / L;
    for (long j = 0; j < d; ++j) out[j] *= inv;
  }
}

}  // namespace

long PagedAttentionWorkload::tokens() const { return std::accumulate(lengths.begin(), lengths.end(), 0L); }

PagedAttentionWorkload make_paged_attention_workload(const PagedAttentionShape& sh, long context, std::uint64_t seed) {
  PagedAttentionWorkload w;
  w.shape = sh;
  // The generators of kernel specs' lengths and page tables and ktune's counter-based draws: a
  // seed is the same workload under every standard library, which std:: distributions are not.
  const std::vector<unsigned char> lengths = generate_lengths(ElemType::I32, sh.batch, 1, context, seed ^ 1);
  w.lengths.resize(sh.batch);
  std::memcpy(w.lengths.data(), lengths.data(), lengths.size());
  PageTable table = generate_page_table(std::vector<std::int64_t>(w.lengths.begin(), w.lengths.end()), sh.max_pages,
                                        sh.page_size, true, seed ^ 2);
  w.table = std::move(table.table);
  w.pages = static_cast<long>(table.pages);
  const long kv = w.pages * sh.kv_heads * sh.page_size * sh.head_dim;
  w.k.resize(kv);
  w.v.resize(kv);
  w.q.resize(sh.batch * sh.q_heads * sh.head_dim);
  const auto uniform = [&](AlignedBuffer<float>& x, std::uint64_t stream, double scale) {
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(scale * (-1.0 + 2.0 * unit_draw(seed ^ stream, i)));
  };
  uniform(w.k, 3, 1.0);
  uniform(w.v, 4, 1.0);
  uniform(w.q, 5, 7.5);
  return w;
}

PagedAttentionPlan plan_paged_attention(const Config& config, int hw_threads, const PagedAttentionShape& sh,
                                        const std::vector<std::int32_t>& lengths) {
  const auto v = read_params(config, {"pages_per_block", "q_per_block", "splits", "prefetch", "vec", "threads"},
                             "paged_attention");
  for (const auto& [name, value] : v)
    if ((value < 1 && name != "prefetch") || value < 0 || value > (1 << 20))
      fail(TrialStatus::CompileError,
           "paged_attention parameter " + name + "=" + std::to_string(value) + " is out of range");
  PagedAttentionPlan p;
  p.pages_per_block = static_cast<int>(v.at("pages_per_block"));
  p.q_per_block = static_cast<int>(v.at("q_per_block"));
  p.splits = static_cast<int>(v.at("splits"));
  p.prefetch = v.at("prefetch") != 0;
  p.vec = static_cast<int>(v.at("vec"));
  p.threads = static_cast<int>(v.at("threads"));
  p.set = &require_ukernels(p.vec);
  if (p.q_per_block > kMaxQB || !p.set->attn_score[p.q_per_block])
    fail(TrialStatus::CompileError,
         "no attention micro-kernel for q_per_block=" + std::to_string(p.q_per_block) + " (1, 2, 4 or 8)");
  if (sh.group() % p.q_per_block != 0)
    fail(TrialStatus::CompileError,
         "q_per_block=" + std::to_string(p.q_per_block) +
             " must divide the GQA group (q_heads / kv_heads = " + std::to_string(sh.group()) + ")");
  require_threads(p.threads, hw_threads);

  // Splits cut the longest sequence into `splits` equal page ranges; shorter ones get fewer.
  p.chunk_pages = std::max<long>(1, (sh.max_pages + p.splits - 1) / p.splits);
  const long chunk_tokens = p.chunk_pages * sh.page_size;
  for (long b = 0; b < sh.batch; ++b) {
    const long len = lengths[b];
    const long n = (len + chunk_tokens - 1) / chunk_tokens;
    if (n > 1) p.split_seqs.push_back(static_cast<std::int32_t>(b));
    for (long s = 0; s < n; ++s)
      for (long h = 0; h < sh.kv_heads; ++h)
        p.tasks.push_back({static_cast<std::int32_t>(b), static_cast<std::int32_t>(h),
                           static_cast<std::int32_t>(s * chunk_tokens),
                           static_cast<std::int32_t>(std::min(len, (s + 1) * chunk_tokens)),
                           n > 1 ? static_cast<std::int32_t>(p.partials++) : -1});
  }
  std::stable_sort(p.tasks.begin(), p.tasks.end(),
                   [](const auto& a, const auto& b) { return a.t1 - a.t0 > b.t1 - b.t0; });
  return p;
}

bool run_paged_attention(const PagedAttentionPlan& p, const PagedAttentionOperands& op, PagedAttentionWorkspace& ws,
                         ThreadPool& pool, StopFlag& stop) {
  const PagedAttentionShape& sh = op.shape;
  const long slot_floats = sh.group() * (sh.head_dim + 2);
  if (ws.partial.size() < static_cast<std::size_t>(p.partials * slot_floats))
    ws.partial.resize(p.partials * slot_floats);
  if (ws.per_thread.size() < static_cast<std::size_t>(p.threads)) ws.per_thread.resize(p.threads);
  const std::size_t need = scratch_floats(p, sh);
  for (int t = 0; t < p.threads; ++t)
    if (ws.per_thread[t].size() < need) ws.per_thread[t].resize(need);

  std::atomic<long> next{0};
  const long ntasks = static_cast<long>(p.tasks.size());
  pool.run(p.threads, [&](int t) {
    const Scratch sc = carve(ws.per_thread[t].data(), p, sh);
    for (long i = next.fetch_add(1, std::memory_order_relaxed); i < ntasks;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      run_task(p, op, p.tasks[i], sc, ws.partial.data());
      if (stop.check()) return;
    }
  });
  if (stop.stopped() || p.split_seqs.empty()) return !stop.stopped();

  // Slots were numbered sequence by sequence, split by split, kv head by kv head.
  std::vector<long> first(p.split_seqs.size());
  const long chunk_tokens = p.chunk_pages * sh.page_size;
  auto splits_of = [&](long b) { return static_cast<int>((op.lengths[b] + chunk_tokens - 1) / chunk_tokens); };
  for (std::size_t i = 1; i < first.size(); ++i) first[i] = first[i - 1] + splits_of(p.split_seqs[i - 1]) * sh.kv_heads;
  const long rows = static_cast<long>(p.split_seqs.size()) * sh.kv_heads;
  pool.run(p.threads, [&](int t) {
    for (long r = t * rows / p.threads; r < (t + 1) * rows / p.threads; ++r) {
      const std::size_t i = static_cast<std::size_t>(r / sh.kv_heads);
      combine(op, ws.partial.data(), p.split_seqs[i], first[i], splits_of(p.split_seqs[i]), r % sh.kv_heads);
    }
  });
  return true;
}

}  // namespace ktune::cpu
