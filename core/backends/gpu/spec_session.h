#pragma once
// One problem of a spec-driven family on one GPU, for every vendor: seeded buffers (rotating
// copies), constant fills, the reference output (a trusted config, a reference kernel, or the
// vendor's gemm), compiled configs with their checks, validation (element by element on the
// device, or reduced), and the two timing methods (amortized over a captured graph, per launch
// with L2 flushed). Written once over DeviceApi and Toolchain: a new GPU feature goes here.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "build_plan.h"
#include "device_api.h"
#include "ktune/backend.h"
#include "ktune/backends/gpu.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/spec_inputs.h"
#include "toolchain.h"

namespace ktune::gpu {

class SpecSession;

// Something the timing methods enqueue: a compiled config, or the vendor's gemm as the baseline.
class Launchable : public PreparedKernel {
 public:
  // Enqueues one launch (every kernel of the config) on the session's stream, on input copy `copy`.
  virtual void enqueue(SpecSession& s, int copy) = 0;
  // Reloads what a context reset destroyed, fills constants, sizes workspaces. Measuring thread only.
  virtual void ensure_loaded(SpecSession&) {}
  // The config it runs (the reduced check counts with it); nullptr: the session's default config.
  virtual const Config* config() const { return nullptr; }

  // The amortized method's captured graph, reused while the request and the buffers stay the same.
  Graph graph;
  int graph_launches = 0, graph_copies = 0, graph_epoch = -1;
  // The device's conditions read while its samples ran, until take_conditions, and when last read.
  std::vector<ConditionsReading> readings;
  std::chrono::steady_clock::time_point last_reading;
};

class SpecSession final : public ProblemSession, public GpuSessionInfo {
 public:
  SpecSession(std::shared_ptr<DeviceApi> device, std::shared_ptr<const Toolchain> toolchain, const DeviceInfo& info,
              std::shared_ptr<const KernelSpec> spec, Problem problem, std::uint64_t seed);
  ~SpecSession() override;

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override;
  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override;
  double sample(PreparedKernel& kernel, const SampleRequest& request) override;
  std::unique_ptr<PreparedKernel> prepare_baseline() override;
  std::string baseline_name() const override;
  Conditions take_conditions(PreparedKernel& kernel) override;

  double measure_sm_clock_mhz() override;
  std::pair<double, double> sm_clock_range_mhz() const override { return {clock_min_, clock_max_}; }
  int recoveries() const override { return recoveries_; }

  // For what the session launches (spec_kernel.h).
  DeviceApi& api() const { return *device_; }
  const std::shared_ptr<DeviceApi>& device() const { return device_; }
  Handle stream() const { return stream_.get(); }
  // Buffer `name` of input copy `copy` (inputs rotate; outputs and workspaces do not).
  DevicePtr buffer(const std::string& name, int copy) const;
  // Grows workspace `name` to at least `bytes`.
  void ensure_workspace(const std::string& name, std::size_t bytes);
  // The generated data of input `name`.
  const std::vector<unsigned char>& host_input(const std::string& name) const override {
    return host_inputs_.at(name).data;
  }
  const std::vector<double>& reference_output() const override { return reference_; }
  // Copies host memory to the device in stream order and waits: `src` may go away once this
  // returns. A plain copy from pageable memory can return before its DMA lands and is not ordered
  // with a non-blocking stream (seen: a reference whose last 10 % was still arriving).
  void upload(DevicePtr dst, const void* src, std::size_t bytes);
  // The vendor's gemm on the session's stream (made again after a context reset); made first by
  // a gemm reference.
  GemmLibrary& gemm();

 private:
  class Kernel;
  class LibraryGemm;
  class LibraryBlockScaled;

  // Builds the given launches of the spec for `config`: planned, compiled, checked, loaded.
  std::unique_ptr<Launchable> build(const std::vector<SpecLaunch>& launches, const Config& config);
  void allocate_buffers();
  std::uint64_t buffer_count(const SpecArgument& a) const { return buffer_counts_.at(a.name); }
  // Poisons (NaN bytes) or zeroes output `out`, as its "init" says, before a validation run.
  void fill_output(const SpecArgument& out);
  void zero_workspaces();
  int copies_for_rotation() const;
  void ensure_copies(int copies);
  void compute_reference();
  void run_reference(Launchable& k, const SpecArgument& out, const Config& config);
  void gemm_reference();
  // Whether the spec's "baseline" (a block-scaled gemm) applies to this problem; sets its name.
  void find_block_scaled_baseline();
  std::unique_ptr<PreparedKernel> prepare_block_scaled();
  // A's scales (argument `name`, [m][kb]) as the library takes them: made on first use, by the
  // measuring thread before any capture (LibraryBlockScaled::ensure_loaded), and after a reset.
  DevicePtr block_scaled_a_scale(const std::string& name, int m, int kb);
  // The reference's gemm call and B as the library takes it (converted to A's type when they differ).
  GemmCall gemm_call(ElemType out);
  // The reduced check of an output downloaded to `host` (check().reduce set).
  Validation check_reduced(const Launchable& k, const std::vector<unsigned char>& host, ElemType type,
                           const Tolerance& tol) const;
  // Compares the output at `got` with the reference on the device; nullopt for types and sizes
  // it does not handle (the host compares those).
  std::optional<Comparison> compare_on_device(DevicePtr got, ElemType type, const Tolerance& tol);
  void load_utilities();
  double time_amortized(Launchable& k, int launches, int copies, std::chrono::steady_clock::time_point deadline);
  double time_per_launch(Launchable& k, int launches, int copies, std::chrono::steady_clock::time_point deadline);
  // Reads the device's conditions into k's readings while its sample runs (at most every few ms).
  void read_conditions(Launchable& k);
  // Waits for `event` on the host; past `deadline` waits for the device to finish, then throws Timeout.
  void wait(Handle event, std::chrono::steady_clock::time_point deadline, const std::string& what);
  // Runs `fn` with the context current, mapping API errors to trial failures; a sticky fault
  // resets the context first.
  template <class F>
  auto guarded(const std::string& what, F&& fn) -> decltype(fn());
  bool recover();
  void create_stream_and_events();

  std::shared_ptr<DeviceApi> device_;
  std::shared_ptr<const Toolchain> toolchain_;
  DeviceInfo info_;
  // Device properties and what the generated inputs publish (SpecInputs::variables): every
  // evaluation of the spec in the session reads them.
  Variables vars_;
  std::shared_ptr<const KernelSpec> spec_;
  Problem problem_;
  Config sizing_config_;  // default config: the reference kernel's, and the gemm reference's sizes
  std::map<std::string, std::uint64_t> buffer_counts_;  // set in the constructor, read-only after
  std::map<std::string, HostInput> host_inputs_;

  Stream stream_;
  Event ev_start_, ev_stop_;
  std::vector<std::pair<Event, Event>> launch_events_;  // per_launch: one pair per launch
  std::vector<std::map<std::string, Buffer>> copies_;   // [0] holds every buffer; [i>0] input copies
  std::map<std::string, Buffer> workspaces_;
  Buffer flush_;                // per_launch: written between launches to evict L2
  Buffer gemm_b_, baseline_c_;  // the gemm: B converted to A's type, the baseline's output
  // The spec's "baseline" where it applies to this problem: its name ("cuBLASLt block-scaled";
  // the spec's kind where the library lacks it) and why it cannot run (empty: it can); A's scales as the library takes
  // them, one copy for every input copy (M x K/128 floats: a few percent of the operands' bytes).
  std::string block_scaled_name_, block_scaled_why_;
  Buffer block_scaled_a_scale_;
  Buffer ref_dev_, compare_out_;  // the final reference as f32, for compare_on_device
  std::vector<double> reference_;
  // Output elements the check compares (1), from its region and the reference's unwritten ones;
  // empty: all. The device compares only whole outputs, so a session with one compares on the host.
  std::vector<std::uint8_t> compared_;
  std::unique_ptr<GemmLibrary> gemm_;
  int gemm_generation_ = -1;
  Module utilities_;
  Handle probe_ = nullptr, compare_ = nullptr;
  double clock_min_ = 0, clock_max_ = 0;
  int recoveries_ = 0;
  int epoch_ = 0;  // grows whenever a buffer moves: captured graphs hold raw pointers
};

}  // namespace ktune::gpu
