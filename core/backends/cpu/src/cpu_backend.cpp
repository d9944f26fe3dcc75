// The CPU backend: device detection and the families of cpu_families(), each a file of its own
// (gemm_family.cpp, ...) that defines its space and the session that runs one of its problems.
#include <mutex>

#include "cpu_device.h"
#include "cpu_session.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"

namespace ktune {
namespace cpu {

CpuFamily gemm_cpu_family();
CpuFamily qmatmul_cpu_family();
CpuFamily gemm_a8w8_blockscale_cpu_family();
CpuFamily grouped_gemm_cpu_family();
CpuFamily paged_attention_cpu_family();

const std::vector<CpuFamily>& cpu_families() {
  static const std::vector<CpuFamily> all{gemm_cpu_family(), qmatmul_cpu_family(), gemm_a8w8_blockscale_cpu_family(),
                                          grouped_gemm_cpu_family(), paged_attention_cpu_family()};
  return all;
}

}  // namespace cpu

namespace {

using cpu::State;

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  std::vector<DeviceInfo> devices() override { return {state()->device}; }

  std::vector<KernelFamily> families() const override {
    std::vector<KernelFamily> out;
    for (const auto& f : cpu::cpu_families()) out.push_back(f.family());
    return out;
  }

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
                       " backend; use the cpu backend's own (`ktune kernels` lists them)");
    std::string known;
    for (const auto& f : cpu::cpu_families()) {
      const KernelFamily ours = f.family();
      if (ours.name == family.name) return f.open(state(), problem, seed);
      known += (known.empty() ? "" : ", ") + ours.name;
    }
    throw InputError("the cpu backend has no kernel family '" + family.name + "' (known: " + known + ")");
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
