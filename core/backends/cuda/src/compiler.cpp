#include "compiler.h"

#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"

namespace ktune::cuda {

namespace {

constexpr const char* kCacheMagic = "ktune-cubin-v1";

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Cache file: magic line, one line per lowered entry name, a blank line, then the cubin.
bool read_cache(const std::filesystem::path& file, std::size_t entries, CompiledModule& out) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::string line;
  if (!std::getline(in, line) || line != kCacheMagic) return false;
  std::vector<std::string> lowered;
  while (std::getline(in, line) && !line.empty()) lowered.push_back(line);
  if (lowered.size() != entries) return false;
  std::ostringstream os;
  os << in.rdbuf();
  if (os.str().empty()) return false;
  out.cubin = os.str();
  out.lowered = std::move(lowered);
  return true;
}

// Atomic: concurrent compiles of one config (two processes) never leave a torn file.
void write_cache(const std::filesystem::path& file, const CompiledModule& m) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // a read-only cache costs time, not correctness
    out << kCacheMagic << '\n';
    for (const auto& l : m.lowered) out << l << '\n';
    out << '\n';
    out.write(m.cubin.data(), static_cast<std::streamsize>(m.cubin.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

[[noreturn]] void compile_failure(const std::string& what, const std::string& log) {
  throw TrialFailure(TrialStatus::CompileError, what + (log.empty() ? "" : "\n" + log));
}

}  // namespace

Compiler::Compiler(std::string arch, std::filesystem::path cache_dir) : arch_(std::move(arch)), cache_dir_(std::move(cache_dir)) {}

std::string Compiler::nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string Compiler::cache_key(const std::string& source, const std::vector<std::string>& options,
                                const std::vector<std::string>& entries, const std::string& arch,
                                const std::string& nvrtc_version) {
  // Length-prefixed fields: ("ab","c") and ("a","bc") must not collide.
  std::string text;
  auto add = [&](const std::string& s) { text += std::to_string(s.size()) + ":" + s + ";"; };
  add(arch);
  add(nvrtc_version);
  add(source);
  add(std::to_string(options.size()));
  for (const auto& o : options) add(o);
  add(std::to_string(entries.size()));
  for (const auto& e : entries) add(e);
  // Two independent 64-bit hashes: a 128-bit name makes accidental collisions negligible.
  return hex64(fnv1a64(text)) + hex64(fnv1a64(text, 0x84222325cbf29ce4ULL));
}

CompiledModule Compiler::compile(const std::string& source, const std::string& name, const std::vector<std::string>& options,
                                 const std::vector<std::string>& entries) const {
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::filesystem::path file;
  if (!cache_dir_.empty()) {
    file = cache_dir_ / (cache_key(source, options, entries, arch_, nvrtc_version()) + ".cubin");
    CompiledModule cached;
    if (read_cache(file, entries.size(), cached)) {
      cached.from_cache = true;
      cached.seconds = elapsed();
      return cached;
    }
  }

  nvrtcProgram raw = nullptr;
  if (nvrtcCreateProgram(&raw, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    compile_failure("nvrtcCreateProgram failed for " + name, {});
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> prog(raw);
  for (const auto& e : entries)
    if (e.find('<') != std::string::npos) nvrtcAddNameExpression(raw, e.c_str());

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
    compile_failure("NVRTC produced no cubin for " + arch_ + " (is the architecture supported by NVRTC " + nvrtc_version() + "?)", m.log);
  m.cubin.resize(size);
  nvrtcGetCUBIN(raw, m.cubin.data());
  for (const auto& e : entries) {
    if (e.find('<') == std::string::npos) {
      m.lowered.push_back(e);
      continue;
    }
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(raw, e.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
      compile_failure("entry point " + e + " was not instantiated in " + name, m.log);
    m.lowered.push_back(lowered);
  }
  m.seconds = elapsed();
  if (!file.empty()) write_cache(file, m);
  return m;
}

std::filesystem::path default_cache_dir() {
  if (const char* env = std::getenv("KTUNE_CUDA_CACHE"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "ktune" / "cuda";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "ktune" / "cuda";
  return std::filesystem::temp_directory_path() / "ktune-cuda-cache";
}

}  // namespace ktune::cuda
