// paged_attention on the CPU: the family (decode attention over a paged KV cache, tpu-tune's
// `rpa` key names) and the session that runs one problem: seeded ragged sequence lengths, a
// shuffled page table over a shared pool of pages, an f64 reference, rotated copies.
#include <algorithm>
#include <cstring>

#include "cpu_session.h"
#include "ktune/error.h"
#include "paged_attention.h"
#include "reference.h"

namespace ktune::cpu {
namespace {

// Expected tokens of the seeded workload: one sequence at max_model_len, the others uniform in
// [1, max_model_len] (mean (max_model_len + 1) / 2). The actual lengths are the seed's; a key's
// expression cannot see them, so FLOP and byte counts use their expectation.
constexpr const char* kTokens = "(max_model_len + (num_sequences - 1) * (max_model_len + 1) / 2)";

KernelFamily paged_attention_family() {
  KernelFamily f;
  f.name = "paged_attention";
  f.backend = "cpu";
  f.description =
      "decode attention over a paged KV cache (as tpu-tune's rpa): one query token per sequence, ragged lengths, "
      "pages gathered through a page table; f32 on the cpu; K/V pages [num_pages, kv_heads, page_size, head_dim], "
      "q and out [num_sequences, q_heads, head_dim]; flash-decoding with split-KV";
  f.key_fields = {
      {"num_sequences", true, "", {}, "sequences decoded together, one query token each (the batch)"},
      {"num_q_heads", true, "", {}, "query heads (local: --tp-size divides them)"},
      {"num_kv_heads", true, "", {}, "KV heads (GQA: must divide num_q_heads; --tp-size divides or replicates them)"},
      {"head_dim", true, "", {}, "elements per head"},
      {"page_size", true, "", {}, "tokens per KV cache page"},
      {"max_model_len", true, "", {}, "longest context (the workload's longest sequence has it)"},
      {"dtype", false, "f32", {"f32"}, "q, K/V and output type (the cpu backend runs f32)"}};
  f.bucket_field = "num_sequences";
  f.tp_splits = {{TpSplitDim::Heads, {{"num_q_heads"}, {"num_kv_heads", true}}}};
  f.shape_rules = {{"mod(num_q_heads, num_kv_heads) == 0",
                    "num_q_heads must be a multiple of num_kv_heads (GQA: every kv head serves as many q heads)"}};
  const std::string tokens = kTokens;
  f.flops_expr = "4*num_q_heads*head_dim*" + tokens;
  f.bytes_expr = "8*num_kv_heads*head_dim*" + tokens + " + 8*num_sequences*num_q_heads*head_dim";
  std::vector<Parameter> params = {
      {"pages_per_block", {1, 2, 4, 8, 16, 32}, "KV pages a thread scores and accumulates per step (L2 blocking)"},
      {"q_per_block", {1, 2, 4, 8}, "q heads of one GQA group served together: each K/V row is loaded once for all"},
      {"splits",
       {1, 2, 4, 8, 16},
       "split-KV partitions of the longest sequence (flash decoding), combined by log-sum-exp"},
      {"prefetch",
       {0, 1},
       "1: software-prefetch the next block's pages (scattered: the hardware prefetcher cannot follow)"},
      {"vec", {4, 8, 16}, "f32 lanes per vector: 16 AVX-512, 8 AVX2/FMA, 4 portable"},
  };
  params.push_back(threads_param());
  std::vector<Constraint> cons = cpu_constraints();
  cons.insert(
      cons.end(),
      {
          {"mod(num_q_heads / num_kv_heads, q_per_block) == 0",
           "q_per_block must divide the GQA group (q heads per kv head)"},
          {"16 * pages_per_block * page_size * head_dim <= l2_bytes", "a block's K and V tiles must fit in half of L2"},
          {"pages_per_block == 1 || pages_per_block / 2 * page_size < max_model_len",
           "a block beyond the context: the same as a smaller one"},
          {"splits == 1 || splits * pages_per_block * page_size <= max_model_len",
           "more splits than blocks of the longest sequence: empty partitions"},
          {"threads <= num_sequences * num_kv_heads * splits", "more threads than (sequence, kv head, split) tasks"},
      });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  // Valid for every GQA group (q_per_block 1) and every context beyond two 16-token pages.
  f.default_config =
      Config({{"pages_per_block", 4}, {"q_per_block", 1}, {"splits", 1}, {"prefetch", 1}, {"vec", 8}, {"threads", 1}});
  f.source = "built-in";
  return f;
}

class PagedAttentionSession final : public CpuSession {
 public:
  PagedAttentionSession(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed)
      : CpuSession(std::move(state)) {
    PagedAttentionShape& sh = shape_;
    sh.batch = positive_field(problem, "num_sequences");
    sh.q_heads = positive_field(problem, "num_q_heads");
    sh.kv_heads = positive_field(problem, "num_kv_heads");
    sh.head_dim = positive_field(problem, "head_dim");
    sh.page_size = positive_field(problem, "page_size");
    const long context = positive_field(problem, "max_model_len");
    require_text(problem, "dtype", "f32");
    if (sh.q_heads % sh.kv_heads != 0)
      throw InputError("paged_attention num_q_heads=" + std::to_string(sh.q_heads) +
                       " is not a multiple of num_kv_heads=" + std::to_string(sh.kv_heads) +
                       " (GQA: every kv head serves the same number of q heads)");
    sh.max_pages = (context + sh.page_size - 1) / sh.page_size;
    // Bounded before allocating: the worst case is every sequence at full context.
    const double kv_row = 8.0 * sh.kv_heads * sh.head_dim;
    check_memory(kv_row * static_cast<double>(sh.batch) * static_cast<double>(sh.max_pages * sh.page_size) +
                     16.0 * sh.batch * sh.q_heads * sh.head_dim,
                 "paged_attention " + problem.key());
    if (static_cast<double>(sh.batch) * static_cast<double>(sh.max_pages) > 2e9)
      throw InputError("paged_attention " + problem.key() + " has more than 2^31 pages; choose a smaller shape");

    w_ = make_paged_attention_workload(sh, context, seed);
    out_.resize(w_.q.size());
    ref_ = paged_attention_reference(w_.operands(out_.data()), state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning (the task list over this problem's lengths) is the CPU's "compile"; the tuner times it.
    return std::make_unique<Kernel>(this, plan_paged_attention(config, state_->hw_threads, shape_, w_.lengths));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, PagedAttentionPlan p) : CpuKernel(owner), plan(std::move(p)) {}
    PagedAttentionPlan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    PagedAttentionOperands op = w_.operands(out_.data());
    if (slot > 0) {
      const unsigned char* base = rotation_copy(slot);
      op.q = reinterpret_cast<const float*>(base);
      op.k = reinterpret_cast<const float*>(base + align64(bytes(w_.q)));
      op.v = reinterpret_cast<const float*>(base + align64(bytes(w_.q)) + align64(bytes(w_.k)));
    }
    return run_paged_attention(static_cast<const Kernel&>(k).plan, op, ws_, state_->pool, stop);
  }
  float* output() override { return out_.data(); }
  std::size_t output_size() const override { return out_.size(); }
  const std::vector<double>& reference() const override { return ref_; }
  std::string where(std::size_t i) const override {
    const std::size_t d = shape_.head_dim, h = shape_.q_heads;
    const std::size_t b = i / (h * d);
    return "out[sequence " + std::to_string(b) + " (length " + std::to_string(w_.lengths[b]) + "), q head " +
           std::to_string(i / d % h) + ", " + std::to_string(i % d) + "]";
  }
  std::size_t input_bytes() const override { return align64(bytes(w_.q)) + align64(bytes(w_.k)) + bytes(w_.v); }
  void copy_inputs(unsigned char* dst) const override {
    std::memcpy(dst, w_.q.data(), bytes(w_.q));
    std::memcpy(dst + align64(bytes(w_.q)), w_.k.data(), bytes(w_.k));
    std::memcpy(dst + align64(bytes(w_.q)) + align64(bytes(w_.k)), w_.v.data(), bytes(w_.v));
  }

 private:
  static std::size_t bytes(const AlignedBuffer<float>& b) { return b.size() * sizeof(float); }

  PagedAttentionShape shape_;
  PagedAttentionWorkload w_;
  AlignedBuffer<float> out_;
  std::vector<double> ref_;
  PagedAttentionWorkspace ws_;
};

}  // namespace

CpuFamily paged_attention_cpu_family() { return make_cpu_family<PagedAttentionSession>(paged_attention_family); }

}  // namespace ktune::cpu
