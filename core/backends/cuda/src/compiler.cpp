#include "compiler.h"

#include <nvrtc.h>

#include <chrono>
#include <memory>

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

}  // namespace

Compiler::Compiler(std::string arch, std::filesystem::path cache_dir)
    : arch_(std::move(arch)), cache_dir_(std::move(cache_dir)) {}

std::string Compiler::nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string Compiler::cache_key(const std::string& source, const std::vector<std::string>& options,
                                const std::vector<std::string>& entries, const std::string& arch,
                                const std::string& nvrtc_version) {
  return compile_cache_key(source, options, entries, arch, nvrtc_version);
}

CompiledModule Compiler::compile(const std::string& source, const std::string& name,
                                 const std::vector<std::string>& options,
                                 const std::vector<std::string>& entries) const {
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

  nvrtcProgram raw = nullptr;
  if (nvrtcCreateProgram(&raw, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
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

std::filesystem::path default_cache_dir() { return default_compile_cache_dir("cuda", "KTUNE_CUDA_CACHE"); }

}  // namespace ktune::cuda
