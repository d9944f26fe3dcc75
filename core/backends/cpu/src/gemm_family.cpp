// gemm on the CPU: the family (a BLIS-style space over register, cache and thread blocking) and
// the session that runs one problem: random f32 operands, an f64 reference, rotated copies.
#include <cstring>

#include "cpu_session.h"
#include "gemm.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "reference.h"

namespace ktune::cpu {

std::vector<Parameter> blocking_params() {
  return {
      {"MR", {4, 6, 8, 14}, "micro-tile rows (register blocking)"},
      {"NR", {8, 16, 32}, "micro-tile columns (register blocking, whole vectors)"},
      {"vec", {4, 8, 16}, "f32 lanes per vector: 16 AVX-512, 8 AVX2/FMA, 4 portable"},
      {"MC", {64, 256}, "rows of the packed A block (L2 blocking)"},
      {"KC", {128, 384}, "depth of the packed blocks (L1 blocking of the micro-panels)"},
      {"NC", {1024, 4096}, "columns of the packed B panel (L3 blocking)"},
  };
}

std::vector<Constraint> blocking_constraints() {
  std::vector<Constraint> cons = cpu_constraints();
  cons.insert(cons.end(),
              {
                  {"ceil_div(NR, vec) * vec == NR && NR / vec <= 4", "NR must be 1 to 4 whole vectors"},
                  {"MR * (NR / vec) + NR / vec + 1 <= (vec < simd_width_f32 ? 16 : simd_registers)",
                   "accumulators, B vectors and the A broadcast exceed the vector registers (spills)"},
                  {"KC * NR * 4 <= l1d_bytes", "a packed KC x NR micro-panel of B must stay in L1d"},
                  {"MC * KC * 4 <= l2_bytes / 2", "the packed MC x KC block of A must fit in half of L2"},
                  {"KC * NC * 4 * threads <= l3_bytes", "every thread's packed KC x NC panel of B must fit in L3"},
              });
  return cons;
}

namespace {

KernelFamily gemm_family() {
  KernelFamily f;
  f.name = "gemm";
  f.backend = "cpu";
  f.description = "C = alpha*A*B + beta*C, f32, row-major (BLIS-style blocked, packed panels, register micro-tile)";
  f.key_fields = {{"M", true, "", {}, "rows of A and C"},
                  {"N", true, "", {}, "columns of B and C"},
                  {"K", true, "", {}, "columns of A, rows of B"},
                  {"dtype", false, "f32", {"f32"}, "element type"}};
  f.bucket_field = "M";
  f.tp_splits = {{TpSplitDim::Out, {{"N"}}}, {TpSplitDim::In, {{"K"}}}};
  f.flops_expr = "2*M*N*K";
  f.bytes_expr = "4*(M*K+K*N+M*N)";
  std::vector<Parameter> params = blocking_params();
  params.push_back(
      {"loop_order", {0, 1}, "0: B panel resident, loop jc>pc>ic>jr>ir; 1: A block resident, ic>pc>jc>ir>jr"});
  params.push_back(threads_param());
  std::vector<Constraint> cons = blocking_constraints();
  cons.insert(cons.end(), {
                              {"MC == 64 || M > 64", "MC beyond M: the same as the smallest MC"},
                              {"KC == 128 || K > 128", "KC beyond K: the same as the smallest KC"},
                              {"NC == 1024 || N > 1024", "NC beyond N: the same as the smallest NC"},
                          });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  // Runs on any x86-64 with AVX2 (the widest micro-kernel CI and serving hosts all have), and
  // uses the smallest blocks, which the equivalence constraints above keep for every shape.
  f.default_config = Config(
      {{"MR", 6}, {"NR", 16}, {"vec", 8}, {"MC", 64}, {"KC", 128}, {"NC", 1024}, {"loop_order", 0}, {"threads", 1}});
  f.source = "built-in";
  return f;
}

class GemmSession final : public CpuSession {
 public:
  GemmSession(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed) : CpuSession(std::move(state)) {
    M_ = positive_field(problem, "M");
    N_ = positive_field(problem, "N");
    K_ = positive_field(problem, "K");
    require_text(problem, "dtype", "f32");
    check_memory(4.0 * (M_ * K_ + K_ * N_ + M_ * N_) + 8.0 * M_ * N_, "gemm " + problem.key());
    a_.resize(M_ * K_);
    b_.resize(K_ * N_);
    c_.resize(M_ * N_);
    // Uniform in [-1, 1] from the counter-based generator (std:: distributions differ between
    // standard libraries): a seed is the same workload on every host.
    for (std::size_t i = 0; i < a_.size(); ++i) a_[i] = static_cast<float>(-1.0 + 2.0 * unit_draw(seed ^ 1, i));
    for (std::size_t i = 0; i < b_.size(); ++i) b_[i] = static_cast<float>(-1.0 + 2.0 * unit_draw(seed ^ 2, i));
    ref_ = gemm_reference(a_.data(), b_.data(), M_, N_, K_, kAlpha, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning is the CPU's "compile"; the tuner times it.
    return std::make_unique<Kernel>(this, plan_gemm(config, state_->hw_threads, state_->workspace_limit));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, GemmPlan p) : CpuKernel(owner), plan(p) {}
    GemmPlan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    const float* a = a_.data();
    const float* b = b_.data();
    if (slot > 0) {
      a = reinterpret_cast<const float*>(rotation_copy(slot));
      b = reinterpret_cast<const float*>(rotation_copy(slot) + align64(a_.size() * sizeof(float)));
    }
    // beta = 0: the serving case, and an output that does not depend on earlier launches.
    const GemmOperands op{a, b, c_.data(), M_, N_, K_, kAlpha, 0.0f};
    return run_gemm(static_cast<const Kernel&>(k).plan, op, workspace_, state_->pool, stop);
  }
  float* output() override { return c_.data(); }
  std::size_t output_size() const override { return c_.size(); }
  const std::vector<double>& reference() const override { return ref_; }
  std::string where(std::size_t i) const override {
    return "C[" + std::to_string(i / N_) + "," + std::to_string(i % N_) + "]";
  }
  std::size_t input_bytes() const override { return align64(a_.size() * sizeof(float)) + b_.size() * sizeof(float); }
  void copy_inputs(unsigned char* dst) const override {
    std::memcpy(dst, a_.data(), a_.size() * sizeof(float));
    std::memcpy(dst + align64(a_.size() * sizeof(float)), b_.data(), b_.size() * sizeof(float));
  }

 private:
  // alpha != 1 so that a kernel forgetting to scale fails validation.
  static constexpr float kAlpha = 1.5f;
  long M_ = 0, N_ = 0, K_ = 0;
  AlignedBuffer<float> a_, b_, c_;
  std::vector<double> ref_;
  std::vector<AlignedBuffer<float>> workspace_;
};

}  // namespace

CpuFamily gemm_cpu_family() { return make_cpu_family<GemmSession>(gemm_family); }

}  // namespace ktune::cpu
