#pragma once
// What the timing methods launch: a compiled config of a spec (SpecKernel) and the cuBLAS
// baseline (CublasKernel), with the cuBLAS helpers the session shares.
#include <cublas_v2.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "build_plan.h"
#include "session.h"

namespace ktune::cuda {

// A compiled config of the spec (or the spec's reference kernel): one module per distinct set of
// defines among its active launches.
class SpecKernel final : public Launchable {
 public:
  Config config;
  BuildPlan plan;
  std::vector<CompiledModule> compiled;                   // per plan module
  std::vector<std::vector<ConstantFill>> constant_fills;  // per plan module, after each load
  std::map<std::string, std::uint64_t> scalars;           // raw 8-byte slots
  // A tensor map argument sized for this config, and its encodings per input copy.
  struct TensorMapArg {
    std::string tensor;
    ElemType type{};
    int swizzle = 0;
    std::vector<cuuint64_t> dims;
    std::vector<cuuint32_t> box;
    std::map<int, std::pair<CUdeviceptr, CUtensorMap>> encoded;
  };
  std::map<std::string, TensorMapArg> tensor_maps;
  std::vector<std::pair<std::string, std::size_t>> workspace_bytes;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;  // per plan launch
  int generation = -1;

  ~SpecKernel() override;

  // Loads the cubins and checks each launch against the function's real limits (registers and
  // launch bounds cap the threads; shared memory is static + dynamic). Compile threads call it.
  void load(const Session& s);
  // Copies the spec's constant data into the loaded modules' __constant__ symbols, on the
  // session's stream: measuring thread only (ensure_loaded), never while a graph is captured.
  void fill_constants(Session& s);
  int constants_generation = -1;

  void ensure_loaded(Session& s) override;

  // Encoded once per buffer: the per-launch timing must not wait on the host between its events.
  const CUtensorMap& tensor_map(Session& s, const std::string& name, TensorMapArg& t, int copy);

  void enqueue(Session& s, int copy) override;
};

// cuBLAS computing the same product as the family's kernels: the baseline every config is compared with.
class CublasKernel final : public Launchable {
 public:
  cublasOperation_t op_b = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0, ldb = 0;
  cudaDataType type_a{}, type_b{};
  std::string a, b;  // buffer names; b empty when B is the session's converted copy
  CUdeviceptr converted_b = 0;
  CUdeviceptr c = 0;

  void enqueue(Session& s, int copy) override;
};

// The cuBLAS type of `t`; InputError naming `what` for types cuBLAS's reference does not take.
cudaDataType cuda_type(ElemType t, const std::string& what);
// Throws TrialFailure (launch_error) "<what>: CUBLAS_STATUS_X (description)" unless s is success.
void check_cublas(cublasStatus_t s, const std::string& what);

}  // namespace ktune::cuda
