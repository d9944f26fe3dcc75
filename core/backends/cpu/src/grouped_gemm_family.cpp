// grouped_gemm on the CPU: the MoE grouped GEMM as Unsloth tunes it, one space per pass (fwd,
// dX, dW), and the session that runs one problem: a seeded, skewed routing, random f32 operands,
// an f64 reference, rotated copies. The kernel is grouped_gemm.h.
#include <algorithm>
#include <cstring>

#include "cpu_session.h"
#include "grouped_gemm.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "ktune/workload_rules.h"
#include "reference.h"

namespace ktune::cpu {
namespace {

KernelFamily grouped_gemm_family() {
  KernelFamily f;
  f.name = "grouped_gemm";
  f.backend = "cpu";
  f.description =
      "MoE grouped GEMM, f32, as Unsloth's: tokens routed to topk experts (seeded, skewed loads, empty experts; one "
      "routing per experts/tokens/topk and workload seed, shared by the passes and by kernel specs); "
      "pass=fwd y = x w_e^T, dX dx = dy w_e, dW dw_e = dy_e^T x_e, each tuned on its own. permute_x / permute_y "
      "fuse the x-side / y-side permutation into the packing or the stores instead of a separate pass. Unsloth's "
      "TMA flags (use_tma_load_x/w/dy, use_tma_store) are GPU-only and have no CPU meaning, so this space has none";
  f.key_fields = {{"experts", true, "", {}, "experts (groups)"},
                  {"tokens", true, "", {}, "tokens routed (rows of x)"},
                  {"topk", true, "", {}, "experts per token (distinct; at most experts)"},
                  {"hidden", true, "", {}, "hidden size (columns of x, depth of fwd)"},
                  {"intermediate", true, "", {}, "intermediate size (rows of each expert's w)"},
                  {"dtype", false, "f32", {"f32"}, "element type"},
                  {"pass",
                   false,
                   "fwd",
                   {"fwd", "dX", "dW"},
                   "fwd: y = x w^T; dX: dx = dy w; dW: dw = dy^T x (per expert, over its routed rows)"}};
  f.bucket_field = "tokens";
  f.workload_rules_since = kMoeRoutingRules;
  f.tp_splits = {{TpSplitDim::Out, {{"intermediate"}}}, {TpSplitDim::In, {{"hidden"}}}};
  f.flops_expr = "2*tokens*topk*hidden*intermediate";
  // Each tensor read or written once: x, w and y for fwd; dy, w and dx for dX; x, dy and dw for dW.
  f.bytes_expr =
      "4*(pass == \"fwd\" ? tokens*hidden + experts*intermediate*hidden + tokens*topk*intermediate"
      " : (pass == \"dX\" ? tokens*topk*(intermediate + hidden) + experts*intermediate*hidden"
      " : tokens*hidden + tokens*topk*intermediate + experts*intermediate*hidden))";
  std::vector<Parameter> params = blocking_params();
  params.push_back({"NB",
                    {128, 512},
                    "columns of one expert's output per work item; threads take items largest first (smaller: "
                    "uneven experts balance better; larger: A is packed again less often)"});
  params.push_back({"permute_x",
                    {true, false},
                    "fuse the x side: gather x rows into expert order in the packing (fwd, dW) / scatter dx rows "
                    "to token order in the stores (dX); false: a separate pass"});
  params.push_back({"permute_y",
                    {true, false},
                    "fuse the y side: scatter y rows to token order in the stores (fwd) / gather dy rows in the "
                    "packing (dX, dW); false: a separate pass"});
  params.push_back(threads_param());
  std::vector<Constraint> cons = blocking_constraints();
  // Each pass multiplies other dimensions (fwd: rows x intermediate x hidden; dX: rows x hidden x
  // intermediate; dW: intermediate x hidden x rows, rows being one expert's, at most tokens), so
  // the blocks that change nothing differ per pass.
  cons.insert(
      cons.end(),
      {
          {"!(permute_x && permute_y)",
           "Unsloth's rule in every pass: fuse the x-side or the y-side permutation, never both"},
          {"MC == 64 || (pass == \"dW\" ? intermediate : tokens) > 64",
           "MC beyond the pass's rows (fwd, dX: an expert's rows, at most tokens; dW: intermediate): the same as the "
           "smallest MC"},
          {"KC == 128 || (pass == \"fwd\" ? hidden : (pass == \"dX\" ? intermediate : tokens)) > 128",
           "KC beyond the pass's depth (fwd: hidden; dX: intermediate; dW: an expert's rows, at most tokens): the same "
           "as the smallest KC"},
          {"NC == 1024 || (pass == \"fwd\" ? intermediate : hidden) > 1024",
           "NC beyond the pass's columns (fwd: intermediate; dX, dW: hidden): the same as the smallest NC"},
          {"NB == 128 || (pass == \"fwd\" ? intermediate : hidden) > 128",
           "NB beyond the pass's columns (fwd: intermediate; dX, dW: hidden): the same as the smallest NB"},
      });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  // AVX2, the smallest blocks (kept by every pass's constraints) and Unsloth's usual choice for
  // the gate/up projection: the gather of x fused.
  f.default_config = Config({{"MR", 6},
                             {"NR", 16},
                             {"vec", 8},
                             {"MC", 64},
                             {"KC", 128},
                             {"NC", 1024},
                             {"NB", 128},
                             {"permute_x", true},
                             {"permute_y", false},
                             {"threads", 1}});
  f.source = "built-in";
  return f;
}

class GroupedGemmSession final : public CpuSession {
 public:
  GroupedGemmSession(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed)
      : CpuSession(std::move(state)) {
    const long E = positive_field(problem, "experts"), T = positive_field(problem, "tokens");
    const long k = positive_field(problem, "topk");
    shape_.hidden = positive_field(problem, "hidden");
    shape_.intermediate = positive_field(problem, "intermediate");
    require_text(problem, "dtype", "f32");
    shape_.pass = moe_pass_from_string(problem.field("pass"));
    routing_ = grouped_gemm_routing(problem, seed);  // topk > experts: InputError
    const double H = shape_.hidden, I = shape_.intermediate, R = double(T) * k;
    const double out = shape_.pass == MoePass::Fwd ? R * I : shape_.pass == MoePass::DX ? R * H : E * I * H;
    // Inputs (at most x, w and dy), output, the f64 reference and the three scratch buffers.
    check_memory(4.0 * (T * H + E * I * H + R * I) + 12.0 * out + 12.0 * R * std::max(H, I),
                 "grouped_gemm " + problem.key());
    // Uniform in [-1, 1] from the counter-based generator (std:: distributions differ between
    // standard libraries): a seed is the same workload on every host.
    auto fill = [&](AlignedBuffer<float>& b, double n, std::uint64_t stream) {
      b.resize(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(-1.0 + 2.0 * unit_draw(seed ^ stream, i));
    };
    if (shape_.pass != MoePass::DX) fill(x_, T * H, 1);
    if (shape_.pass != MoePass::DW) fill(w_, E * I * H, 2);
    if (shape_.pass != MoePass::Fwd) fill(dy_, R * I, 3);
    out_.resize(static_cast<std::size_t>(out));
    scratch_.reserve(routing_, shape_);
    ref_ = grouped_gemm_reference(shape_.pass, routing_, x_.data(), w_.data(), dy_.data(), shape_.hidden,
                                  shape_.intermediate, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning (and listing the work items) is the CPU's "compile"; the tuner times it.
    GroupedPlan plan = plan_grouped_gemm(config, state_->hw_threads, state_->workspace_limit);
    std::vector<WorkItem> work = plan_work(plan, routing_, shape_);
    return std::make_unique<Kernel>(this, plan, std::move(work));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, GroupedPlan p, std::vector<WorkItem> w) : CpuKernel(owner), plan(p), work(std::move(w)) {}
    GroupedPlan plan;
    std::vector<WorkItem> work;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    GroupedOperands op{x_.data(), w_.data(), dy_.data(), out_.data()};
    if (slot > 0) {
      const unsigned char* p = rotation_copy(slot);
      for (auto [buf, ptr] : inputs(op)) {
        *ptr = reinterpret_cast<const float*>(p);
        p += align64(buf->size() * sizeof(float));
      }
    }
    const Kernel& kernel = static_cast<const Kernel&>(k);
    return run_grouped_gemm(kernel.plan, kernel.work, routing_, shape_, op, scratch_, workspace_, state_->pool, stop);
  }
  float* output() override { return out_.data(); }
  std::size_t output_size() const override { return out_.size(); }
  const std::vector<double>& reference() const override { return ref_; }
  std::string where(std::size_t i) const override {
    const std::size_t width = shape_.pass == MoePass::DX ? shape_.hidden : shape_.intermediate;
    if (shape_.pass == MoePass::DW) {
      const std::size_t H = shape_.hidden, I = shape_.intermediate;
      return "dw[expert " + std::to_string(i / (I * H)) + ", " + std::to_string(i / H % I) + ", " +
             std::to_string(i % H) + "]";
    }
    const std::size_t r = i / width;
    return std::string(shape_.pass == MoePass::Fwd ? "y" : "dx") + "[row " + std::to_string(r) + " (token " +
           std::to_string(r / routing_.topk) + ", expert " + std::to_string(routing_.expert[r]) + "), " +
           std::to_string(i % width) + "]";
  }
  std::size_t input_bytes() const override {
    std::size_t n = 0;
    for (const auto* b : {&x_, &w_, &dy_}) n += align64(b->size() * sizeof(float));
    return n;
  }
  void copy_inputs(unsigned char* dst) const override {
    for (const auto* b : {&x_, &w_, &dy_}) {
      if (b->size()) std::memcpy(dst, b->data(), b->size() * sizeof(float));
      dst += align64(b->size() * sizeof(float));
    }
  }

 private:
  // The input buffers in copy_inputs' order, each with the operand pointer it feeds.
  std::vector<std::pair<const AlignedBuffer<float>*, const float**>> inputs(GroupedOperands& op) const {
    return {{&x_, &op.x}, {&w_, &op.w}, {&dy_, &op.dy}};
  }

  GroupedShape shape_{};
  Routing routing_;
  AlignedBuffer<float> x_, w_, dy_, out_;  // inputs the pass does not read stay empty
  std::vector<double> ref_;
  GroupedScratch scratch_;
  std::vector<AlignedBuffer<float>> workspace_;
};

}  // namespace

Routing grouped_gemm_routing(const Problem& problem, std::uint64_t workload_seed) {
  const long E = positive_field(problem, "experts"), T = positive_field(problem, "tokens");
  const long k = positive_field(problem, "topk");
  return generate_moe_routing(E, T, k, moe_routing_seed(workload_seed, E, T, k));
}

CpuFamily grouped_gemm_cpu_family() { return make_cpu_family<GroupedGemmSession>(grouped_gemm_family); }

}  // namespace ktune::cpu
