#include "session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "host_data.h"
#include "ktune/error.h"

namespace ktune::cuda {

namespace {

using Clock = std::chrono::steady_clock;

// The session's own kernels.
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

cudaDataType cuda_type(ElemType t, const std::string& what) {
  switch (t) {
    case ElemType::F16: return CUDA_R_16F;
    case ElemType::BF16: return CUDA_R_16BF;
    case ElemType::F32: return CUDA_R_32F;
    default: throw InputError(what + ": cuBLAS reference needs f16, bf16 or f32 data, not " + to_string(t));
  }
}

CUtensorMapDataType tensor_map_type(ElemType t) {
  switch (t) {
    case ElemType::F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case ElemType::BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case ElemType::F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case ElemType::F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case ElemType::I8:
    case ElemType::U8: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case ElemType::I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case ElemType::U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case ElemType::I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

void check_cublas(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw TrialFailure(TrialStatus::LaunchError, what + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

bool no_deadline(Clock::time_point t) { return t == Clock::time_point{}; }

}  // namespace

// ---------------------------------------------------------------------------------------------
DeviceContext::DeviceContext(const Driver& driver, int index) : d(driver) {
  check(d.cuDeviceGet(&device, index), "cuDeviceGet");
  check(d.cuCtxCreate(&ctx, nullptr, 0, device), "cuCtxCreate");
}

DeviceContext::~DeviceContext() {
  if (ctx) d.cuCtxDestroy(ctx);
}

void DeviceContext::make_current() const { check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); }

bool DeviceContext::reset() {
  std::unique_lock lock(mutex);
  const CUresult destroyed = d.cuCtxDestroy(ctx);
  ctx = nullptr;
  const CUresult created = d.cuCtxCreate(&ctx, nullptr, 0, device);
  ++generation;
  if (created != CUDA_SUCCESS) {
    ctx = nullptr;
    lost = "after a faulting kernel the driver refuses a new context (destroying the old one: " + error_text(destroyed) +
           "; creating one: " + error_text(created) + ")";
    return false;
  }
  make_current();
  return true;
}

void DeviceContext::check_usable() const {
  if (!lost.empty())
    throw RunError("the GPU is unusable in this process: " + lost + "; resume the run in a new process (ktune tune --resume)");
}

Launchable::~Launchable() { drop_graph(); }

void Launchable::drop_graph() {
  if (graph && dev && graph_generation == dev->generation) dev->d.cuGraphExecDestroy(graph);
  graph = nullptr;
  graph_generation = -1;
}

// ---------------------------------------------------------------------------------------------
// A compiled config of the spec.
class SpecKernel final : public Launchable {
 public:
  Config config;
  CompiledModule compiled;
  std::vector<LaunchGeometry> geometry;                              // active launches only
  std::vector<std::vector<std::string>> launch_args;
  std::map<std::string, std::uint64_t> scalars;                       // raw 8-byte slots
  // A tensor map argument sized for this config, and its encodings per input copy.
  struct TensorMapArg {
    std::string tensor;
    ElemType type{};
    int swizzle = 0;
    std::vector<cuuint64_t> dims;
    std::vector<cuuint32_t> box;
    std::map<int, std::pair<CUdeviceptr, CUtensorMap>> encoded;
  };
  std::map<std::string, TensorMapArg> tensor_maps;
  std::vector<std::pair<std::string, std::size_t>> workspace_bytes;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  int generation = -1;

  ~SpecKernel() override {
    drop_graph();
    if (module && dev && generation == dev->generation) dev->d.cuModuleUnload(module);
  }

  // Loads the cubin and checks each launch against the function's real limits (registers and
  // launch bounds cap the threads; shared memory is static + dynamic).
  void load(const Session& s) {
    const Driver& d = dev->d;
    CUmodule m = nullptr;
    check(d.cuModuleLoadData(&m, compiled.cubin.data()), "cuModuleLoadData");
    std::vector<CUfunction> fns;
    try {
      const double optin = s.device_vars().count("smem_per_block_optin") ? s.device_vars().at("smem_per_block_optin") : 49152;
      for (std::size_t i = 0; i < geometry.size(); ++i) {
        const auto& g = geometry[i];
        CUfunction f = nullptr;
        check(d.cuModuleGetFunction(&f, m, compiled.lowered[i].c_str()), "cuModuleGetFunction " + g.entry);
        int max_threads = 0, static_smem = 0, regs = 0;
        d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
        d.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
        d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        if (g.threads() > static_cast<std::uint64_t>(max_threads))
          throw TrialFailure(TrialStatus::LaunchError,
                             g.entry + ": " + std::to_string(g.threads()) + " threads per block, but with " + std::to_string(regs) +
                                 " registers per thread (and its launch bounds) at most " + std::to_string(max_threads) + " fit");
        if (static_cast<double>(g.shared_bytes) + static_smem > optin)
          throw TrialFailure(TrialStatus::LaunchError,
                             g.entry + ": needs " + std::to_string(g.shared_bytes) + " bytes of dynamic + " +
                                 std::to_string(static_smem) + " static shared memory, the device allows " +
                                 std::to_string(static_cast<long long>(optin)) + " per block");
        if (g.shared_bytes > 48 * 1024) {
          const CUresult r = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(g.shared_bytes));
          if (r != CUDA_SUCCESS)
            throw TrialFailure(TrialStatus::LaunchError, g.entry + ": cannot raise dynamic shared memory to " +
                                                             std::to_string(g.shared_bytes) + " bytes: " + error_text(r));
        }
        fns.push_back(f);
      }
    } catch (...) {
      d.cuModuleUnload(m);
      throw;
    }
    module = m;
    functions = std::move(fns);
    generation = dev->generation;
  }

  void ensure_loaded(Session& s) override {
    if (generation != dev->generation) {
      module = nullptr;
      load(s);
    }
    for (const auto& [name, bytes] : workspace_bytes) s.ensure_workspace(name, bytes);
  }

  // Encoded once per buffer: the per-launch timing must not wait on the host between its events.
  const CUtensorMap& tensor_map(Session& s, const std::string& name, TensorMapArg& t, int copy) {
    const CUdeviceptr ptr = s.buffer(t.tensor, copy);
    auto& [encoded_ptr, map] = t.encoded[copy];
    if (encoded_ptr == ptr) return map;
    // Row-major: each dimension's stride is the product of the ones inside it.
    const std::size_t rank = t.dims.size();
    std::vector<cuuint64_t> strides;
    std::vector<cuuint32_t> element_strides(rank, 1);
    cuuint64_t stride = elem_size(t.type);
    for (std::size_t i = 0; i + 1 < rank; ++i) strides.push_back(stride *= t.dims[i]);
    const CUresult r = s.d().cuTensorMapEncodeTiled(
        &map, tensor_map_type(t.type), static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(ptr), t.dims.data(), strides.data(),
        t.box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, tensor_map_swizzle(t.swizzle),
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      throw TrialFailure(TrialStatus::LaunchError,
                         "tensor map " + name + " over " + t.tensor + ": the driver rejects it (" + error_text(r) +
                             "); rows must be 16-byte aligned, boxes at most 256 elements a side and, when swizzled, "
                             "the inner box no wider than the swizzle span");
    encoded_ptr = ptr;
    return map;
  }

  void enqueue(Session& s, int copy) override {
    const Driver& d = s.d();
    for (std::size_t i = 0; i < geometry.size(); ++i) {
      const auto& g = geometry[i];
      std::vector<CUdeviceptr> ptrs(launch_args[i].size());
      std::vector<void*> params(launch_args[i].size());
      for (std::size_t a = 0; a < launch_args[i].size(); ++a) {
        const std::string& name = launch_args[i][a];
        if (auto it = scalars.find(name); it != scalars.end()) {
          params[a] = &it->second;
        } else if (auto tm = tensor_maps.find(name); tm != tensor_maps.end()) {
          params[a] = const_cast<CUtensorMap*>(&tensor_map(s, name, tm->second, copy));
        } else {
          ptrs[a] = s.buffer(name, copy);
          params[a] = &ptrs[a];
        }
      }
      check(d.cuLaunchKernel(functions[i], static_cast<unsigned>(g.grid[0]), static_cast<unsigned>(g.grid[1]),
                             static_cast<unsigned>(g.grid[2]), static_cast<unsigned>(g.block[0]), static_cast<unsigned>(g.block[1]),
                             static_cast<unsigned>(g.block[2]), static_cast<unsigned>(g.shared_bytes), s.stream(), params.data(), nullptr),
            "cuLaunchKernel " + g.entry);
    }
  }
};

// cuBLAS computing the same product as the family's kernels: the baseline every config is compared with.
class CublasKernel final : public Launchable {
 public:
  cublasOperation_t op_b = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0, ldb = 0;
  cudaDataType type_a{}, type_b{};
  std::string a, b;    // buffer names; b empty when B is the session's converted copy
  CUdeviceptr converted_b = 0;
  CUdeviceptr c = 0;

  void enqueue(Session& s, int copy) override {
    cublasHandle_t h = s.cublas();
    const float alpha = 1.f, beta = 0.f;
    const CUdeviceptr bp = b.empty() ? converted_b : s.buffer(b, copy);
    // Row-major C = A*B is column-major C^T = B^T * A^T.
    check_cublas(cublasGemmEx(h, op_b, CUBLAS_OP_N, n, m, k, &alpha, reinterpret_cast<const void*>(bp), type_b, ldb,
                              reinterpret_cast<const void*>(s.buffer(a, copy)), type_a, k, &beta, reinterpret_cast<void*>(c),
                              type_a, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
};

// ---------------------------------------------------------------------------------------------
Session::Session(std::shared_ptr<DeviceContext> dev, const DeviceInfo& info, std::shared_ptr<const KernelSpec> spec,
                 Problem problem, std::uint64_t seed, std::shared_ptr<const Compiler> compiler)
    : dev_(std::move(dev)),
      info_(info),
      device_vars_(info.variables()),
      spec_(std::move(spec)),
      problem_(std::move(problem)),
      seed_(seed),
      compiler_(std::move(compiler)),
      sizing_config_(spec_->family().default_config) {
  dev_->make_current();
  create_stream_and_events();
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer() || a.role != ArgRole::Input) continue;
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::uint64_t count = spec_->arg_count(a, problem_, sizing_config_, device_vars_);
    host_inputs_[a.name] = {t, generate(t, count, a.init, seed_ ^ fnv1a64(problem_.key() + "/" + a.name))};
  }
  allocate_buffers();
  compute_reference();
}

Session::~Session() {
  if (!dev_->lost.empty()) return;  // the context and every handle are gone
  d().cuCtxSetCurrent(dev_->ctx);
  if (cublas_ && cublas_generation_ == dev_->generation) cublasDestroy(cublas_);
  if (utility_module_ && utility_generation_ == dev_->generation) d().cuModuleUnload(utility_module_);
  release_buffers();
  destroy_stream_and_events();
}

void Session::create_stream_and_events() {
  check(d().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(d().cuEventCreate(&ev_start_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(d().cuEventCreate(&ev_stop_, CU_EVENT_DEFAULT), "cuEventCreate");
}

void Session::destroy_stream_and_events() {
  for (auto& [a, b] : launch_events_) {
    d().cuEventDestroy(a);
    d().cuEventDestroy(b);
  }
  launch_events_.clear();
  if (ev_start_) d().cuEventDestroy(ev_start_);
  if (ev_stop_) d().cuEventDestroy(ev_stop_);
  if (stream_) d().cuStreamDestroy(stream_);
  ev_start_ = ev_stop_ = nullptr;
  stream_ = nullptr;
}

namespace {
Buffer alloc(const Driver& d, std::size_t bytes, const std::string& what) {
  Buffer b;
  b.bytes = std::max<std::size_t>(bytes, 16);
  const CUresult r = d.cuMemAlloc(&b.ptr, b.bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw RunError("not enough GPU memory for " + what + " (" + std::to_string(bytes >> 20) + " MiB): use a smaller problem");
  check(r, "cuMemAlloc " + what);
  return b;
}
}  // namespace

void Session::allocate_buffers() {
  ++epoch_;
  copies_.assign(1, {});
  auto& main = copies_[0];
  for (const auto& a : spec_->arguments()) {
    if (!a.is_buffer() || a.role == ArgRole::Workspace) continue;
    const ElemType t = spec_->arg_type(a, problem_, sizing_config_);
    const std::size_t bytes = spec_->arg_count(a, problem_, sizing_config_, device_vars_) * elem_size(t);
    main[a.name] = alloc(d(), bytes, "buffer " + a.name);
    if (auto it = host_inputs_.find(a.name); it != host_inputs_.end())
      upload(main[a.name].ptr, it->second.data.data(), it->second.data.size(), "upload " + a.name);
  }
}

void Session::release_buffers() {
  for (auto& copy : copies_)
    for (auto& [name, b] : copy) d().cuMemFree(b.ptr);
  copies_.clear();
  for (auto& [name, b] : workspaces_) d().cuMemFree(b.ptr);
  workspaces_.clear();
  for (Buffer* b : {&flush_, &ref_b_, &ref_dev_, &compare_out_, &baseline_c_, &cublas_ws_})
    if (b->ptr) d().cuMemFree(b->ptr), *b = {};
}

CUdeviceptr Session::buffer(const std::string& name, int copy) const {
  if (auto it = workspaces_.find(name); it != workspaces_.end()) return it->second.ptr;
  if (copy > 0 && copy < static_cast<int>(copies_.size()))
    if (auto it = copies_[copy].find(name); it != copies_[copy].end()) return it->second.ptr;
  if (auto it = copies_[0].find(name); it != copies_[0].end()) return it->second.ptr;
  throw InputError("argument " + name + " of " + spec_->family().name + " has no buffer (workspace not sized?)");
}

void Session::ensure_workspace(const std::string& name, std::size_t bytes) {
  auto& b = workspaces_[name];
  if (b.bytes >= bytes && b.ptr) return;
  if (b.ptr) d().cuMemFree(b.ptr);
  ++epoch_;
  b = alloc(d(), bytes, "workspace " + name);
  check(d().cuMemsetD8Async(b.ptr, 0, b.bytes, stream_), "clear workspace " + name);
}

void Session::upload(CUdeviceptr dst, const void* src, std::size_t bytes, const std::string& what) {
  check(d().cuMemcpyHtoDAsync(dst, src, bytes, stream_), what);
  check(d().cuStreamSynchronize(stream_), what);  // `src` may go away once this returns
}

void Session::zero_workspaces() {
  for (const auto& a : spec_->arguments())
    if (a.role == ArgRole::Workspace && a.init.kind == ArgInit::Kind::Zero)
      if (auto it = workspaces_.find(a.name); it != workspaces_.end())
        check(d().cuMemsetD8Async(it->second.ptr, 0, it->second.bytes, stream_), "clear workspace " + a.name);
}

int Session::copies_for_rotation() const {
  std::size_t bytes = 0;
  for (const auto& [name, h] : host_inputs_) bytes += h.data.size();
  const double l2 = info_.property("l2_bytes", 64.0 * 1024 * 1024);
  const int wanted = static_cast<int>(std::ceil(3 * l2 / static_cast<double>(std::max<std::size_t>(bytes, 1))));
  const int by_memory = static_cast<int>((std::size_t{4} << 30) / std::max<std::size_t>(bytes, 1));
  return std::clamp(std::min(wanted, by_memory), 2, 64);
}

void Session::ensure_copies(int copies) {
  while (static_cast<int>(copies_.size()) < copies) {
    std::map<std::string, Buffer> copy;
    for (const auto& [name, h] : host_inputs_) {
      copy[name] = alloc(d(), h.data.size(), "rotating copy of " + name);
      upload(copy[name].ptr, h.data.data(), h.data.size(), "upload copy of " + name);
    }
    copies_.push_back(std::move(copy));
    ++epoch_;
  }
}

cublasHandle_t Session::cublas() {
  if (cublas_ && cublas_generation_ == dev_->generation) return cublas_;
  cublas_ = nullptr;
  check_cublas(cublasCreate(&cublas_), "cublasCreate");
  cublas_generation_ = dev_->generation;
  // A fixed workspace keeps cuBLAS from allocating while a graph is being captured.
  if (!cublas_ws_.ptr) cublas_ws_ = alloc(d(), 32u << 20, "cuBLAS workspace");
  check_cublas(cublasSetWorkspace(cublas_, reinterpret_cast<void*>(cublas_ws_.ptr), cublas_ws_.bytes), "cublasSetWorkspace");
  check_cublas(cublasSetStream(cublas_, stream_), "cublasSetStream");
  return cublas_;
}

void Session::compute_reference() {
  const auto& ref = spec_->reference();
  const SpecArgument& out = spec_->output();
  const ElemType out_type = spec_->arg_type(out, problem_, sizing_config_);
  const std::size_t out_count = spec_->arg_count(out, problem_, sizing_config_, device_vars_);
  if (ref.kind == "none") return;
  if (ref.kind == "config") {
    auto k = prepare(ref.config);
    auto& kernel = static_cast<Launchable&>(*k);
    kernel.ensure_loaded(*this);
    zero_workspaces();
    kernel.enqueue(*this, 0);
    check(d().cuStreamSynchronize(stream_), "reference config " + ref.config.key());
    std::vector<unsigned char> host(out_count * elem_size(out_type));
    check(d().cuMemcpyDtoH(host.data(), buffer(out.name, 0), host.size()), "download reference");
    reference_.resize(out_count);
    for (std::size_t i = 0; i < out_count; ++i) reference_[i] = load_elem(host.data(), out_type, i);
    return;
  }
  // cublas_gemm: f32 output, so the reference carries no rounding of its own.
  auto f = ref.fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, device_vars_);
  const int m = static_cast<int>(Expression(f["m"]).eval(vars));
  const int n = static_cast<int>(Expression(f["n"]).eval(vars));
  const int k = static_cast<int>(Expression(f["k"]).eval(vars));
  if (static_cast<std::size_t>(m) * n != out_count)
    throw InputError(spec_->family().source + ": reference m*n (" + std::to_string(m) + "*" + std::to_string(n) +
                     ") differs from the output's element count " + std::to_string(out_count));
  const auto baseline = make_cublas();
  Buffer raw = alloc(d(), static_cast<std::size_t>(m) * n * 4, "reference output");
  const float alpha = 1.f, beta = 0.f;
  const CUdeviceptr bp = baseline->b.empty() ? baseline->converted_b : buffer(baseline->b, 0);
  check_cublas(cublasGemmEx(cublas(), baseline->op_b, CUBLAS_OP_N, n, m, k, &alpha, reinterpret_cast<const void*>(bp),
                            baseline->type_b, baseline->ldb, reinterpret_cast<const void*>(buffer(baseline->a, 0)),
                            baseline->type_a, k, &beta, reinterpret_cast<void*>(raw.ptr), CUDA_R_32F, n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (reference)");
  check(d().cuStreamSynchronize(stream_), "reference gemm");
  std::vector<float> host(static_cast<std::size_t>(m) * n);
  const CUresult r = d().cuMemcpyDtoH(host.data(), raw.ptr, host.size() * 4);
  d().cuMemFree(raw.ptr);  // compare_on_device uploads the final (scaled) reference
  check(r, "download reference");
  reference_.assign(host.begin(), host.end());
  if (auto it = f.find("b_scale"); it != f.end()) {
    const auto& scale = host_inputs_.at(it->second);
    for (std::size_t row = 0; row < static_cast<std::size_t>(m); ++row)
      for (std::size_t col = 0; col < static_cast<std::size_t>(n); ++col)
        reference_[row * n + col] *= load_elem(scale.data.data(), scale.type, col);
  }
}

std::unique_ptr<PreparedKernel> Session::prepare_baseline() {
  if (spec_->reference().kind != "cublas_gemm") return nullptr;
  return make_cublas();
}

std::unique_ptr<CublasKernel> Session::make_cublas() {
  auto f = spec_->reference().fields;
  const Variables vars = spec_->variables(problem_, sizing_config_, device_vars_);
  auto k = std::make_unique<CublasKernel>();
  k->dev = dev_;
  k->m = static_cast<int>(Expression(f["m"]).eval(vars));
  k->n = static_cast<int>(Expression(f["n"]).eval(vars));
  k->k = static_cast<int>(Expression(f["k"]).eval(vars));
  k->a = f["a"];
  const auto& a_in = host_inputs_.at(k->a);
  k->type_a = cuda_type(a_in.type, "reference.a");
  const auto& b_in = host_inputs_.at(f["b"]);
  const bool nk = f.count("b_layout") && f["b_layout"] == "nk";
  k->op_b = nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  k->ldb = nk ? k->k : k->n;
  if (b_in.type == a_in.type) {
    k->b = f["b"];
    k->type_b = k->type_a;
  } else {
    // Integer weights (w8a16): cuBLAS multiplies them converted to A's type, which is exact for
    // 8-bit values; the per-channel scale is applied to the reference on the host.
    if (!ref_b_.ptr) {
      const std::size_t count = b_in.data.size() / elem_size(b_in.type);
      std::vector<unsigned char> conv(count * elem_size(a_in.type));
      for (std::size_t i = 0; i < count; ++i) store_elem(conv.data(), a_in.type, i, load_elem(b_in.data.data(), b_in.type, i));
      ref_b_ = alloc(d(), conv.size(), "converted reference B");
      upload(ref_b_.ptr, conv.data(), conv.size(), "upload converted B");
    }
    k->converted_b = ref_b_.ptr;
    k->type_b = k->type_a;
  }
  if (!baseline_c_.ptr) baseline_c_ = alloc(d(), static_cast<std::size_t>(k->m) * k->n * elem_size(a_in.type), "baseline output");
  k->c = baseline_c_.ptr;
  return k;
}

std::string Session::baseline_name() const { return spec_->reference().kind == "cublas_gemm" ? "cuBLAS" : ""; }

std::unique_ptr<PreparedKernel> Session::prepare(const Config& config) {
  dev_->check_usable();
  auto k = std::make_unique<SpecKernel>();
  k->dev = dev_;
  k->config = config;
  std::vector<std::string> entries;
  try {
    for (const auto& l : spec_->launches()) {
      LaunchGeometry g = spec_->geometry(l, problem_, config, device_vars_);
      if (!g.active) continue;
      for (int i = 0; i < 3; ++i)
        if (g.grid[i] == 0 || g.block[i] == 0)
          throw TrialFailure(TrialStatus::LaunchError, g.entry + ": empty grid or block for this problem");
      entries.push_back(g.entry);
      k->geometry.push_back(g);
      k->launch_args.push_back(l.args);
    }
    const Variables vars = spec_->variables(problem_, config, device_vars_);
    for (const auto& a : spec_->arguments()) {
      if (a.is_buffer()) {
        if (a.role == ArgRole::Workspace)
          k->workspace_bytes.emplace_back(a.name, spec_->arg_count(a, problem_, config, device_vars_) *
                                                      elem_size(spec_->arg_type(a, problem_, config)));
        continue;
      }
      if (a.kind == SpecArgument::Kind::TensorMap) {
        auto& t = k->tensor_maps[a.name];
        t.tensor = a.tensor;
        t.type = spec_->arg_type(a, problem_, config);
        t.swizzle = a.swizzle;
        for (const auto& e : a.dims) t.dims.push_back(static_cast<cuuint64_t>(Expression(e).eval(vars)));
        for (const auto& e : a.box) t.box.push_back(static_cast<cuuint32_t>(Expression(e).eval(vars)));
        continue;
      }
      const double v = Expression(a.value).eval(vars);
      std::uint64_t slot = 0;
      switch (spec_->arg_type(a, problem_, config)) {
        case ElemType::I32: { const auto x = static_cast<std::int32_t>(v); std::memcpy(&slot, &x, 4); break; }
        case ElemType::U32: { const auto x = static_cast<std::uint32_t>(v); std::memcpy(&slot, &x, 4); break; }
        case ElemType::F32: { const auto x = static_cast<float>(v); std::memcpy(&slot, &x, 4); break; }
        case ElemType::I64: { const auto x = static_cast<std::int64_t>(v); std::memcpy(&slot, &x, 8); break; }
        case ElemType::F64: std::memcpy(&slot, &v, 8); break;
        default: throw InputError("scalar " + a.name + ": use i32, u32, f32, i64 or f64");
      }
      k->scalars[a.name] = slot;
    }
  } catch (const InputError& e) {
    throw TrialFailure(TrialStatus::LaunchError, std::string("cannot size this config: ") + e.what());
  }
  if (k->geometry.empty()) throw TrialFailure(TrialStatus::LaunchError, "no launch is active for this config");
  k->compiled = compiler_->compile(spec_->source(), spec_->source_file().filename().string(),
                                   spec_->compile_options(problem_, config), entries);
  k->compile_time_s = k->compiled.seconds;
  std::shared_lock lock(dev_->mutex);
  dev_->make_current();
  try {
    k->load(*this);
  } catch (const DriverError& e) {
    throw TrialFailure(TrialStatus::LaunchError, std::string("loading the module: ") + e.what());
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
template <class F>
auto Session::guarded(const std::string& what, F&& fn) -> decltype(fn()) {
  dev_->check_usable();
  try {
    return fn();
  } catch (const DriverError& e) {
    if (!e.sticky()) throw TrialFailure(TrialStatus::LaunchError, what + ": " + e.what());
    const std::string message = what + ": " + e.what();
    if (recover()) throw TrialFailure(TrialStatus::Crashed, message + " (the context was reset and the run goes on)");
    throw TrialFailure(TrialStatus::Crashed, message + "; " + dev_->lost + ": resume the run in a new process (--resume)");
  }
}

bool Session::recover() {
  ++recoveries_;
  // Every handle of the faulted context dies with it; only host state survives.
  if (cublas_) cublasDestroy(cublas_);
  cublas_ = nullptr;
  copies_.clear();
  workspaces_.clear();
  flush_ = ref_b_ = ref_dev_ = compare_out_ = baseline_c_ = cublas_ws_ = {};
  launch_events_.clear();
  stream_ = nullptr;
  ev_start_ = ev_stop_ = nullptr;
  if (!dev_->reset()) return false;
  create_stream_and_events();
  allocate_buffers();
  return true;
}

void Session::wait(CUevent event, Clock::time_point deadline, const std::string& what) {
  for (int spins = 0;; ++spins) {
    const CUresult r = d().cuEventQuery(event);
    if (r == CUDA_SUCCESS) return;
    if (r != CUDA_ERROR_NOT_READY) check(r, what);
    if (!no_deadline(deadline) && Clock::now() > deadline) {
      check(d().cuStreamSynchronize(stream_), what);
      throw TrialFailure(TrialStatus::Timeout, what + ": still running at the time cap");
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Validation Session::validate(PreparedKernel& kernel, const Tolerance& tol) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  const SpecArgument& out = spec_->output();
  const ElemType type = spec_->arg_type(out, problem_, sizing_config_);
  std::optional<Comparison> on_device;
  std::vector<unsigned char> host;
  guarded("validation run", [&] {
    k.ensure_loaded(*this);
    zero_workspaces();
    const CUdeviceptr ptr = buffer(out.name, 0);
    const std::size_t bytes = copies_[0].at(out.name).bytes;
    // Poison (NaN for floats): an element the kernel never writes cannot pass.
    check(d().cuMemsetD8Async(ptr, 0xff, bytes, stream_), "poison output");
    k.enqueue(*this, 0);
    check(d().cuEventRecord(ev_stop_, stream_), "cuEventRecord");
    wait(ev_stop_, Clock::now() + std::chrono::seconds(60), "validation run");
    if (reference_.empty()) return;
    on_device = compare_on_device(ptr, type, tol);
    if (on_device) return;
    host.resize(bytes);
    check(d().cuMemcpyDtoH(host.data(), ptr, bytes), "download output");
  });
  if (reference_.empty()) return {};
  const Comparison c = on_device ? *on_device : compare(host.data(), type, reference_, tol);
  if (c.validation.mismatch_fraction > tol.max_mismatch_fraction) {
    throw TrialFailure(TrialStatus::WrongResult,
                       "output differs from " + (spec_->reference().kind == "cublas_gemm" ? std::string("cuBLAS") : "the reference") +
                           ": " + std::to_string(c.mismatches) + " of " + std::to_string(reference_.size()) + " elements (" +
                           std::to_string(100 * c.validation.mismatch_fraction) + "%) beyond atol " + std::to_string(tol.atol) +
                           " + rtol " + std::to_string(tol.rtol) + "; worst at index " + std::to_string(c.worst_index) +
                           ": got " + std::to_string(c.worst_got) + ", want " + std::to_string(c.worst_want) + " (error " +
                           std::to_string(c.validation.max_abs_error) + (on_device ? ", compared on the device)" : ")"));
  }
  return c.validation;
}

double Session::sample(PreparedKernel& kernel, const SampleRequest& req) {
  auto& k = dynamic_cast<Launchable&>(kernel);
  const int launches = std::max(1, req.launches);
  return guarded("timed run", [&] {
    k.ensure_loaded(*this);
    const int copies = req.rotate_buffers ? copies_for_rotation() : 1;
    ensure_copies(copies);
    zero_workspaces();
    if (req.method == Method::Amortized) {
      // Buffers may have moved (workspace growth, a reset) since the graph was captured.
      if (!k.graph || k.graph_launches != launches || k.graph_copies != copies || k.graph_epoch != epoch_ ||
          k.graph_generation != dev_->generation) {
        k.drop_graph();
        check(d().cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
        CUgraph g = nullptr;
        try {
          for (int i = 0; i < launches; ++i) k.enqueue(*this, i % copies);
        } catch (...) {
          d().cuStreamEndCapture(stream_, &g);
          if (g) d().cuGraphDestroy(g);
          throw;
        }
        check(d().cuStreamEndCapture(stream_, &g), "cuStreamEndCapture");
        const CUresult r = d().cuGraphInstantiateWithFlags(&k.graph, g, 0);
        d().cuGraphDestroy(g);
        check(r, "cuGraphInstantiate");
        k.graph_launches = launches;
        k.graph_copies = copies;
        k.graph_epoch = epoch_;
        k.graph_generation = dev_->generation;
      }
      check(d().cuEventRecord(ev_start_, stream_), "cuEventRecord");
      check(d().cuGraphLaunch(k.graph, stream_), "cuGraphLaunch");
      check(d().cuEventRecord(ev_stop_, stream_), "cuEventRecord");
      wait(ev_stop_, req.deadline, "timed run");
      float ms = 0;
      check(d().cuEventElapsedTime(&ms, ev_start_, ev_stop_), "cuEventElapsedTime");
      return static_cast<double>(ms) * 1e6 / launches;
    }
    // per_launch: an event pair around each launch, L2 evicted before it by writing a buffer
    // larger than L2.
    if (!flush_.ptr) flush_ = alloc(d(), static_cast<std::size_t>(2 * info_.property("l2_bytes", 64.0 * 1024 * 1024)), "L2 flush buffer");
    while (static_cast<int>(launch_events_.size()) < launches) {
      CUevent a = nullptr, b = nullptr;
      check(d().cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
      check(d().cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
      launch_events_.emplace_back(a, b);
    }
    for (int i = 0; i < launches; ++i) {
      check(d().cuMemsetD32Async(flush_.ptr, static_cast<unsigned>(i), flush_.bytes / 4, stream_), "L2 flush");
      check(d().cuEventRecord(launch_events_[i].first, stream_), "cuEventRecord");
      k.enqueue(*this, i % copies);
      check(d().cuEventRecord(launch_events_[i].second, stream_), "cuEventRecord");
    }
    wait(launch_events_[launches - 1].second, req.deadline, "timed run");
    double total_ms = 0;
    for (int i = 0; i < launches; ++i) {
      float ms = 0;
      check(d().cuEventElapsedTime(&ms, launch_events_[i].first, launch_events_[i].second), "cuEventElapsedTime");
      total_ms += ms;
    }
    return total_ms * 1e6 / launches;
  });
}

void Session::load_utilities() {
  if (utility_module_ && utility_generation_ == dev_->generation) return;
  const CompiledModule m = compiler_->compile(kUtilitySource, "ktune_utilities.cu", {}, {"ktune_clock_probe", "ktune_compare"});
  check(d().cuModuleLoadData(&utility_module_, m.cubin.data()), "load ktune's utility kernels");
  check(d().cuModuleGetFunction(&probe_, utility_module_, "ktune_clock_probe"), "clock probe function");
  check(d().cuModuleGetFunction(&compare_, utility_module_, "ktune_compare"), "compare function");
  utility_generation_ = dev_->generation;
}

std::optional<Comparison> Session::compare_on_device(CUdeviceptr got, ElemType type, const Tolerance& tol) {
  const int code = type == ElemType::F16 ? 0 : type == ElemType::BF16 ? 1 : type == ElemType::F32 ? 2 : -1;
  const std::size_t n = reference_.size();
  if (code < 0 || n == 0 || n >= (1ull << 32)) return std::nullopt;  // the host compares those
  load_utilities();
  // The reference lives on the device as f32, uploaded once (again after a context reset).
  if (!ref_dev_.ptr) {
    const std::vector<float> f(reference_.begin(), reference_.end());
    ref_dev_ = alloc(d(), f.size() * 4, "device reference");
    upload(ref_dev_.ptr, f.data(), f.size() * 4, "upload reference");
  }
  if (!compare_out_.ptr) compare_out_ = alloc(d(), 16, "compare result");
  check(d().cuMemsetD8Async(compare_out_.ptr, 0, 16, stream_), "clear compare result");
  unsigned count = static_cast<unsigned>(n);
  float atol = static_cast<float>(tol.atol), rtol = static_cast<float>(tol.rtol);
  void* params[] = {&got, const_cast<int*>(&code), &ref_dev_.ptr, &count, &atol, &rtol, &compare_out_.ptr};
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4 * static_cast<std::size_t>(info_.property("sms", 1)) * 8));
  check(d().cuLaunchKernel(compare_, blocks, 1, 1, 256, 1, 1, 0, stream_, params, nullptr), "launch compare");
  unsigned long long result[2] = {0, 0};
  check(d().cuStreamSynchronize(stream_), "compare");
  check(d().cuMemcpyDtoH(result, compare_out_.ptr, 16), "download compare result");
  Comparison c;
  c.mismatches = result[0];
  c.worst_index = static_cast<std::size_t>(result[1] & 0xffffffffu);
  const auto bits = static_cast<std::uint32_t>(result[1] >> 32);
  float worst = 0;
  std::memcpy(&worst, &bits, 4);
  unsigned char one[4] = {};
  check(d().cuMemcpyDtoH(one, got + c.worst_index * elem_size(type), elem_size(type)), "download worst element");
  c.worst_got = load_elem(one, type, 0);
  c.worst_want = reference_[c.worst_index];
  c.validation.max_abs_error = worst;
  c.validation.mismatch_fraction = static_cast<double>(c.mismatches) / static_cast<double>(n);
  return c;
}

double Session::measure_sm_clock_mhz() {
  return guarded("SM clock probe", [&] {
    load_utilities();
    const unsigned blocks = static_cast<unsigned>(std::max(1.0, info_.property("sms", 1)));
    Buffer out = alloc(d(), blocks * 16, "clock probe output");
    unsigned long long ns = 5'000'000;
    void* params[] = {&out.ptr, &ns};
    CUresult r = d().cuLaunchKernel(probe_, blocks, 1, 1, 32, 1, 1, 0, stream_, params, nullptr);
    if (r == CUDA_SUCCESS) r = d().cuStreamSynchronize(stream_);
    std::vector<unsigned long long> host(2 * blocks);
    if (r == CUDA_SUCCESS) r = d().cuMemcpyDtoH(host.data(), out.ptr, host.size() * 8);
    d().cuMemFree(out.ptr);
    check(r, "clock probe");
    double sum = 0;
    for (unsigned b = 0; b < blocks; ++b) sum += static_cast<double>(host[2 * b]) / static_cast<double>(std::max(1ull, host[2 * b + 1])) * 1e3;
    const double mhz = sum / blocks;
    clock_min_ = clock_min_ == 0 ? mhz : std::min(clock_min_, mhz);
    clock_max_ = std::max(clock_max_, mhz);
    return mhz;
  });
}

}  // namespace ktune::cuda
