#pragma once
// Backend: where kernels run. One implementation per kind of device (cpu, cuda, hip); they are
// found at run time (a GPU backend with no device reports no devices, it does not fail).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/conditions.h"
#include "ktune/config.h"
#include "ktune/device.h"
#include "ktune/kernel_family.h"
#include "ktune/measurement.h"
#include "ktune/problem.h"
#include "ktune/workload_rules.h"

namespace ktune {

// A config built, loaded and bound to one problem's workload, ready to run.
class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;
  double compile_time_s = 0;
};

struct Validation {
  double max_abs_error = 0;
  double mismatch_fraction = 0;
};

struct Measured {
  Validation validation;
  MeasureOutcome outcome;
  // Numbers a worker reports beside the time (a speedup over its own baseline, achieved
  // occupancy): the trial's metrics, by name.
  std::map<std::string, double> metrics;
};

// One problem on one device: owns the seeded workload (identical for every config) and the
// reference output. Created once per problem by the tuner.
class ProblemSession {
 public:
  virtual ~ProblemSession() = default;
  // Build one config ahead of measurement. Thread-safe: the tuner calls it from its compile
  // pool, in parallel. Throws TrialFailure (CompileError, LaunchError).
  virtual std::unique_ptr<PreparedKernel> prepare(const Config& config) = 0;
  // Run once on the seeded inputs and compare with the reference. Returns the errors when
  // within tolerance; throws TrialFailure (WrongResult naming max error and mismatch fraction,
  // Crashed, LaunchError, Timeout) otherwise. Called from the measuring thread only.
  virtual Validation validate(PreparedKernel& kernel, const Tolerance& tol) = 0;
  // One timed sample: ns per launch. Throws TrialFailure (Timeout, Crashed, LaunchError).
  virtual double sample(PreparedKernel& kernel, const SampleRequest& request) = 0;
  // Validation, then measure() over sample(): what the tuner calls for every config. A session
  // that measures elsewhere (a worker process runs its own loop) overrides it whole. Throws
  // what validate and sample throw.
  virtual Measured validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                        std::optional<double> best_median_ns);
  // A reference implementation timed in the same run (cuBLAS on CUDA, OpenBLAS on CPU when
  // built in); nullptr when there is none. Measured with the same settings as every config.
  virtual std::unique_ptr<PreparedKernel> prepare_baseline() { return nullptr; }
  virtual std::string baseline_name() const { return {}; }
  // The device's conditions (conditions.h) while `kernel` was timed since the last call, which
  // are then forgotten; empty where the backend reads none. validate_and_measure adds them to a
  // trial's metrics; the re-measure round asks for each kernel it alternated.
  virtual Conditions take_conditions(PreparedKernel&) { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;           // "cpu", "cuda", "hip"
  virtual std::vector<DeviceInfo> devices() = 0;  // empty when no device is present
  // Why devices() is empty ("libcuda.so.1 could not be loaded"), for front ends to show.
  virtual std::string unavailable_reason() const { return {}; }
  virtual std::vector<KernelFamily> families() const = 0;  // built-in families on this backend
  // Versions of the compilers and runtimes involved, for run metadata.
  virtual std::vector<std::pair<std::string, std::string>> versions() const { return {}; }
  // The workload rules (workload_rules.h) the inputs it measures on were made by, for run
  // metadata: this ktune's, except where the answers were measured before (a replay's).
  virtual int workload_rules() const { return kWorkloadRules; }
  // A user's own kernel from a spec file (GPU backends). Default: InputError, not supported.
  virtual KernelFamily load_family_spec(const std::filesystem::path& spec);
  // Throws InputError when the family is not one of this backend's (or a loaded spec).
  virtual std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family,
                                               const Problem& problem, std::uint64_t seed) = 0;

  // Finds a built-in family by name; throws InputError listing the known ones.
  KernelFamily family(const std::string& name) const;
};

// Throws InputError listing the available backends.
Backend& find_backend(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& name);
// Device `index` of the backend; an InputError says why there is none (no device on this machine,
// or how many there are).
DeviceInfo find_device(Backend& backend, int index);

}  // namespace ktune
