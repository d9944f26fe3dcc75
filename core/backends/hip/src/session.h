#pragma once
// One problem of a spec-driven family on one AMD GPU: seeded buffers, the reference output,
// compiled configs and the two timing methods (amortized: one event pair around N launches;
// per_launch: an event pair around each launch with L2 evicted before it).
#include <hip/hip_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler.h"
#include "ktune/backend.h"
#include "ktune/kernel_spec.h"
#include "runtime.h"

namespace ktune::hip {

// A compiled config: the code object loaded on the device and its launches evaluated.
class HipKernel final : public PreparedKernel {
 public:
  ~HipKernel() override;
  Config config;
  CompiledModule compiled;
  hipModule_t module = nullptr;
  std::vector<hipFunction_t> functions;               // one per active launch
  std::vector<LaunchGeometry> geometry;               // active launches only
  std::vector<std::vector<std::string>> launch_args;  // argument names per launch
  std::map<std::string, std::uint64_t> scalars;       // raw 8-byte slots, typed by the spec
};

class Session final : public ProblemSession {
 public:
  Session(int device, const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec, Problem problem,
          std::uint64_t seed, std::shared_ptr<const Compiler> compiler);
  ~Session() override;

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override;
  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override;
  double sample(PreparedKernel& kernel, const SampleRequest& request) override;

 private:
  struct HostInput {
    ElemType type;
    std::vector<unsigned char> data;
  };
  void allocate_buffers();
  void compute_reference();
  void reference_gemm();
  void ensure_copies(int copies);
  int copies_for_rotation() const;
  void enqueue(HipKernel& k, int copy);
  void* buffer(const std::string& name, int copy) const;
  // Waits for `event`; past the deadline throws Timeout (the launch keeps running on the GPU).
  void wait(hipEvent_t event, std::chrono::steady_clock::time_point deadline, const std::string& what);

  int device_;
  DeviceInfo info_;
  Variables device_vars_;
  std::shared_ptr<const KernelSpec> spec_;
  Problem problem_;
  std::uint64_t seed_;
  std::shared_ptr<const Compiler> compiler_;
  Config sizing_config_;  // default config: input and output sizes must not depend on the config

  hipStream_t stream_ = nullptr;
  hipEvent_t ev_start_ = nullptr, ev_stop_ = nullptr;
  std::vector<std::pair<hipEvent_t, hipEvent_t>> launch_events_;
  std::map<std::string, HostInput> host_inputs_;
  std::vector<std::map<std::string, DeviceBuffer>> copies_;  // [0] every buffer; [i>0] input copies
  DeviceBuffer flush_;
  std::vector<double> reference_;
};

}  // namespace ktune::hip
