// The CPU backend: device detection, the built-in families (gemm, qmatmul) with their default
// spaces, and the problem sessions that own workloads, references and timing.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>

#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "cpu_device.h"
#include "gemm.h"
#include "launch.h"
#include "qmatmul.h"
#include "reference.h"
#include "thread_pool.h"

namespace ktune {
namespace {

using cpu::AlignedBuffer;
using cpu::Clock;
using cpu::StopFlag;

// ---------------------------------------------------------------------------------------------
// Families

std::vector<Parameter> threads_param() {
  return {{"threads", {1, 2, 4, 8, 16, 32, 64}, "worker threads from the backend's persistent pool"}};
}

// Constraints every CPU space shares: the vector width this CPU runs, and its thread count.
std::vector<Constraint> cpu_constraints() {
  return {
      {"vec <= simd_width_f32", "vector width beyond this CPU's widest SIMD (16: AVX-512, 8: AVX2, 4: portable)"},
      {"2 * vec >= simd_width_f32", "less than half this CPU's SIMD width: always slower than the wider kernel"},
      {"threads <= threads_hw", "more threads than the CPU has hardware threads"},
  };
}

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
  f.tp_out_field = "N";
  f.tp_in_field = "K";
  f.flops_expr = "2*M*N*K";
  f.bytes_expr = "4*(M*K+K*N+M*N)";
  std::vector<Parameter> params = {
      {"MR", {4, 6, 8, 14}, "micro-tile rows (register blocking)"},
      {"NR", {8, 16, 32}, "micro-tile columns (register blocking, whole vectors)"},
      {"vec", {4, 8, 16}, "f32 lanes per vector: 16 AVX-512, 8 AVX2/FMA, 4 portable"},
      {"MC", {64, 256}, "rows of the packed A block (L2 blocking)"},
      {"KC", {128, 384}, "depth of the packed blocks (L1 blocking of the micro-panels)"},
      {"NC", {1024, 4096}, "columns of the packed B panel (L3 blocking)"},
      {"loop_order", {0, 1}, "0: B panel resident, loop jc>pc>ic>jr>ir; 1: A block resident, ic>pc>jc>ir>jr"},
  };
  params.push_back(threads_param()[0]);
  std::vector<Constraint> cons = cpu_constraints();
  cons.insert(cons.end(), {
      {"ceil_div(NR, vec) * vec == NR && NR / vec <= 4", "NR must be 1 to 4 whole vectors"},
      {"MR * (NR / vec) + NR / vec + 1 <= (vec < simd_width_f32 ? 16 : simd_registers)",
       "accumulators, B vectors and the A broadcast exceed the vector registers (spills)"},
      {"KC * NR * 4 <= l1d_bytes", "a packed KC x NR micro-panel of B must stay in L1d"},
      {"MC * KC * 4 <= l2_bytes / 2", "the packed MC x KC block of A must fit in half of L2"},
      {"KC * NC * 4 * threads <= l3_bytes", "every thread's packed KC x NC panel of B must fit in L3"},
      {"MC == 64 || M > 64", "MC beyond M: the same as the smallest MC"},
      {"KC == 128 || K > 128", "KC beyond K: the same as the smallest KC"},
      {"NC == 1024 || N > 1024", "NC beyond N: the same as the smallest NC"},
  });
  f.default_space = SearchSpace(std::move(params), std::move(cons));
  // Runs on any x86-64 with AVX2 (the widest micro-kernel CI and serving hosts all have), and
  // uses the smallest blocks, which the equivalence constraints above keep for every shape.
  f.default_config = Config({{"MR", 6}, {"NR", 16}, {"vec", 8}, {"MC", 64}, {"KC", 128}, {"NC", 1024},
                             {"loop_order", 0}, {"threads", 1}});
  f.source = "built-in";
  return f;
}

KernelFamily qmatmul_family() {
  KernelFamily f;
  f.name = "qmatmul";
  f.backend = "cpu";
  f.description = "y = x * (w_int8 * scale)^T: f32 activations [batch, in], int8 weights [out, in], f32 scale per "
                  "output channel; weights dequantized on the fly";
  f.key_fields = {{"batch", true, "", {}, "rows of x and y (tokens)"},
                  {"out", true, "", {}, "output channels (rows of w)"},
                  {"in", true, "", {}, "input features (columns of x and w)"},
                  {"x_dtype", false, "f32", {"f32"}, "activation type"},
                  {"w_dtype", false, "int8", {"int8"}, "weight type (per-output-channel scale)"}};
  f.bucket_field = "batch";
  f.tp_out_field = "out";
  f.tp_in_field = "in";
  f.flops_expr = "2*batch*out*in";
  f.bytes_expr = "4*batch*in + out*in + 4*out + 4*batch*out";
  std::vector<Parameter> params = {
      {"OB", {16, 64, 256}, "output channels per block (rows of w a thread works through at a time)"},
      {"IB", {256, 1024, 4096}, "input features per block (w and x tiles kept in cache)"},
      {"BT", {1, 2, 4, 8}, "batch rows per micro-block (reuse of each dequantized weight vector)"},
      {"U", {1, 2, 4}, "output channels per micro-block (reuse of each x vector)"},
      {"vec", {4, 8, 16}, "f32 lanes per vector: 16 AVX-512, 8 AVX2/FMA, 4 portable"},
  };
  params.push_back(threads_param()[0]);
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

// ---------------------------------------------------------------------------------------------
// Backend state shared with sessions (they may outlive the backend object in a front end).

struct State {
  DeviceInfo device;
  int hw_threads = 1;
  double workspace_limit = 0;
  cpu::ThreadPool pool;
  std::mutex flush_mutex;
  AlignedBuffer<unsigned char> flush;
  unsigned char flush_value = 0;

  explicit State(DeviceInfo d)
      : device(std::move(d)),
        hw_threads(static_cast<int>(device.property("threads_hw", 1))),
        workspace_limit(device.property("max_workspace_bytes")),
        pool(hw_threads) {}

  double llc_bytes() const { return device.property("l3_bytes", device.property("l2_bytes")); }

  // Writes a buffer larger than the last-level cache, a slice from every hardware thread so
  // each core's private caches are evicted too.
  void evict_caches() {
    std::lock_guard lock(flush_mutex);
    const std::size_t bytes = static_cast<std::size_t>(llc_bytes() * 1.25) + (1 << 20);
    if (flush.size() < bytes) flush.resize(bytes);
    const unsigned char value = ++flush_value;
    const int T = pool.size();
    pool.run(T, [&](int t) {
      const std::size_t b = flush.size() * t / T, e = flush.size() * (t + 1) / T;
      std::memset(flush.data() + b, value, e - b);
    });
  }
};

// ---------------------------------------------------------------------------------------------
// Sessions

class CpuKernel : public PreparedKernel {
 public:
  explicit CpuKernel(const void* owner) : owner(owner) {}
  const void* owner;  // the session that prepared it: its plan is bound to that problem
};

// Workload, reference, validation and timing common to the CPU families; subclasses own the
// operands and launch their kernel on one copy of the inputs.
class CpuSession : public ProblemSession {
 public:
  explicit CpuSession(std::shared_ptr<State> state) : state_(std::move(state)) {}

  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override {
    const CpuKernel& k = own(kernel);
    float* out = output();
    const std::size_t n = output_size();
    // NaN everywhere first: an element the kernel never writes cannot pass by luck.
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    StopFlag no_deadline{Clock::time_point{}};
    launch(k, 0, no_deadline);
    const std::vector<double>& ref = reference();
    std::size_t bad = 0, worst = 0;
    double max_err = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double err = std::isnan(out[i]) ? INFINITY : std::abs(out[i] - ref[i]);
      if (!(err <= tol.atol + tol.rtol * std::abs(ref[i]))) ++bad;
      if (i == 0 || err > max_err) {
        max_err = err;
        worst = i;
      }
    }
    Validation v{max_err, static_cast<double>(bad) / static_cast<double>(n)};
    if (v.mismatch_fraction > tol.max_mismatch_fraction) {
      std::ostringstream msg;
      msg << bad << " of " << n << " outputs (" << v.mismatch_fraction * 100 << "%) differ from the reference beyond atol="
          << tol.atol << " + rtol=" << tol.rtol << "*|ref| (allowed " << tol.max_mismatch_fraction * 100
          << "%); max abs error " << max_err << " at " << where(worst) << ": got " << out[worst] << ", expected "
          << ref[worst];
      throw TrialFailure(TrialStatus::WrongResult, msg.str());
    }
    return v;
  }

  // The rotation copies (tens of MB) are the problem's one-off set-up: made before the config's
  // time cap starts, so the first config measured on a loaded machine is not cut off for them.
  Measured validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                std::optional<double> best_median_ns) override {
    if (settings.rotate_buffers) rotation_copies();
    return ProblemSession::validate_and_measure(kernel, tol, settings, best_median_ns);
  }

  double sample(PreparedKernel& kernel, const SampleRequest& req) override {
    const CpuKernel& k = own(kernel);
    StopFlag stop(req.deadline);
    const std::size_t copies = req.rotate_buffers ? rotation_copies() : 1;
    const int launches = std::max(1, req.launches);
    double ns = 0;
    if (req.method == Method::Amortized) {
      const auto t0 = Clock::now();
      for (int i = 0; i < launches; ++i) timed_out_unless(launch(k, next_slot(copies), stop));
      ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    } else {
      for (int i = 0; i < launches; ++i) {
        state_->evict_caches();
        const auto t0 = Clock::now();
        const bool done = launch(k, next_slot(copies), stop);
        ns += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        timed_out_unless(done);
      }
    }
    return ns / launches;
  }

 protected:
  // One launch on input copy `slot` (0: the original inputs). False when `stop` fired.
  virtual bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) = 0;
  virtual float* output() = 0;
  virtual std::size_t output_size() const = 0;
  virtual const std::vector<double>& reference() const = 0;
  virtual std::string where(std::size_t index) const = 0;
  // Bytes of one copy of the inputs, and copying them into `dst` (64-byte aligned).
  virtual std::size_t input_bytes() const = 0;
  virtual void copy_inputs(unsigned char* dst) const = 0;

  static std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }
  // Start of input copy `slot` >= 1 in the rotation buffer.
  const unsigned char* rotation_copy(std::size_t slot) const { return rotation_.data() + (slot - 1) * stride_; }

  std::shared_ptr<State> state_;

 private:
  const CpuKernel& own(PreparedKernel& kernel) const {
    auto* k = dynamic_cast<CpuKernel*>(&kernel);
    if (!k || k->owner != this)
      throw TrialFailure(TrialStatus::Crashed, "kernel was prepared by another problem session; prepare it on this one");
    return *k;
  }

  static void timed_out_unless(bool done) {
    if (!done)
      throw TrialFailure(TrialStatus::Timeout, "stopped inside a launch: the per-config time cap passed "
                                               "(--max-ms-per-config)");
  }

  // Copies of the inputs that together exceed the last-level cache (the originals are slot 0),
  // made on first use.
  std::size_t rotation_copies() {
    if (rotation_.size() == 0) {
      stride_ = align64(input_bytes());
      const double want = state_->llc_bytes() * 1.25;
      const std::size_t extra = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(want / stride_)));
      rotation_.resize(extra * stride_);
      for (std::size_t c = 0; c < extra; ++c) copy_inputs(rotation_.data() + c * stride_);
    }
    return rotation_.size() / stride_ + 1;
  }

  std::size_t next_slot(std::size_t copies) { return copies == 1 ? 0 : slot_++ % copies; }

  AlignedBuffer<unsigned char> rotation_;
  std::size_t stride_ = 0;
  std::size_t slot_ = 0;
};

// Host memory the session's buffers need must leave room for everything else.
void check_memory(double bytes, const std::string& what) {
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (phys > 0 && bytes > phys / 2)
    throw InputError(what + " needs " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                     " MiB for inputs, output and reference, more than half of this machine's " +
                     std::to_string(static_cast<long long>(phys / (1 << 20))) + " MiB; choose a smaller shape");
}

long positive_field(const Problem& p, const char* name) {
  const std::int64_t v = p.num(name);
  if (v < 1 || v > (1LL << 31))
    throw InputError(p.family + " field " + name + "=" + std::to_string(v) + " must be between 1 and 2^31");
  return static_cast<long>(v);
}

void require_text(const Problem& p, const char* name, const char* expected) {
  if (p.field(name) != expected)
    throw InputError(p.family + " on cpu supports " + name + "=" + expected + " only, got " + p.field(name));
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
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::size_t i = 0; i < a_.size(); ++i) a_[i] = u(rng);
    for (std::size_t i = 0; i < b_.size(); ++i) b_[i] = u(rng);
    ref_ = cpu::gemm_reference(a_.data(), b_.data(), M_, N_, K_, kAlpha, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning is the CPU's "compile"; the tuner times it.
    return std::make_unique<Kernel>(this, cpu::plan_gemm(config, state_->hw_threads, state_->workspace_limit));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, cpu::GemmPlan p) : CpuKernel(owner), plan(p) {}
    cpu::GemmPlan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    const float* a = a_.data();
    const float* b = b_.data();
    if (slot > 0) {
      a = reinterpret_cast<const float*>(rotation_copy(slot));
      b = reinterpret_cast<const float*>(rotation_copy(slot) + align64(a_.size() * sizeof(float)));
    }
    // beta = 0: the serving case, and an output that does not depend on earlier launches.
    const cpu::GemmOperands op{a, b, c_.data(), M_, N_, K_, kAlpha, 0.0f};
    return cpu::run_gemm(static_cast<const Kernel&>(k).plan, op, workspace_, state_->pool, stop);
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
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = u(rng);
    // Symmetric int8 quantization of uniform [-1, 1] weights: codes in [-127, 127] and a scale
    // of about 1/127 per channel, varied so a kernel mixing up channels fails validation.
    std::uniform_int_distribution<int> code(-127, 127);
    for (std::size_t i = 0; i < w_.size(); ++i) w_[i] = static_cast<std::int8_t>(code(rng));
    for (std::size_t i = 0; i < scale_.size(); ++i) scale_[i] = (1.0f + 0.5f * u(rng)) / 127.0f;
    ref_ = cpu::qmatmul_reference(x_.data(), w_.data(), scale_.data(), batch_, out_, in_, state_->pool);
  }

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    // Planning is the CPU's "compile"; the tuner times it.
    return std::make_unique<Kernel>(this, cpu::plan_qmatmul(config, state_->hw_threads));
  }

 protected:
  struct Kernel : CpuKernel {
    Kernel(const void* owner, cpu::QmmPlan p) : CpuKernel(owner), plan(p) {}
    cpu::QmmPlan plan;
  };

  bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) override {
    const float* x = x_.data();
    const std::int8_t* w = w_.data();
    if (slot > 0) {
      x = reinterpret_cast<const float*>(rotation_copy(slot));
      w = reinterpret_cast<const std::int8_t*>(rotation_copy(slot) + align64(x_.size() * sizeof(float)));
    }
    const cpu::QmmOperands op{x, w, scale_.data(), y_.data(), batch_, out_, in_};
    return cpu::run_qmatmul(static_cast<const Kernel&>(k).plan, op, state_->pool, stop);
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

// ---------------------------------------------------------------------------------------------

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  std::vector<DeviceInfo> devices() override { return {state()->device}; }

  std::vector<KernelFamily> families() const override { return {gemm_family(), qmatmul_family()}; }

  std::vector<std::pair<std::string, std::string>> versions() const override {
#if defined(__clang__)
    const std::string compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    const std::string compiler = std::string("gcc ") + __VERSION__;
#else
    const std::string compiler = "unknown";
#endif
    return {{"cpu_compiler", compiler}, {"cpu_micro_kernels", state()->device.text["micro_kernels"]}};
  }

  std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family, const Problem& problem,
                                       std::uint64_t seed) override {
    if (device.backend != "cpu")
      throw InputError("the cpu backend cannot run on " + device.backend + " device '" + device.name + "'");
    if (family.backend != "cpu")
      throw InputError("kernel family '" + family.name + "' belongs to the " + family.backend +
                       " backend; use the cpu backend's own (gemm, qmatmul)");
    if (family.name == "gemm") return std::make_unique<GemmSession>(state(), problem, seed);
    if (family.name == "qmatmul") return std::make_unique<QmatmulSession>(state(), problem, seed);
    throw InputError("the cpu backend has no kernel family '" + family.name + "' (known: gemm, qmatmul)");
  }

 private:
  // Detected, and the pool started, on first use: a front end that only lists backends pays nothing.
  std::shared_ptr<State> state() const {
    std::call_once(once_, [this] { state_ = std::make_shared<State>(cpu::detect_cpu()); });
    return state_;
  }
  mutable std::once_flag once_;
  mutable std::shared_ptr<State> state_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ktune
