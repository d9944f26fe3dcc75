#include <cublas_v2.h>
#include <cuda.h>

#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "compiler.h"
#include "cuda_api.h"
#include "driver.h"
#include "ktune/backends/cuda.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"
#include "ktune/spec_catalog.h"
#include "spec_session.h"

namespace ktune {

namespace cuda {

const std::vector<EmbeddedFile>& embedded_kernel_files();  // embedded_kernels.cpp, generated

namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions options)
      : cache_dir_(options.cache_dir.value_or(cuda_default_cache_dir())),
        specs_(embedded_kernel_files(), cuda_spec_dialect()) {}

  std::string name() const override { return "cuda"; }
  std::string unavailable_reason() const override { return cuda_unavailable_reason(); }

  std::vector<DeviceInfo> devices() override {
    std::string why;
    const Driver* d = driver(&why);
    if (!d) return {};
    int count = 0;
    if (d->cuDeviceGetCount(&count) != CUDA_SUCCESS) return {};
    std::vector<DeviceInfo> out;
    for (int i = 0; i < count; ++i) out.push_back(describe(*d, i));
    return out;
  }

  std::vector<KernelFamily> families() const override { return specs_.builtin_families(); }

  std::vector<std::pair<std::string, std::string>> versions() const override {
    std::vector<std::pair<std::string, std::string>> v;
    v.emplace_back("cuda_toolkit",
                   std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10));
    v.emplace_back("nvrtc", Compiler::nvrtc_version());
    int cublas = 0;
    cublasGetProperty(MAJOR_VERSION, &cublas);
    int minor = 0, patch = 0;
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    v.emplace_back("cublas", std::to_string(cublas) + "." + std::to_string(minor) + "." + std::to_string(patch));
    if (const Driver* d = driver())
      v.emplace_back("cuda_driver", std::to_string(d->version / 1000) + "." + std::to_string(d->version % 1000 / 10));
    return v;
  }

  KernelFamily load_family_spec(const std::filesystem::path& file) override { return specs_.load(file); }

  std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family, const Problem& problem,
                                       std::uint64_t seed) override {
    const std::shared_ptr<const KernelSpec> spec = specs_.find(family);
    const Driver& d = require_driver();
    std::shared_ptr<gpu::DeviceApi> api;
    std::shared_ptr<const Compiler> compiler;
    {
      std::lock_guard lock(mutex_);
      auto& c = devices_[device.index];
      if (!c) c = open_device(d, device.index);
      api = c;
      // Hopper and later: the arch-specific target ("sm_90a"), whose features (wgmma, setmaxnreg)
      // kernels may use; such a cubin runs only on that architecture, which is the one tuned.
      const int major = static_cast<int>(device.property("cc_major"));
      const std::string arch =
          (device.text.count("arch")
               ? device.text.at("arch")
               : "sm_" + std::to_string(major) + std::to_string(static_cast<int>(device.property("cc_minor")))) +
          (major >= 9 ? "a" : "");
      auto& comp = compilers_[arch];
      if (!comp) comp = std::make_shared<Compiler>(arch, cache_dir_);
      compiler = comp;
    }
    auto session = std::make_unique<gpu::SpecSession>(api, compiler, device, spec, problem, seed);
    try {
      session->measure_sm_clock_mhz();  // the clock at the start of the problem, kept by the session
    } catch (const TrialFailure&) {
      // The probe is informative only; a problem whose clock could not be read still tunes.
    }
    return session;
  }

 private:
  static DeviceInfo describe(const Driver& d, int index) {
    DeviceInfo info;
    info.backend = "cuda";
    info.index = index;
    CUdevice dev = 0;
    d.cuDeviceGet(&dev, index);
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name, dev);
    info.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      d.cuDeviceGetAttribute(&v, a, dev);
      return static_cast<double>(v);
    };
    auto& p = info.properties;
    p["sms"] = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p["smem_per_block"] = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p["smem_per_block_optin"] = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p["smem_per_sm"] = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p["regs_per_block"] = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p["regs_per_sm"] = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p["warp_size"] = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p["max_threads_per_block"] = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p["l2_bytes"] = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    p["sm_clock_mhz"] = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
    p["mem_clock_mhz"] = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000;
    const double bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    p["mem_bandwidth_gbs"] = 2 * p["mem_clock_mhz"] * 1e6 * bus_bits / 8 / 1e9;  // double data rate
    const int major = static_cast<int>(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    const int minor = static_cast<int>(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    p["cc_major"] = major;
    p["cc_minor"] = minor;
    const DevicePeaks peaks = cuda_peaks(major, minor, p["sms"], p["sm_clock_mhz"]);
    p.insert(peaks.properties.begin(), peaks.properties.end());
    info.text.insert(peaks.missing.begin(), peaks.missing.end());
    std::size_t mem = 0;
    d.cuDeviceTotalMem(&mem, dev);
    p["memory_bytes"] = static_cast<double>(mem);
    info.text["arch"] = "sm_" + std::to_string(major) + std::to_string(minor);
    info.text["driver"] = std::to_string(d.version / 1000) + "." + std::to_string(d.version % 1000 / 10);
    info.text["nvrtc"] = Compiler::nvrtc_version();
    info.text["cuda_toolkit"] = std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10);
    info.text["peak_source"] = "table by architecture x SMs x max SM clock";
    return info;
  }

  std::filesystem::path cache_dir_;
  mutable std::mutex mutex_;
  SpecCatalog specs_;
  std::map<int, std::shared_ptr<gpu::DeviceApi>> devices_;
  std::map<std::string, std::shared_ptr<const Compiler>> compilers_;
};

}  // namespace
}  // namespace cuda

std::filesystem::path cuda_default_cache_dir() { return cuda::default_cache_dir(); }

std::string cuda_unavailable_reason() {
  std::string why;
  cuda::driver(&why);
  return why;
}

std::unique_ptr<Backend> make_cuda_backend() { return make_cuda_backend(CudaBackendOptions{}); }

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace ktune
