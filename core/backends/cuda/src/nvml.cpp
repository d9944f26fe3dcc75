#include "nvml.h"

#include <dlfcn.h>

namespace ktune::cuda {

namespace {

using Result = int;  // nvmlReturn_t: 0 is success
using Device = void*;
constexpr int kClockSm = 1;  // NVML_CLOCK_SM
// Clock event reasons that hold the clock below what was asked for: SW power cap, HW slowdown,
// SW thermal, HW thermal, HW power brake. Idle, application clocks and sync boost are choices.
constexpr unsigned long long kLimits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct Library {
  Result (*init)() = nullptr;
  Result (*by_pci)(const char*, Device*) = nullptr;
  Result (*clock)(Device, int, unsigned*) = nullptr;
  Result (*power)(Device, unsigned*) = nullptr;
  Result (*reasons)(Device, unsigned long long*) = nullptr;
  std::string why;
};

template <class F>
bool resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

Library load() {
  Library l;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.why = std::string("libnvidia-ml.so.1 could not be loaded: ") + dlerror();
    return l;
  }
  // Renamed in CUDA 12.2; drivers keep the old name.
  if (!resolve(lib, "nvmlDeviceGetCurrentClocksEventReasons", l.reasons))
    resolve(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", l.reasons);
  if (!resolve(lib, "nvmlInit_v2", l.init) || !resolve(lib, "nvmlDeviceGetHandleByPciBusId_v2", l.by_pci) ||
      !resolve(lib, "nvmlDeviceGetClockInfo", l.clock) || !resolve(lib, "nvmlDeviceGetPowerUsage", l.power)) {
    l.why = "libnvidia-ml.so.1 lacks an entry point ktune reads (a driver older than CUDA 8's?)";
    l.init = nullptr;
    return l;
  }
  if (const Result r = l.init(); r != 0) {
    l.why = "nvmlInit failed (NVML error " + std::to_string(r) + ")";
    l.init = nullptr;
  }
  return l;
}

// Initialised once and never shut down: sessions come and go, the library stays.
const Library& library() {
  static const Library l = load();
  return l;
}

}  // namespace

std::optional<NvmlDevice> NvmlDevice::open(const std::string& pci_bus_id, std::string* why) {
  const Library& l = library();
  if (!l.init) {
    if (why) *why = l.why;
    return std::nullopt;
  }
  Device d = nullptr;
  if (const Result r = l.by_pci(pci_bus_id.c_str(), &d); r != 0) {
    if (why) *why = "NVML does not know the GPU at PCI " + pci_bus_id + " (NVML error " + std::to_string(r) + ")";
    return std::nullopt;
  }
  return NvmlDevice(d);
}

std::optional<ConditionsReading> NvmlDevice::read() const {
  const Library& l = library();
  unsigned mhz = 0, milliwatts = 0;
  if (l.clock(handle_, kClockSm, &mhz) != 0 || mhz == 0) return std::nullopt;
  ConditionsReading r;
  r.sm_clock_mhz = mhz;
  if (l.power(handle_, &milliwatts) == 0) r.power_w = milliwatts / 1000.0;
  unsigned long long reasons = 0;
  if (l.reasons && l.reasons(handle_, &reasons) == 0) r.clock_limited = (reasons & kLimits) != 0;
  return r;
}

}  // namespace ktune::cuda
