#include "compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "cubin_info.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"

namespace ktune::cuda {

namespace {

// v2: every name is lowered through NVRTC (v1 kept plain names as written).
constexpr const char* kCacheMagic = "ktune-cubin-v2";

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

[[noreturn]] void compile_failure(const std::string& what, const std::string& log) {
  throw TrialFailure(TrialStatus::CompileError, what + (log.empty() ? "" : "\n" + log));
}

// ktune's own kernels (gpu::Toolchain::Utilities).
// ktune_clock_probe busy-waits `ns` nanoseconds of wall time on every block and records the SM
// cycles it took.
// ktune_compare validates an output on the device, so a config of a large problem costs no
// download and no host pass over its output. It counts the elements of `got` (0: f16, 1: bf16,
// 2: f32) outside atol + rtol*|want| (NaN never matches) and keeps the largest error: the error's
// bits in the high word (non-negative floats order like integers), its index in the low one.
constexpr const char* kUtilitySource = R"(
extern "C" __global__ void ktune_clock_probe(unsigned long long* out, unsigned long long ns) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); } while (t1 - t0 < ns);
  const long long c1 = clock64();
  if (threadIdx.x == 0) { out[2 * blockIdx.x] = c1 - c0; out[2 * blockIdx.x + 1] = t1 - t0; }
}

extern "C" __global__ void ktune_compare(const void* got, int type, const float* want, unsigned int n, float atol,
                                         float rtol, unsigned long long* out) {
  unsigned long long bad = 0, worst = 0;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float g;
    if (type == 0) asm("cvt.f32.f16 %0, %1;" : "=f"(g) : "h"(((const unsigned short*)got)[i]));
    else if (type == 1) g = __uint_as_float((unsigned int)((const unsigned short*)got)[i] << 16);
    else g = ((const float*)got)[i];
    const float w = want[i];
    const float err = (g != g || w != w) ? __uint_as_float(0x7f800000u) : fabsf(g - w);
    if (!(err <= atol + rtol * fabsf(w))) ++bad;
    const unsigned long long key = ((unsigned long long)__float_as_uint(err) << 32) | i;
    worst = key > worst ? key : worst;
  }
  for (int o = 16; o > 0; o >>= 1) {
    bad += __shfl_down_sync(0xffffffffu, bad, o);
    const unsigned long long w = __shfl_down_sync(0xffffffffu, worst, o);
    worst = w > worst ? w : worst;
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out[0], bad);
    atomicMax(&out[1], worst);
  }
}
)";

}  // namespace

Compiler::Compiler(std::string arch, std::filesystem::path cache_dir)
    : arch_(std::move(arch)), cache_dir_(std::move(cache_dir)) {}

std::string Compiler::nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string Compiler::cache_key(const KernelSource& source, const std::vector<std::string>& options,
                                const std::vector<std::string>& entries, const std::string& arch,
                                const std::string& nvrtc_version) {
  return compile_cache_key(source, options, entries, arch, nvrtc_version);
}

CompiledModule Compiler::compile(const KernelSource& source, const std::vector<std::string>& options,
                                 const std::vector<std::string>& entries) const {
  const std::string& name = source.file;
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::filesystem::path file;
  if (!cache_dir_.empty()) {
    file = cache_dir_ / (cache_key(source, options, entries, arch_, nvrtc_version()) + ".cubin");
    CompiledModule cached;
    if (read_compile_cache(file, kCacheMagic, entries.size(), cached)) {
      cached.from_cache = true;
      cached.seconds = elapsed();
      return cached;
    }
  }

  std::vector<const char*> headers, include_names;
  for (const auto& [include_name, text] : source.headers) {
    include_names.push_back(include_name.c_str());
    headers.push_back(text.c_str());
  }
  nvrtcProgram raw = nullptr;
  if (nvrtcCreateProgram(&raw, source.text.c_str(), name.c_str(), static_cast<int>(headers.size()), headers.data(),
                         include_names.data()) != NVRTC_SUCCESS)
    compile_failure("nvrtcCreateProgram failed for " + name, {});
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> prog(raw);
  // Every name goes through NVRTC's name expressions: a C++ kernel (mangled), a template
  // instance ("gemm<float, 4>"), a __constant__ symbol in a namespace, and extern "C" names alike
  // (those lower to themselves).
  for (const auto& e : entries) nvrtcAddNameExpression(raw, e.c_str());

  std::vector<std::string> opts{"--gpu-architecture=" + arch_, "-default-device"};
#ifdef KTUNE_CUDA_INCLUDE_DIR
  opts.push_back("-I" KTUNE_CUDA_INCLUDE_DIR);
#endif
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());

  CompiledModule m;
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(raw, &log_size);
  if (log_size > 1) {
    m.log.resize(log_size);
    nvrtcGetProgramLog(raw, m.log.data());
    m.log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS) {
    std::string flags;
    for (const auto& o : options) flags += " " + o;
    compile_failure(std::string("NVRTC: ") + nvrtcGetErrorString(r) + " compiling " + name + " with" + flags, m.log);
  }
  std::size_t size = 0;
  if (nvrtcGetCUBINSize(raw, &size) != NVRTC_SUCCESS || size == 0)
    compile_failure(
        "NVRTC produced no cubin for " + arch_ + " (is the architecture supported by NVRTC " + nvrtc_version() + "?)",
        m.log);
  m.binary.resize(size);
  nvrtcGetCUBIN(raw, m.binary.data());
  for (const auto& e : entries) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(raw, e.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
      compile_failure("'" + e + "' names no kernel or __constant__ symbol of " + name +
                          " (a template needs its arguments: \"gemm<float, 4>\")",
                      m.log);
    m.lowered.push_back(lowered);
  }
  m.seconds = elapsed();
  if (!file.empty()) write_compile_cache(file, kCacheMagic, m);
  return m;
}

std::vector<std::string> Compiler::register_cap(std::uint64_t threads, const Variables& device) const {
  const auto it = device.find("regs_per_block");
  if (it == device.end() || it->second <= 0 || threads == 0) return {};
  const std::uint64_t cap = kNvidiaRegisters.cap(threads, static_cast<std::uint64_t>(it->second));
  if (cap >= static_cast<std::uint64_t>(kNvidiaRegisters.max_per_thread)) return {};
  return {"--maxrregcount=" + std::to_string(std::max<std::uint64_t>(cap, 16))};
}

gpu::ModuleInfo Compiler::inspect(const std::string& binary) const { return parse_cubin(binary); }

const gpu::Toolchain::Utilities& Compiler::utilities() const {
  static const Utilities u{{kUtilitySource, "ktune_utilities.cu", {}}, true};
  return u;
}

std::filesystem::path default_cache_dir() { return default_compile_cache_dir("cuda", "KTUNE_CUDA_CACHE"); }

}  // namespace ktune::cuda
