#pragma once
// What every CPU family shares: the backend's state (device, thread pool, cache flush), the
// problem session base (validation against a f64 reference, timing, rotated input copies), the
// parameters and constraints all CPU spaces have, and reading a problem's fields. A family is
// one file that defines its KernelFamily and its session (gemm_family.cpp, ...) and is listed
// in cpu_families().
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/kernel_family.h"
#include "ktune/problem.h"
#include "launch.h"
#include "thread_pool.h"

namespace ktune::cpu {

// Backend state shared with sessions (they may outlive the backend object in a front end).
struct State {
  DeviceInfo device;
  int hw_threads = 1;
  double workspace_limit = 0;
  ThreadPool pool;
  std::mutex flush_mutex;
  AlignedBuffer<unsigned char> flush;
  unsigned char flush_value = 0;

  explicit State(DeviceInfo d);
  double llc_bytes() const { return device.property("l3_bytes", device.property("l2_bytes")); }
  // Writes a buffer larger than the last-level cache, a slice from every hardware thread so
  // each core's private caches are evicted too.
  void evict_caches();
};

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

  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override;
  // The rotation copies (tens of MB) are the problem's one-off set-up: made before the config's
  // time cap starts, so the first config measured on a loaded machine is not cut off for them.
  Measured validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                std::optional<double> best_median_ns) override;
  double sample(PreparedKernel& kernel, const SampleRequest& req) override;

 protected:
  // One launch on input copy `slot` (0: the original inputs). False when `stop` fired.
  virtual bool launch(const CpuKernel& k, std::size_t slot, StopFlag& stop) = 0;
  virtual float* output() = 0;
  virtual std::size_t output_size() const = 0;
  // Validation poisons the output with NaN before its launch, so that an element the kernel
  // never writes cannot pass by luck, and reads it back as f32 after. A family with a narrower
  // output type (bf16) overrides both for its own buffer.
  virtual void poison_output();
  virtual const float* output_as_f32() { return output(); }
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
  const CpuKernel& own(PreparedKernel& kernel) const;
  // Copies of the inputs that together exceed the last-level cache (the originals are slot 0),
  // made on first use.
  std::size_t rotation_copies();
  std::size_t next_slot(std::size_t copies) { return copies == 1 ? 0 : slot_++ % copies; }

  AlignedBuffer<unsigned char> rotation_;
  std::size_t stride_ = 0;
  std::size_t slot_ = 0;
};

// A family of this backend: its definition and the session that runs one problem of it.
struct CpuFamily {
  KernelFamily (*family)();
  std::unique_ptr<ProblemSession> (*open)(std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed);
};

// A family whose sessions are `Session(state, problem, seed)`.
template <class Session>
CpuFamily make_cpu_family(KernelFamily (*family)()) {
  return {
      family,
      [](std::shared_ptr<State> state, const Problem& problem, std::uint64_t seed) -> std::unique_ptr<ProblemSession> {
        return std::make_unique<Session>(std::move(state), problem, seed);
      }};
}

// Every family the CPU backend has, in the order `ktune kernels` lists them.
const std::vector<CpuFamily>& cpu_families();

// The parameter and constraints every CPU space shares: threads from the persistent pool, the
// vector width this CPU runs, and its thread count.
Parameter threads_param();
std::vector<Constraint> cpu_constraints();

// The blocking parameters of the BLIS-style GEMM (gemm.h: MR NR vec MC KC NC) and the CPU,
// register and cache constraints on them, shared by the families built on it (gemm, grouped_gemm).
std::vector<Parameter> blocking_params();
std::vector<Constraint> blocking_constraints();

// Host memory the session's buffers need must leave room for everything else.
void check_memory(double bytes, const std::string& what);
// A numeric key field in [1, 2^31], else an InputError naming it.
long positive_field(const Problem& p, const char* name);
void require_text(const Problem& p, const char* name, const char* expected);

}  // namespace ktune::cpu
