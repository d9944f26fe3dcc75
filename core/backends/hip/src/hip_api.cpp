#include "hip_api.h"

#include "ktune/error.h"
#include "toolchain.h"

// gpu::DeviceApi over the HIP runtime. Unlike the CUDA driver API there is no context of our own:
// the runtime's per-device one is made current with hipSetDevice, and reset with hipDeviceReset.
namespace ktune::hip {

namespace {

using gpu::ApiError;
using gpu::DevicePtr;
using gpu::Handle;

void check(hipError_t e, const char* what) {
  if (e == hipSuccess) return;
  const auto kind = e == hipErrorOutOfMemory                                    ? ApiError::Kind::OutOfMemory
                    : e == hipErrorIllegalAddress || e == hipErrorLaunchFailure ? ApiError::Kind::Fault
                                                                                : ApiError::Kind::Failed;
  throw ApiError(kind, std::string(what) + ": " + describe(e));
}

hipStream_t stream(Handle s) { return static_cast<hipStream_t>(s); }
hipEvent_t event(Handle e) { return static_cast<hipEvent_t>(e); }
hipDeviceptr_t ptr(DevicePtr p) { return reinterpret_cast<hipDeviceptr_t>(p); }

// ktune_reference_gemm of the toolchain's utilities: one thread per output element, f32
// throughout, no tiling to get wrong.
class ReferenceGemm final : public gpu::GemmLibrary {
 public:
  ReferenceGemm(std::shared_ptr<gpu::DeviceApi> api, Handle stream, const gpu::Toolchain& toolchain)
      : api_(std::move(api)), stream_(stream) {
    const auto& u = toolchain.utilities();
    const CompiledModule m = toolchain.compile(u.program, {}, {"ktune_reference_gemm"});
    module_ = gpu::Module(api_, api_->load_module(m.binary));
    fn_ = api_->function(module_.get(), m.lowered[0]);
  }
  std::string name() const override { return "ktune's reference gemm kernel"; }
  bool baseline() const override { return false; }
  void enqueue(const gpu::GemmCall& c) override {
    int type = c.in == ElemType::F16 ? 0 : c.in == ElemType::BF16 ? 1 : c.in == ElemType::F32 ? 2 : -1;
    if (type < 0 || c.out != ElemType::F32)
      throw ApiError(ApiError::Kind::Failed,
                     std::string("the reference gemm reads f16, bf16 or f32 and writes f32, not ") + to_string(c.in) +
                         " -> " + to_string(c.out));
    DevicePtr a = c.a, b = c.b, out = c.c;
    int m = c.m, n = c.n, k = c.k, b_nk = c.b_nk ? 1 : 0;
    void* params[] = {&a, &b, &out, &m, &n, &k, &b_nk, &type};
    LaunchGeometry g;
    g.entry = "ktune_reference_gemm";
    g.grid = {static_cast<std::uint64_t>((n + 127) / 128), static_cast<std::uint64_t>(m), 1};
    g.block = {128, 1, 1};
    api_->launch(fn_, g, stream_, params);
  }

 private:
  std::shared_ptr<gpu::DeviceApi> api_;
  Handle stream_;
  gpu::Module module_;
  Handle fn_ = nullptr;
};

class HipApi final : public gpu::DeviceApi, public std::enable_shared_from_this<HipApi> {
 public:
  explicit HipApi(int index) : index_(index) {
    make_current();
    hipDeviceProp_t prop{};
    check(hipGetDeviceProperties(&prop, index), "hipGetDeviceProperties");
    cus_ = prop.multiProcessorCount;
    l2_ = prop.l2CacheSize > 0 ? prop.l2CacheSize : 8.0 * 1024 * 1024;
  }

  void make_current() override { check(hipSetDevice(index_), "hipSetDevice"); }
  int compute_units() const override { return cus_; }
  double l2_bytes() const override { return l2_; }

  DevicePtr alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(hipMalloc(&p, bytes), "hipMalloc");
    return reinterpret_cast<DevicePtr>(p);
  }
  void free(DevicePtr p) noexcept override { (void)hipFree(reinterpret_cast<void*>(p)); }
  void upload(DevicePtr dst, const void* src, std::size_t bytes, Handle s) override {
    check(hipMemcpyHtoDAsync(ptr(dst), const_cast<void*>(src), bytes, stream(s)), "hipMemcpyHtoDAsync");
  }
  void download(void* dst, DevicePtr src, std::size_t bytes) override {
    check(hipMemcpyDtoH(dst, ptr(src), bytes), "hipMemcpyDtoH");
  }
  void fill8(DevicePtr dst, unsigned char value, std::size_t bytes, Handle s) override {
    check(hipMemsetD8Async(ptr(dst), value, bytes, stream(s)), "hipMemsetD8Async");
  }
  void fill32(DevicePtr dst, std::uint32_t value, std::size_t count, Handle s) override {
    check(hipMemsetD32Async(ptr(dst), static_cast<int>(value), count, stream(s)), "hipMemsetD32Async");
  }

  Handle load_module(const std::string& binary) override {
    hipModule_t m = nullptr;
    check(hipModuleLoadData(&m, binary.data()), "hipModuleLoadData");
    return m;
  }
  void unload_module(Handle m) noexcept override { (void)hipModuleUnload(static_cast<hipModule_t>(m)); }
  Handle function(Handle m, const std::string& name) override {
    hipFunction_t f = nullptr;
    check(hipModuleGetFunction(&f, static_cast<hipModule_t>(m), name.c_str()), "hipModuleGetFunction");
    return f;
  }
  gpu::FunctionLimits limits(Handle f) override {
    int threads = 0, lds = 0, regs = 0;
    const auto fn = static_cast<hipFunction_t>(f);
    check(hipFuncGetAttribute(&threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn), "hipFuncGetAttribute");
    check(hipFuncGetAttribute(&lds, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), "hipFuncGetAttribute");
    check(hipFuncGetAttribute(&regs, HIP_FUNC_ATTRIBUTE_NUM_REGS, fn), "hipFuncGetAttribute");
    return {static_cast<std::uint64_t>(threads), static_cast<std::uint64_t>(lds), regs};
  }
  // A block may use the whole of lds_per_block without asking.
  void allow_dynamic_shared(Handle, std::uint64_t) override {}
  std::pair<DevicePtr, std::size_t> global(Handle m, const std::string& name) override {
    hipDeviceptr_t p = nullptr;
    std::size_t bytes = 0;
    check(hipModuleGetGlobal(&p, &bytes, static_cast<hipModule_t>(m), name.c_str()), "hipModuleGetGlobal");
    return {reinterpret_cast<DevicePtr>(p), bytes};
  }
  void launch(Handle f, const LaunchGeometry& g, Handle s, void** params) override {
    // The spec was refused at load; a launch made some other way must not run as plain blocks.
    if (g.clustered()) throw ApiError(ApiError::Kind::Failed, g.entry + ": AMD GPUs have no thread-block clusters");
    const auto u = [](std::uint64_t v) { return static_cast<unsigned>(v); };
    check(hipModuleLaunchKernel(static_cast<hipFunction_t>(f), u(g.grid[0]), u(g.grid[1]), u(g.grid[2]), u(g.block[0]),
                                u(g.block[1]), u(g.block[2]), u(g.shared_bytes), stream(s), params, nullptr),
          "hipModuleLaunchKernel");
  }
  void encode_tensor_map(const gpu::TensorMapDesc&, DevicePtr, void*) override {
    throw ApiError(ApiError::Kind::Failed, "AMD GPUs have no tensor maps");
  }
  std::unique_ptr<gpu::GemmLibrary> gemm(Handle s, const gpu::Toolchain& toolchain) override {
    return std::make_unique<ReferenceGemm>(shared_from_this(), s, toolchain);
  }

  Handle create_stream() override {
    hipStream_t s = nullptr;
    check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreate");
    return s;
  }
  void destroy_stream(Handle s) noexcept override { (void)hipStreamDestroy(stream(s)); }
  void synchronize(Handle s) override { check(hipStreamSynchronize(stream(s)), "hipStreamSynchronize"); }
  Handle create_event() override {
    hipEvent_t e = nullptr;
    check(hipEventCreate(&e), "hipEventCreate");
    return e;
  }
  void destroy_event(Handle e) noexcept override { (void)hipEventDestroy(event(e)); }
  void record(Handle e, Handle s) override { check(hipEventRecord(event(e), stream(s)), "hipEventRecord"); }
  bool finished(Handle e) override {
    const hipError_t r = hipEventQuery(event(e));
    if (r == hipErrorNotReady) return false;
    check(r, "hipEventQuery");
    return true;
  }
  float elapsed_ms(Handle a, Handle b) override {
    float ms = 0;
    check(hipEventElapsedTime(&ms, event(a), event(b)), "hipEventElapsedTime");
    return ms;
  }
  void begin_capture(Handle s) override {
    check(hipStreamBeginCapture(stream(s), hipStreamCaptureModeThreadLocal), "hipStreamBeginCapture");
  }
  Handle end_capture(Handle s) override {
    hipGraph_t g = nullptr;
    check(hipStreamEndCapture(stream(s), &g), "hipStreamEndCapture");
    hipGraphExec_t exec = nullptr;
    const hipError_t r = hipGraphInstantiate(&exec, g, nullptr, nullptr, 0);
    (void)hipGraphDestroy(g);
    check(r, "hipGraphInstantiate");
    return exec;
  }
  void launch_graph(Handle g, Handle s) override {
    check(hipGraphLaunch(static_cast<hipGraphExec_t>(g), stream(s)), "hipGraphLaunch");
  }
  void destroy_graph(Handle g) noexcept override { (void)hipGraphExecDestroy(static_cast<hipGraphExec_t>(g)); }

 protected:
  bool recreate(std::string& why) override {
    const hipError_t e = hipDeviceReset();
    if (e == hipSuccess && hipSetDevice(index_) == hipSuccess) return true;
    why = "hipDeviceReset: " + describe(e);
    return false;
  }

 private:
  int index_;
  int cus_ = 1;
  double l2_ = 0;
};

}  // namespace

std::string describe(hipError_t e) {
  const std::string name = hipGetErrorName(e), text = hipGetErrorString(e);
  return text.empty() || text == name ? name : name + " (" + text + ")";
}

std::shared_ptr<gpu::DeviceApi> open_device(int index) { return std::make_shared<HipApi>(index); }

}  // namespace ktune::hip
