#include <hip/hip_runtime_api.h>

#include <map>
#include <mutex>

#include "compiler.h"
#include "hip_api.h"
#include "ktune/backends/hip.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/error.h"
#include "ktune/spec_catalog.h"
#include "spec_session.h"
#include "targets.h"

namespace ktune {

namespace hip {

const std::vector<EmbeddedFile>& embedded_kernel_files();  // embedded_kernels.cpp, generated

namespace {

// hipGetDeviceCount's answer, asked once: the runtime initializes on the first call.
std::string device_count(int* count) {
  static std::once_flag once;
  static int n = 0;
  static std::string why;
  std::call_once(once, [] {
    const hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess) {
      n = 0;
      why = "hipGetDeviceCount: " + describe(e) +
            ": no AMD GPU visible to the ROCm runtime (needs /dev/kfd and /dev/dri, and the amdgpu driver)";
    } else if (n == 0) {
      why = "the ROCm runtime reports no AMD GPU";
    }
  });
  *count = n;
  return why;
}

class HipBackend final : public Backend {
 public:
  explicit HipBackend(HipBackendOptions options)
      : cache_dir_(options.cache_dir.value_or(hip_default_cache_dir())),
        specs_(embedded_kernel_files(), hip_spec_dialect()) {}

  std::string name() const override { return "hip"; }
  std::string unavailable_reason() const override { return hip_unavailable_reason(); }

  std::vector<DeviceInfo> devices() override {
    int count = 0;
    device_count(&count);
    std::vector<DeviceInfo> out;
    for (int i = 0; i < count; ++i) out.push_back(describe(i));
    return out;
  }

  std::vector<KernelFamily> families() const override { return specs_.builtin_families(); }

  std::vector<std::pair<std::string, std::string>> versions() const override {
    std::vector<std::pair<std::string, std::string>> v;
    v.emplace_back("hipcc", Compiler::version());
    int runtime = 0;
    if (hipRuntimeGetVersion(&runtime) == hipSuccess)
      v.emplace_back("hip_runtime", std::to_string(runtime / 10000000) + "." + std::to_string(runtime / 100000 % 100) +
                                        "." + std::to_string(runtime % 100000));
    return v;
  }

  KernelFamily load_family_spec(const std::filesystem::path& file) override { return specs_.load(file); }

  std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family, const Problem& problem,
                                       std::uint64_t seed) override {
    const std::shared_ptr<const KernelSpec> spec = specs_.find(family);
    int count = 0;
    if (const std::string why = device_count(&count); count == 0) throw RunError(why);
    std::shared_ptr<gpu::DeviceApi> api;
    std::shared_ptr<const Compiler> compiler;
    {
      std::lock_guard lock(mutex_);
      const std::string target = device.text.count("arch") ? device.text.at("arch") : "";
      if (target.empty()) throw InputError("device " + device.name + " reports no gfx target (text property \"arch\")");
      auto& c = compilers_[target];
      if (!c) c = std::make_shared<Compiler>(target, cache_dir_);
      compiler = c;
      auto& d = devices_[device.index];
      if (!d) d = open_device(device.index);
      api = d;
    }
    return std::make_unique<gpu::SpecSession>(api, compiler, device, spec, problem, seed);
  }

 private:
  static DeviceInfo describe(int index) {
    DeviceInfo info;
    info.backend = "hip";
    info.index = index;
    hipDeviceProp_t prop{};
    if (hipGetDeviceProperties(&prop, index) != hipSuccess) return info;
    info.name = prop.name;
    const std::string arch = prop.gcnArchName;  // "gfx90a:sramecc+:xnack-"
    const std::string target = arch.substr(0, arch.find(':'));
    const auto known = target_info(target);
    TargetInfo t = known.value_or(TargetInfo{target});
    auto& p = info.properties;
    p = target_properties(t, prop.multiProcessorCount, prop.clockRate / 1000.0);
    // What the device says wins over the table.
    p["lds_per_block"] = static_cast<double>(prop.sharedMemPerBlock);
    p["lds_per_cu"] = static_cast<double>(prop.maxSharedMemoryPerMultiProcessor);
    p["wavefront_size"] = prop.warpSize;
    p["regs_per_block"] = prop.regsPerBlock;
    p["max_threads_per_block"] = prop.maxThreadsPerBlock;
    p["l2_bytes"] = prop.l2CacheSize;
    p["mem_clock_mhz"] = prop.memoryClockRate / 1000.0;
    p["mem_bandwidth_gbs"] = 2 * p["mem_clock_mhz"] * 1e6 * prop.memoryBusWidth / 8 / 1e9;  // double data rate
    p["memory_bytes"] = static_cast<double>(prop.totalGlobalMem);
    info.text["arch"] = target;
    info.text["gcn_arch_name"] = arch;
    info.text["family"] = known ? t.family : "unknown to ktune's target table";
    info.text["hipcc"] = Compiler::version();
    info.text["peak_source"] = "table by gfx target x CUs x max clock";
    const DevicePeaks peaks = hip_peaks(target, p["cus"], p["clock_mhz"]);  // what the table lacks, said
    info.text.insert(peaks.missing.begin(), peaks.missing.end());
    info.text["register_source"] = "table by gfx target (hipGetDeviceProperties has no VGPR/SGPR counts)";
    return info;
  }

  std::filesystem::path cache_dir_;
  mutable std::mutex mutex_;
  SpecCatalog specs_;
  std::map<std::string, std::shared_ptr<const Compiler>> compilers_;
  std::map<int, std::shared_ptr<gpu::DeviceApi>> devices_;
};

}  // namespace
}  // namespace hip

std::filesystem::path hip_default_cache_dir() { return hip::default_cache_dir(); }

std::string hip_unavailable_reason() {
  int count = 0;
  return hip::device_count(&count);
}

std::unique_ptr<Backend> make_hip_backend() { return make_hip_backend(HipBackendOptions{}); }

std::unique_ptr<Backend> make_hip_backend(const HipBackendOptions& options) {
  return std::make_unique<hip::HipBackend>(options);
}

}  // namespace ktune
