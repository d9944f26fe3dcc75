#pragma once
// One problem of a spec-driven family on one CUDA device: seeded buffers, the reference output,
// compiled configs, cuBLAS, and the two timing methods.
#include <cublas_v2.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "compiler.h"
#include "driver.h"
#include "ktune/backend.h"
#include "ktune/backends/cuda.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"

namespace ktune::cuda {

// A context of our own on the device (not the primary one: a context that faulted must be
// destroyed to recover, and the primary one is shared with cuBLAS's runtime), shared by a
// session and its kernels so that a kernel freed after its session never touches a destroyed
// context. cuBLAS uses it too: the runtime adopts the current driver context. `generation`
// grows at every reset: a handle made in an older generation is dead.
struct DeviceContext {
  const Driver& d;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  int generation = 0;
  std::shared_mutex mutex;  // shared: loading modules on compile threads; unique: reset

  DeviceContext(const Driver& driver, int index);
  ~DeviceContext();
  // Why this process can no longer use the device (a fault that outlived its context), or empty.
  std::string lost;

  void make_current() const;
  // After a sticky fault: destroys the context and starts a fresh one. Some drivers keep the
  // fault for the whole process (H100, driver 580: a new context fails with the same error);
  // then `lost` says so and false is returned: only a new process can go on (--resume).
  bool reset();
  // Throws RunError when `lost`.
  void check_usable() const;
};

struct Buffer {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
};

// cuMemAlloc of at least 16 bytes; running out of memory is a RunError naming `what`.
Buffer alloc(const Driver& d, std::size_t bytes, const std::string& what);

class Session;
class CublasKernel;
class SpecKernel;

// Something the timing methods can enqueue: a compiled config, or the cuBLAS baseline.
class Launchable : public PreparedKernel {
 public:
  ~Launchable() override;
  // Enqueues one launch (every kernel of the config) on the session's stream, on input copy `copy`.
  virtual void enqueue(Session& s, int copy) = 0;
  // Reloads what a context reset destroyed. Measuring thread only.
  virtual void ensure_loaded(Session&) {}

  // The amortized method's captured graph, reused while the request stays the same.
  std::shared_ptr<DeviceContext> dev;
  CUgraphExec graph = nullptr;
  int graph_launches = 0, graph_copies = 0;
  int graph_epoch = -1;       // session buffers it was captured with
  int graph_generation = -1;  // context it lives in
  void drop_graph();
};

class Session final : public ProblemSession, public CudaSessionInfo {
 public:
  Session(std::shared_ptr<DeviceContext> dev, const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec,
          Problem problem, std::uint64_t seed, std::shared_ptr<const Compiler> compiler);
  ~Session() override;

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override;
  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override;
  double sample(PreparedKernel& kernel, const SampleRequest& request) override;
  std::unique_ptr<PreparedKernel> prepare_baseline() override;
  std::string baseline_name() const override;

  double measure_sm_clock_mhz() override;
  std::pair<double, double> sm_clock_range_mhz() const override { return {clock_min_, clock_max_}; }
  int recoveries() const override { return recoveries_; }

  // For the launchables.
  const Driver& d() const { return dev_->d; }
  CUstream stream() const { return stream_; }
  const KernelSpec& spec() const { return *spec_; }
  const Problem& problem() const { return problem_; }
  // Buffer `name` of input copy `copy` (inputs rotate; outputs and workspaces do not).
  CUdeviceptr buffer(const std::string& name, int copy) const;
  cublasHandle_t cublas();
  const Variables& device_vars() const { return device_vars_; }
  // Grows workspace `name` to at least `bytes`.
  void ensure_workspace(const std::string& name, std::size_t bytes);

 private:
  friend class SpecKernel;
  struct HostInput {
    ElemType type;
    std::vector<unsigned char> data;
  };

  // Builds the given launches of the spec for `config`: planned, compiled, checked, loaded.
  std::unique_ptr<SpecKernel> build(const std::vector<SpecLaunch>& launches, const Config& config);
  // Elements of buffer `a` (input or output): its largest count over the default space.
  std::uint64_t buffer_count(const SpecArgument& a) const;
  // Poisons (NaN bytes) or zeroes output `out`, as its "init" says, before a validation run.
  void fill_output(const SpecArgument& out);
  void compute_elementwise_reference();
  // The reduced check of an output downloaded to `host` (check().reduce set).
  Validation check_reduced(const Launchable& k, const std::vector<unsigned char>& host, ElemType type,
                           const Tolerance& tol) const;
  void allocate_buffers();
  void release_buffers();
  void compute_reference();
  void load_utilities();
  // Compares the output at `got` with the reference on the device; nullopt for types and sizes
  // it does not handle (the host compares those).
  std::optional<Comparison> compare_on_device(CUdeviceptr got, ElemType type, const Tolerance& tol);
  void ensure_copies(int copies);
  int copies_for_rotation() const;
  void zero_workspaces();
  // Copies host memory to the device in stream order. A plain cuMemcpyHtoD from pageable memory
  // can return before its DMA lands and is not ordered with our non-blocking stream: a kernel
  // launched next could read a partly uploaded buffer (seen: a reference whose last 10 % was
  // still arriving when validation compared against it).
  void upload(CUdeviceptr dst, const void* src, std::size_t bytes, const std::string& what);
  // Waits for `event` on the host; past `deadline` waits for the device to finish, then throws Timeout.
  void wait(CUevent event, std::chrono::steady_clock::time_point deadline, const std::string& what);
  // Runs `fn`, mapping driver errors to trial failures; a sticky fault resets the context first.
  template <class F>
  auto guarded(const std::string& what, F&& fn) -> decltype(fn());
  bool recover();
  std::unique_ptr<CublasKernel> make_cublas();
  void create_stream_and_events();
  void destroy_stream_and_events();

  std::shared_ptr<DeviceContext> dev_;
  DeviceInfo info_;
  Variables device_vars_;
  std::shared_ptr<const KernelSpec> spec_;
  Problem problem_;
  std::uint64_t seed_;
  std::shared_ptr<const Compiler> compiler_;
  Config sizing_config_;  // default config: the reference kernel's, and the cuBLAS reference's sizes
  std::map<std::string, std::uint64_t> buffer_counts_;  // set in the constructor, read-only after

  CUstream stream_ = nullptr;
  CUevent ev_start_ = nullptr, ev_stop_ = nullptr;
  std::vector<std::pair<CUevent, CUevent>> launch_events_;  // per_launch: one pair per launch
  std::map<std::string, HostInput> host_inputs_;
  std::vector<std::map<std::string, Buffer>> copies_;  // [0] holds every buffer; [i>0] input copies
  std::map<std::string, Buffer> workspaces_;
  Buffer flush_;                  // per_launch: written between launches to evict L2
  Buffer ref_b_, baseline_c_;     // cuBLAS: converted B, baseline output
  Buffer ref_dev_, compare_out_;  // the final reference as f32, for compare_on_device
  std::vector<double> reference_;
  cublasHandle_t cublas_ = nullptr;
  int cublas_generation_ = -1;
  Buffer cublas_ws_;
  CUmodule utility_module_ = nullptr;  // kUtilitySource: the clock probe and the compare kernel
  int utility_generation_ = -1;
  CUfunction probe_ = nullptr, compare_ = nullptr;
  double clock_min_ = 0, clock_max_ = 0;
  int recoveries_ = 0;
  int epoch_ = 0;  // grows whenever a buffer moves: captured graphs hold raw pointers
};

}  // namespace ktune::cuda
