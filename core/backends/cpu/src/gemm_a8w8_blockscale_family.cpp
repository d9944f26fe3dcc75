// gemm_a8w8_blockscale on the CPU: the family (aiter's block-scaled 8-bit GEMM, DeepSeek-V3's
// 1x128 activation and 128x128 weight scales) and the session that runs one problem: seeded
// block-quantized operands, the exact dequantized product in f64, rotated copies of the codes.
#include <cstring>
#include <limits>

#include "a8w8.h"
#include "a8w8_workload.h"
#include "cpu_session.h"
#include "ktune/error.h"
#include "low_precision.h"

namespace ktune::cpu {
namespace {

KernelFamily a8w8_family() {
  KernelFamily f;
  f.name = "gemm_a8w8_blockscale";
  f.backend = "cpu";
  f.description =
      "Y = sum over 128-deep K blocks of (A_q . W_q^T) * a_scale[m,kb] * w_scale[n/128,kb]: 8-bit "
      "A [M,K] and W [N,K] (int8 or fp8 e4m3) with 1x128 and 128x128 block scales (DeepSeek-V3, aiter), "
      "f32 or bf16 Y";
  f.key_fields = {{"M", true, "", {}, "rows of A and Y (tokens)"},
                  {"N", true, "", {}, "rows of W, columns of Y (output features)"},
                  {"K", true, "", {}, "columns of A and W (input features), a multiple of 128"},
                  {"q_dtype", false, "fp8_e4m3", {"fp8_e4m3", "int8"}, "type of the A and W codes"},
                  {"out_dtype", false, "bf16", {"bf16", "f32"}, "type of Y (bf16 rounded to nearest even from f32)"}};
  f.bucket_field = "M";
  f.tp_splits = {{TpSplitDim::Out, {{"N"}}}, {TpSplitDim::In, {{"K"}}}};
  f.flops_expr = "2*M*N*K";
  f.bytes_expr = "M*K + N*K + 4*M*K/128 + 4*ceil(N/128)*K/128 + (out_dtype == \"bf16\" ? 2 : 4)*M*N";
  std::vector<Parameter> params = {
      {"MR", {1, 2, 4, 6, 8}, "micro-tile rows (register blocking)"},
      {"NR", {8, 16, 32, 64}, "micro-tile columns (register blocking, whole vectors dividing the 128-column block)"},
      {"vec", {4, 8, 16}, "32-bit lanes per vector: 16 AVX-512, 8 AVX2, 4 portable"},
      {"MC", {16, 64, 256}, "rows of the packed A block (L2 blocking)"},
      {"NC", {128, 512, 2048}, "columns of the packed W panel (L3 blocking)"},
      {"KC", {128, 512, 2048}, "depth of the packed blocks, whole 128-deep scale blocks (L1 blocking)"},
      {"loop_order",
       {0, 1},
       "0: W panel resident, loop jc>pc>ic (bf16 accumulates in an M x NC f32 block); "
       "1: A block resident, jc>ic>pc, W repacked for every MC rows"},
      {"vnni", {false, true}, "int8 dot products with AVX-512 VNNI vpdpbusd (A biased to u8) instead of vpmaddubsw"},
  };
  params.push_back(threads_param());
  std::vector<Constraint> cons = cpu_constraints();
  cons.insert(
      cons.end(),
      {
          {"ceil_div(NR, vec) * vec == NR && NR / vec <= 4", "NR must be 1 to 4 whole vectors"},
          {"(q_dtype == \"int8\" ? 2 * MR * (NR / vec) + NR / vec + 2 : MR * (NR / vec) + NR / vec + 1) <= "
           "(vec < simd_width_f32 ? 16 : simd_registers)",
           "accumulators (int32 and f32 for int8), weight vectors and the A broadcast exceed the vector registers"},
          {"!vnni || q_dtype == \"int8\"", "vnni applies to int8 only: fp8 e4m3 is decoded to f32 on the CPU"},
          {"!vnni || (vec == 16 && int8_vnni)", "vnni needs AVX-512 VNNI (vpdpbusd) on this CPU, and vec=16"},
          {"KC * NR * (q_dtype == \"int8\" ? 1 : 4) <= l1d_bytes",
           "a packed KC x NR micro-panel of W must stay in L1d"},
          {"MC * KC * (q_dtype == \"int8\" ? 1 : 4) <= l2_bytes / 2",
           "the packed MC x KC block of A must fit in half of L2"},
          {"NC * KC * (q_dtype == \"int8\" ? 1 : 4) * threads <= l3_bytes",
           "every thread's packed NC x KC panel of W must fit in L3"},
          {"MC == 16 || M > 16", "MC beyond M: the same as the smallest MC"},
          {"loop_order == 0 || M > MC", "one MC block of A: both loop orders do the same work"},
          {"NC == 128 || N > 128", "NC beyond N: the same as the smallest NC"},
          {"KC == 128 || K > 128", "KC beyond K: the same as the smallest KC"},
      });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  // Runs on any x86-64 with AVX2 (int8 and fp8 alike) with the smallest blocks, which the
  // equivalence constraints above keep for every shape.
  f.default_config = Config({{"MR", 6},
                             {"NR", 8},
                             {"vec", 8},
                             {"MC", 16},
                             {"NC", 128},
                             {"KC", 128},
                             {"loop_order", 0},
                             {"vnni", false},
                             {"threads", 1}});
  f.source = "built-in";
  return f;
}

class A8w8Session final : public CpuSession {
 public:
  A8w8Session(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed) : CpuSession(std::move(state)) {
    M_ = positive_field(problem, "M");
    N_ = positive_field(problem, "N");
    K_ = positive_field(problem, "K");
    if (K_ % kScaleBlock != 0)
      throw InputError(
          "gemm_a8w8_blockscale needs K to be a multiple of 128 (one scale per 1x128 block of A and "
          "128x128 block of W); got K=" +
          std::to_string(K_) + ": pad K with zero codes to " + std::to_string((K_ / kScaleBlock + 1) * kScaleBlock));
    const std::string q = problem.field("q_dtype"), out = problem.field("out_dtype");
    if (q != "int8" && q != "fp8_e4m3")
      throw InputError("gemm_a8w8_blockscale q_dtype=" + q + " is unknown: use int8 or fp8_e4m3");
    if (out != "f32" && out != "bf16")
      throw InputError("gemm_a8w8_blockscale on cpu supports out_dtype=f32 or bf16, got " + out);
    q_ = q == "int8" ? QType::Int8 : QType::Fp8E4m3;
    out_ = out == "bf16" ? OutType::Bf16 : OutType::F32;
    // Codes, scales, f32 output, and the reference with its two dequantized copies (f64).
    check_memory(1.0 * (M_ + N_) * K_ + 12.0 * M_ * N_ + 8.0 * (M_ + N_) * K_, "gemm_a8w8_blockscale " + problem.key());
    a_ = quantize_random(q_, M_, K_, 1, seed);
    w_ = quantize_random(q_, N_, K_, kScaleBlock, seed ^ 0x9e3779b97f4a7c15ull);
    y_.resize(M_ * N_);
    if (out_ == OutType::Bf16) y16_.resize(M_ * N_);
    ref_ = a8w8_reference(q_, a_, w_, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    return std::make_unique<Kernel>(this, plan_a8w8(config, q_, out_, M_, state_->hw_threads, state_->workspace_limit));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, A8Plan p) : CpuKernel(owner), plan(p) {}
    A8Plan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    const std::uint8_t* a = a_.codes.data();
    const std::uint8_t* w = w_.codes.data();
    if (slot > 0) {
      a = rotation_copy(slot);
      w = rotation_copy(slot) + align64(a_.codes.size());
    }
    void* y = out_ == OutType::Bf16 ? static_cast<void*>(y16_.data()) : static_cast<void*>(y_.data());
    const A8Operands op{a, a_.scales.data(), w, w_.scales.data(), y, M_, N_, K_};
    return run_a8w8(static_cast<const Kernel&>(k).plan, op, workspace_, state_->pool, stop);
  }
  float* output() override { return y_.data(); }
  std::size_t output_size() const override { return y_.size(); }
  void poison_output() override {
    CpuSession::poison_output();
    if (out_ == OutType::Bf16)
      std::fill(y16_.data(), y16_.data() + y16_.size(), bf16_round(std::numeric_limits<float>::quiet_NaN()));
  }
  const float* output_as_f32() override {
    if (out_ == OutType::Bf16)
      for (std::size_t i = 0; i < y16_.size(); ++i) y_[i] = bf16_value(y16_[i]);
    return y_.data();
  }
  const std::vector<double>& reference() const override { return ref_; }
  std::string where(std::size_t i) const override {
    return "Y[" + std::to_string(i / N_) + "," + std::to_string(i % N_) + "]";
  }
  // The codes rotate; the scales (1/128 of A's bytes, 1/16384 of W's) are read from one copy.
  std::size_t input_bytes() const override { return align64(a_.codes.size()) + w_.codes.size(); }
  void copy_inputs(unsigned char* dst) const override {
    std::memcpy(dst, a_.codes.data(), a_.codes.size());
    std::memcpy(dst + align64(a_.codes.size()), w_.codes.data(), w_.codes.size());
  }

 private:
  long M_ = 0, N_ = 0, K_ = 0;
  QType q_ = QType::Int8;
  OutType out_ = OutType::F32;
  BlockQuantized a_, w_;
  AlignedBuffer<float> y_;
  AlignedBuffer<std::uint16_t> y16_;
  std::vector<double> ref_;
  std::vector<AlignedBuffer<unsigned char>> workspace_;
};

}  // namespace

CpuFamily gemm_a8w8_blockscale_cpu_family() { return make_cpu_family<A8w8Session>(a8w8_family); }

}  // namespace ktune::cpu
