#include "driver.h"

#include <dlfcn.h>

#include <mutex>

#include "ktune/error.h"

namespace ktune::cuda {

namespace {

struct Loaded {
  Driver driver;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.why = std::string("libcuda.so.1 could not be loaded (no NVIDIA driver on this machine): ") + dlerror();
    return l;
  }
  // cuGetProcAddress returns the entry point matching the API version we were compiled
  // against (cuMemAlloc -> cuMemAlloc_v2), which dlsym by base name would not.
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    l.why = "the NVIDIA driver is too old (no cuGetProcAddress_v2): install a driver for CUDA 12 or newer";
    return l;
  }
  Driver& d = l.driver;
#define KTUNE_LOAD(name)                                                                                        \
  {                                                                                                             \
    void* p = nullptr;                                                                                          \
    CUdriverProcAddressQueryResult status{};                                                                    \
    std::string base = #name;                                                                                   \
    if (get_proc(base.c_str(), &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || !p) { \
      l.why = "the NVIDIA driver lacks " + base + " (driver older than the CUDA " +                             \
              std::to_string(CUDA_VERSION / 1000) + " toolkit ktune was built with?)";                          \
      return l;                                                                                                 \
    }                                                                                                           \
    d.name = reinterpret_cast<decltype(d.name)>(p);                                                             \
  }
  KTUNE_CUDA_DRIVER_FUNCTIONS(KTUNE_LOAD)
#undef KTUNE_LOAD
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    l.why = std::string("cuInit failed: ") + (name ? name : "unknown error") + " (no usable GPU or driver)";
    return l;
  }
  d.cuDriverGetVersion(&d.version);
  l.ok = true;
  return l;
}

}  // namespace

const Driver* driver(std::string* why) {
  static const Loaded loaded = load();
  if (why) *why = loaded.why;
  return loaded.ok ? &loaded.driver : nullptr;
}

const Driver& require_driver() {
  std::string why;
  const Driver* d = driver(&why);
  if (!d) throw RunError("CUDA unavailable: " + why);
  return *d;
}

bool sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

std::string error_text(CUresult r) {
  const Driver* d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d) {
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
         (text ? std::string(" (") + text + ")" : "");
}

}  // namespace ktune::cuda
