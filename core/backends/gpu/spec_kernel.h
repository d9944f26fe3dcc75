#pragma once
// What the timing methods launch (spec_session.cpp and spec_measure.cpp share it): a compiled
// config of the spec, and the vendor's gemm as the baseline.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "spec_session.h"

namespace ktune::gpu {

// A compiled config of the spec (or the spec's reference kernel): one module per distinct set of
// defines among its active launches.
class SpecSession::Kernel final : public Launchable {
 public:
  Config config_;
  BuildPlan plan;
  std::vector<CompiledModule> compiled;                   // per plan module
  std::vector<std::vector<ConstantFill>> constant_fills;  // per plan module, after each load
  std::map<std::string, std::uint64_t> scalars;           // raw 8-byte slots
  // A tensor map argument sized for this config, and its encodings per input copy.
  struct TensorMap {
    std::string tensor;
    TensorMapDesc desc;
    std::map<int, std::pair<DevicePtr, std::array<unsigned char, kTensorMapBytes>>> encoded;
  };
  std::map<std::string, TensorMap> tensor_maps;
  std::vector<std::pair<std::string, std::size_t>> workspace_bytes;
  std::vector<Module> modules;
  std::vector<Handle> functions;  // per plan launch
  bool constants_filled = false;  // in the loaded modules

  const Config* config() const override { return &config_; }
  // Loads the modules and checks each launch against the function's real limits (registers
  // and launch bounds cap the threads; shared memory is static + dynamic). Compile threads call it.
  void load(SpecSession& s);
  void ensure_loaded(SpecSession& s) override;
  void enqueue(SpecSession& s, int copy) override;

 private:
  // Copies the spec's constant data into the loaded modules' __constant__ symbols, on the
  // session's stream: measuring thread only, never while a graph is captured.
  void fill_constants(SpecSession& s);
  // Encoded once per buffer: the per-launch timing must not wait on the host between its events.
  const void* tensor_map(SpecSession& s, const std::string& name, TensorMap& t, int copy);
};

// The vendor's gemm computing the family's product, timed with the same settings as every config.
class SpecSession::LibraryGemm final : public Launchable {
 public:
  GemmCall call;
  std::string a, b;  // input names; b empty when B is the session's converted copy

  void enqueue(SpecSession& s, int copy) override;
};

// The vendor's block-scaled 8-bit gemm (the spec's "baseline"), writing the spec's output as a
// config does, so that it validates as one.
class SpecSession::LibraryBlockScaled final : public Launchable {
 public:
  BlockScaledCall call;
  std::string a, b, a_scale, b_scale, y;  // argument names (A's scales go through the session's transposed copy)

  void ensure_loaded(SpecSession& s) override;
  void enqueue(SpecSession& s, int copy) override;

 private:
  BlockScaledCall with_buffers(SpecSession& s, int copy) const;
};

}  // namespace ktune::gpu
