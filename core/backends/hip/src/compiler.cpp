#include "compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ktune/files.h"
#include "ktune/measurement.h"

extern char** environ;

namespace ktune::hip {

namespace {

constexpr const char* kCacheMagic = "ktune-hip-code-object-v1";

[[noreturn]] void compile_failure(const std::string& what, const std::string& log) {
  throw TrialFailure(TrialStatus::CompileError, what + (log.empty() ? "" : "\n" + log));
}

// A private scratch folder per compile, removed on every path out.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    static std::atomic<unsigned> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("ktune-hipcc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs argv with stdout and stderr into `log`; returns the exit status (-1: not started).
int run(const std::vector<std::string>& args, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// `source` and its headers into `dir` (a folder of their own: no header can be taken for hipcc's
// output), each header at its include name, where hipcc's quoted includes look; -I `dir` (the
// caller's) resolves a header's own includes from there too, as NVRTC's named headers are found.
// Returns the source's path.
std::filesystem::path write_program(const KernelSource& source, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& [name, text] : source.headers) {
    const std::filesystem::path at = (dir / name).lexically_normal();
    const auto inside = at.lexically_relative(dir);
    if (std::filesystem::path(name).is_absolute() || inside.empty() || *inside.begin() == "..")
      compile_failure("header \"" + name + "\" of " + source.file +
                          " would lie outside the folder hipcc compiles it in: include it by a path below the "
                          "spec's folder",
                      {});
    std::filesystem::create_directories(at.parent_path());
    write_file_atomic(at, text);
  }
  const auto src = dir / std::filesystem::path(source.file).filename();
  write_file_atomic(src, source.text);
  return src;
}

// ktune's own kernels (gpu::Toolchain::Utilities). ktune_compare as the CUDA one, with an atomic
// per thread instead of warp shuffles (the wavefront is 32 or 64 wide); ktune_reference_gemm: one
// thread per output element, f32 throughout, no tiling to get wrong.
constexpr const char* kUtilitySource = R"(#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
__device__ float ktune_load(const void* p, int type, size_t i) {
  if (type == 0) return __half2float(((const __half*)p)[i]);
  if (type == 1) return __uint_as_float((unsigned int)((const unsigned short*)p)[i] << 16);
  return ((const float*)p)[i];
}

extern "C" __global__ void ktune_compare(const void* got, int type, const float* want, unsigned int n, float atol,
                                         float rtol, unsigned long long* out) {
  unsigned long long bad = 0, worst = 0;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float g = ktune_load(got, type, i), w = want[i];
    const float err = (g != g || w != w) ? __uint_as_float(0x7f800000u) : fabsf(g - w);
    if (!(err <= atol + rtol * fabsf(w))) ++bad;
    const unsigned long long key = ((unsigned long long)__float_as_uint(err) << 32) | i;
    worst = key > worst ? key : worst;
  }
  if (bad) atomicAdd(&out[0], bad);
  if (worst) atomicMax(&out[1], worst);
}

extern "C" __global__ void ktune_reference_gemm(const void* A, const void* B, float* C, int M, int N, int K, int b_nk,
                                                int type) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N || m >= M) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k)
    acc += ktune_load(A, type, (size_t)m * K + k) * ktune_load(B, type, b_nk ? (size_t)n * K + k : (size_t)k * N + n);
  C[(size_t)m * N + n] = acc;
}
)";

}  // namespace

Compiler::Compiler(std::string target, std::filesystem::path cache_dir)
    : target_(std::move(target)), cache_dir_(std::move(cache_dir)) {}

std::string Compiler::hipcc() {
  if (const char* env = std::getenv("KTUNE_HIPCC"); env && *env) return env;
  return KTUNE_HIPCC_PATH;
}

std::string Compiler::version() {
  static std::once_flag once;
  static std::string v;
  std::call_once(once, [] {
    ScratchDir dir;
    const auto log = dir.path / "version.txt";
    if (run({hipcc(), "--version"}, log) != 0) {
      v = "unknown";
      return;
    }
    std::istringstream in(read_all(log));
    std::string line, hip, clang;
    while (std::getline(in, line)) {
      if (line.rfind("HIP version: ", 0) == 0) hip = line.substr(13);
      if (const auto p = line.find("clang version "); p != std::string::npos) clang = line.substr(p + 14);
    }
    v = "HIP " + (hip.empty() ? "?" : hip) + ", clang " + (clang.empty() ? "?" : clang);
  });
  return v;
}

CompiledModule Compiler::compile(const KernelSource& source, const std::vector<std::string>& options,
                                 const std::vector<std::string>& entries) const {
  const std::string& name = source.file;
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (const auto& e : entries)
    if (e.find_first_of("<>:( ") != std::string::npos)
      compile_failure("entry point '" + e + "' of " + name +
                          ": the hip backend launches extern \"C\" kernels by name; "
                          "declare it extern \"C\" and pick types with defines",
                      {});
  std::filesystem::path file;
  if (!cache_dir_.empty()) {
    file = cache_dir_ / (compile_cache_key(source, options, entries, target_, version()) + ".co");
    CompiledModule cached;
    if (read_compile_cache(file, kCacheMagic, entries.size(), cached)) {
      cached.from_cache = true;
      cached.seconds = elapsed();
      return cached;
    }
  }
  ScratchDir dir;
  const auto program = dir.path / "program";
  const auto src = write_program(source, program);
  const auto out = dir.path / "out.co";
  const auto log = dir.path / "log.txt";
  std::vector<std::string> args{hipcc(), "--genco", "--offload-arch=" + target_};
  if (!source.headers.empty()) args.push_back("-I" + program.string());
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {src.string(), "-o", out.string()});
  const int rc = run(args, log);
  CompiledModule m;
  m.log = read_all(log);
  if (rc != 0) {
    std::string flags;
    for (const auto& o : options) flags += " " + o;
    compile_failure(rc < 0 ? "could not start " + hipcc() + " (install hipcc or set KTUNE_HIPCC)"
                           : "hipcc failed (exit " + std::to_string(rc) + ") compiling " + name + " for " + target_ +
                                 " with" + flags,
                    m.log);
  }
  m.binary = read_all(out);
  if (m.binary.empty()) compile_failure("hipcc produced no code object for " + target_, m.log);
  m.lowered = entries;
  m.seconds = elapsed();
  if (!file.empty()) write_compile_cache(file, kCacheMagic, m);
  return m;
}

std::vector<std::string> Compiler::register_cap(std::uint64_t threads, const Variables&) const {
  if (threads == 0) return {};
  return {"--gpu-max-threads-per-block=" + std::to_string(threads)};
}

const gpu::Toolchain::Utilities& Compiler::utilities() const {
  static const Utilities u{{kUtilitySource, "ktune_utilities.hip", {}}, false};
  return u;
}

std::filesystem::path default_cache_dir() { return default_compile_cache_dir("hip", "KTUNE_HIP_CACHE"); }

}  // namespace ktune::hip
