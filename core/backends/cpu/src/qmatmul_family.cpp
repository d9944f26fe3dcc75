// qmatmul on the CPU: the family (weight-only int8, dequantized in the micro-kernel) and the
// session that runs one problem: f32 activations, int8 codes with per-channel scales, an f64
// reference, rotated copies.
#include <cstring>

#include "cpu_session.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "qmatmul.h"
#include "reference.h"

namespace ktune::cpu {
namespace {

KernelFamily qmatmul_family() {
  KernelFamily f;
  f.name = "qmatmul";
  f.backend = "cpu";
  f.description =
      "y = x * (w_int8 * scale)^T: f32 activations [batch, in], int8 weights [out, in], f32 scale per "
      "output channel; weights dequantized on the fly";
  f.key_fields = {{"batch", true, "", {}, "rows of x and y (tokens)"},
                  {"out", true, "", {}, "output channels (rows of w)"},
                  {"in", true, "", {}, "input features (columns of x and w)"},
                  {"x_dtype", false, "f32", {"f32"}, "activation type"},
                  {"w_dtype", false, "int8", {"int8"}, "weight type (per-output-channel scale)"}};
  f.bucket_field = "batch";
  f.tp_splits = {{TpSplitDim::Out, {{"out"}}}, {TpSplitDim::In, {{"in"}}}};
  f.flops_expr = "2*batch*out*in";
  f.bytes_expr = "4*batch*in + out*in + 4*out + 4*batch*out";
  std::vector<Parameter> params = {
      {"OB", {16, 64, 256}, "output channels per block (rows of w a thread works through at a time)"},
      {"IB", {256, 1024, 4096}, "input features per block (w and x tiles kept in cache)"},
      {"BT", {1, 2, 4, 8}, "batch rows per micro-block (reuse of each dequantized weight vector)"},
      {"U", {1, 2, 4}, "output channels per micro-block (reuse of each x vector)"},
      {"vec", {4, 8, 16}, "f32 lanes per vector: 16 AVX-512, 8 AVX2/FMA, 4 portable"},
  };
  params.push_back(threads_param());
  std::vector<Constraint> cons = cpu_constraints();
  cons.insert(cons.end(), {
                              {"BT * U + BT + 1 <= (vec < simd_width_f32 ? 16 : simd_registers)",
                               "accumulators, x vectors and the weight vector exceed the vector registers (spills)"},
                              {"BT * IB * 4 <= l1d_bytes", "the BT x IB tile of x must stay in L1d"},
                              {"OB * IB <= l2_bytes / 2", "the OB x IB int8 tile of w must fit in half of L2"},
                              {"BT <= batch || BT == 1", "BT beyond batch: the same as a smaller BT"},
                              {"IB == 256 || IB / 4 < in", "IB far beyond in: the same as a smaller IB"},
                              {"OB == 16 || OB / 4 < out", "OB far beyond out: the same as a smaller OB"},
                          });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  f.default_config = Config({{"OB", 64}, {"IB", 1024}, {"BT", 4}, {"U", 2}, {"vec", 8}, {"threads", 1}});
  f.source = "built-in";
  return f;
}

class QmatmulSession final : public CpuSession {
 public:
  QmatmulSession(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed)
      : CpuSession(std::move(state)) {
    batch_ = positive_field(problem, "batch");
    out_ = positive_field(problem, "out");
    in_ = positive_field(problem, "in");
    require_text(problem, "x_dtype", "f32");
    require_text(problem, "w_dtype", "int8");
    check_memory(4.0 * batch_ * in_ + 1.0 * out_ * in_ + 4.0 * out_ + 12.0 * batch_ * out_, "qmatmul " + problem.key());
    x_.resize(batch_ * in_);
    w_.resize(out_ * in_);
    scale_.resize(out_);
    y_.resize(batch_ * out_);
    // From the counter-based generator (std:: distributions differ between standard libraries):
    // a seed is the same workload on every host.
    auto u = [&](std::uint64_t stream, std::size_t i) { return -1.0 + 2.0 * unit_draw(seed ^ stream, i); };
    for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = static_cast<float>(u(1, i));
    // Symmetric int8 quantization of uniform [-1, 1] weights: codes in [-127, 127] and a scale
    // of about 1/127 per channel, varied so a kernel mixing up channels fails validation.
    for (std::size_t i = 0; i < w_.size(); ++i)
      w_[i] = static_cast<std::int8_t>(-127 + static_cast<int>(unit_draw(seed ^ 2, i) * 255));
    for (std::size_t i = 0; i < scale_.size(); ++i) scale_[i] = static_cast<float>((1.0 + 0.5 * u(3, i)) / 127.0);
    ref_ = qmatmul_reference(x_.data(), w_.data(), scale_.data(), batch_, out_, in_, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning is the CPU's "compile"; the tuner times it.
    return std::make_unique<Kernel>(this, plan_qmatmul(config, state_->hw_threads));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, QmmPlan p) : CpuKernel(owner), plan(p) {}
    QmmPlan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    const float* x = x_.data();
    const std::int8_t* w = w_.data();
    if (slot > 0) {
      x = reinterpret_cast<const float*>(rotation_copy(slot));
      w = reinterpret_cast<const std::int8_t*>(rotation_copy(slot) + align64(x_.size() * sizeof(float)));
    }
    const QmmOperands op{x, w, scale_.data(), y_.data(), batch_, out_, in_};
    return run_qmatmul(static_cast<const Kernel&>(k).plan, op, state_->pool, stop);
  }
  float* output() override { return y_.data(); }
  std::size_t output_size() const override { return y_.size(); }
  const std::vector<double>& reference() const override { return ref_; }
  std::string where(std::size_t i) const override {
    return "y[" + std::to_string(i / out_) + "," + std::to_string(i % out_) + "]";
  }
  std::size_t input_bytes() const override { return align64(x_.size() * sizeof(float)) + w_.size(); }
  void copy_inputs(unsigned char* dst) const override {
    std::memcpy(dst, x_.data(), x_.size() * sizeof(float));
    std::memcpy(dst + align64(x_.size() * sizeof(float)), w_.data(), w_.size());
  }

 private:
  long batch_ = 0, out_ = 0, in_ = 0;
  AlignedBuffer<float> x_, scale_, y_;
  AlignedBuffer<std::int8_t> w_;
  std::vector<double> ref_;
};

}  // namespace

CpuFamily qmatmul_cpu_family() { return make_cpu_family<QmatmulSession>(qmatmul_family); }

}  // namespace ktune::cpu
