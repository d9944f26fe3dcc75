#include "cuda_api.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <tuple>
#include <type_traits>

#include "ktune/error.h"
#include "nvml.h"

// gpu::DeviceApi over the CUDA driver API, and cuBLAS as its gemm.
namespace ktune::cuda {

namespace {

using gpu::ApiError;
using gpu::DevicePtr;
using gpu::Handle;

unsigned u(std::uint64_t v) { return static_cast<unsigned>(v); }

// Driver results as the session reacts to them.
void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const auto kind = r == CUDA_ERROR_OUT_OF_MEMORY ? ApiError::Kind::OutOfMemory
                    : sticky(r)                   ? ApiError::Kind::Fault
                                                  : ApiError::Kind::Failed;
  throw ApiError(kind, std::string(what) + ": " + error_text(r));
}

CUtensorMapDataType tensor_map_type(ElemType t) {
  switch (t) {
    case ElemType::F16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case ElemType::BF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case ElemType::F32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case ElemType::F64:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case ElemType::I32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case ElemType::U32:
      return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case ElemType::I64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    default:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes) {
  return bytes == 32    ? CU_TENSOR_MAP_SWIZZLE_32B
         : bytes == 64  ? CU_TENSOR_MAP_SWIZZLE_64B
         : bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                        : CU_TENSOR_MAP_SWIZZLE_NONE;
}

cudaDataType cublas_type(ElemType t) {
  switch (t) {
    case ElemType::F16:
      return CUDA_R_16F;
    case ElemType::BF16:
      return CUDA_R_16BF;
    case ElemType::F32:
      return CUDA_R_32F;
    default:
      throw ApiError(ApiError::Kind::Failed, std::string("cuBLAS takes f16, bf16 or f32 data, not ") + to_string(t));
  }
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw ApiError(ApiError::Kind::Failed,
                   std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

// cuBLASLt's scale modes for 1x128 and 128x128 f32 block scales came with CUDA 12.9: older
// toolkits build without the block-scaled baseline (and the run's log says why).
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
#define KTUNE_LT_BLOCK_SCALED 1
#else
#define KTUNE_LT_BLOCK_SCALED 0
#endif

template <class T, auto Destroy>
struct LtDeleter {
  void operator()(T p) const { Destroy(p); }
};
template <class T, auto Destroy>
using LtHandle = std::unique_ptr<std::remove_pointer_t<T>, LtDeleter<T, Destroy>>;

// One shape's cuBLASLt block-scaled fp8 matmul: the descriptors and the algorithm its heuristic
// chose, made once. Row-major Y [m, n] = A [m, k] W [n, k]^T is column-major Y^T = W^T-as-stored
// (k x n, transposed) times A^T-as-stored (k x m): cuBLASLt's A is the weights (128x128 scales),
// its B the activations (1x128 scales), as torch._scaled_mm calls it.
struct LtBlockScaledPlan {
  LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
  LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> w, a, y;
  cublasLtMatmulAlgo_t algo{};
};

// cuBLAS in the device's context, the runtime adopting the current driver context. A fixed
// workspace keeps it from allocating while a graph is being captured; cuBLASLt (block-scaled
// fp8) shares it, on the same stream.
class Cublas final : public gpu::GemmLibrary {
 public:
  Cublas(std::shared_ptr<gpu::DeviceApi> api, Handle stream)
      : api_(std::move(api)),
        generation_(api_->generation()),
        workspace_(api_, 32u << 20, "cuBLAS workspace"),
        stream_(static_cast<cudaStream_t>(stream)) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    check_cublas(cublasSetWorkspace(handle_, reinterpret_cast<void*>(workspace_.ptr()), workspace_.bytes()),
                 "cublasSetWorkspace");
    check_cublas(cublasSetStream(handle_, stream_), "cublasSetStream");
  }
  // The plans' descriptors are host objects, freed whatever became of the context.
  ~Cublas() override {
    if (!api_->alive(generation_)) return;
    if (lt_) cublasLtDestroy(lt_);
    cublasDestroy(handle_);
  }
  std::string name() const override { return "cuBLAS"; }
  bool baseline() const override { return true; }
  std::string block_scaled_name(std::string& why_not) const override {
    if (!KTUNE_LT_BLOCK_SCALED) {
      why_not =
          "this CUDA toolkit's cuBLASLt has no block-scaled fp8 gemm (1x128 and 128x128 scales: CUDA 12.9 or later)";
      return "";
    }
    why_not.clear();
    return "cuBLASLt block-scaled";
  }
#if KTUNE_LT_BLOCK_SCALED
  void plan(const gpu::BlockScaledCall& c) override { (void)lt_plan(c); }
  void enqueue(const gpu::BlockScaledCall& c) override {
    const LtBlockScaledPlan& p = lt_plan(c);
    const float alpha = 1.f, beta = 0.f;
    lt_attribute(p, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, reinterpret_cast<const void*>(c.b_scale));
    lt_attribute(p, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, reinterpret_cast<const void*>(c.a_scale));
    check_cublas(cublasLtMatmul(lt_, p.desc.get(), &alpha, reinterpret_cast<const void*>(c.b), p.w.get(),
                                reinterpret_cast<const void*>(c.a), p.a.get(), &beta, reinterpret_cast<void*>(c.y),
                                p.y.get(), reinterpret_cast<void*>(c.y), p.y.get(), &p.algo,
                                reinterpret_cast<void*>(workspace_.ptr()), workspace_.bytes(), stream_),
                 "cublasLtMatmul (block-scaled fp8)");
  }
#endif
  void enqueue(const gpu::GemmCall& c) override {
    const float alpha = 1.f, beta = 0.f;
    const cudaDataType in = cublas_type(c.in);
    // Row-major C = A*B is column-major C^T = B^T * A^T.
    check_cublas(cublasGemmEx(handle_, c.b_nk ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, c.n, c.m, c.k, &alpha,
                              reinterpret_cast<const void*>(c.b), in, c.b_nk ? c.k : c.n,
                              reinterpret_cast<const void*>(c.a), in, c.k, &beta, reinterpret_cast<void*>(c.c),
                              cublas_type(c.out), c.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

 private:
  template <class T>
  static void lt_attribute(const LtBlockScaledPlan& p, cublasLtMatmulDescAttributes_t what, const T& value) {
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc.get(), what, &value, sizeof value),
                 "cublasLtMatmulDescSetAttribute");
  }

#if KTUNE_LT_BLOCK_SCALED
  // The plan of c's shape: made on first use, its algorithm cuBLASLt's heuristic's first choice
  // for this workspace (what torch._scaled_mm runs).
  const LtBlockScaledPlan& lt_plan(const gpu::BlockScaledCall& c) {
    const auto key = std::make_tuple(c.m, c.n, c.k, static_cast<int>(c.out));
    if (const auto it = plans_.find(key); it != plans_.end()) return it->second;
    if (!lt_) check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
    LtBlockScaledPlan p;
    cublasLtMatmulDesc_t desc = nullptr;
    check_cublas(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    p.desc.reset(desc);
    lt_attribute(p, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
    lt_attribute(p, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
    lt_attribute(p, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
    lt_attribute(p, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
    lt_attribute(p, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, reinterpret_cast<const void*>(c.b_scale));
    lt_attribute(p, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, reinterpret_cast<const void*>(c.a_scale));
    const auto layout = [](auto& h, cudaDataType t, int rows, int cols, int ld) {
      cublasLtMatrixLayout_t l = nullptr;
      check_cublas(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld), "cublasLtMatrixLayoutCreate");
      h.reset(l);
    };
    layout(p.w, CUDA_R_8F_E4M3, c.k, c.n, c.k);
    layout(p.a, CUDA_R_8F_E4M3, c.k, c.m, c.k);
    layout(p.y, cublas_type(c.out), c.n, c.m, c.n);
    cublasLtMatmulPreference_t pref_raw = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref_raw), "cublasLtMatmulPreferenceCreate");
    const LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref(pref_raw);
    const std::size_t bytes = workspace_.bytes();
    check_cublas(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                                                      sizeof bytes),
                 "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t found{};
    int count = 0;
    check_cublas(cublasLtMatmulAlgoGetHeuristic(lt_, p.desc.get(), p.w.get(), p.a.get(), p.y.get(), p.y.get(),
                                                pref.get(), 1, &found, &count),
                 "cublasLtMatmulAlgoGetHeuristic (block-scaled fp8)");
    if (count == 0)
      throw ApiError(ApiError::Kind::Failed, "cuBLASLt has no block-scaled fp8 algorithm for m=" + std::to_string(c.m) +
                                                 " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                                                 " on this device (it has them for Hopper, sm_90)");
    p.algo = found.algo;
    return plans_.emplace(key, std::move(p)).first->second;
  }
#endif

  std::shared_ptr<gpu::DeviceApi> api_;
  int generation_;
  gpu::Buffer workspace_;
  cudaStream_t stream_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<std::tuple<int, int, int, int>, LtBlockScaledPlan> plans_;
  cublasHandle_t handle_ = nullptr;
};

// A context of our own (not the primary one: a context that faulted must be destroyed to
// recover, and the primary one is shared with cuBLAS's runtime).
class CudaApi final : public gpu::DeviceApi, public std::enable_shared_from_this<CudaApi> {
 public:
  CudaApi(const Driver& d, int index) : d_(d) {
    check(d.cuDeviceGet(&device_, index), "cuDeviceGet");
    check(d.cuCtxCreate(&ctx_, nullptr, 0, device_), "cuCtxCreate");
    int v = 0;
    d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_);
    sms_ = v;
    d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device_);
    l2_ = v > 0 ? v : 64.0 * 1024 * 1024;
    char bus[32] = {};
    if (d.cuDeviceGetPCIBusId(bus, sizeof bus, device_) == CUDA_SUCCESS) nvml_ = NvmlDevice::open(bus);
  }
  ~CudaApi() override {
    if (ctx_) d_.cuCtxDestroy(ctx_);
  }

  void make_current() override { check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }
  int compute_units() const override { return sms_; }
  double l2_bytes() const override { return l2_; }

  DevicePtr alloc(std::size_t bytes) override {
    CUdeviceptr p = 0;
    check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc");
    return p;
  }
  void free(DevicePtr p) noexcept override { current(), d_.cuMemFree(p); }
  void upload(DevicePtr dst, const void* src, std::size_t bytes, Handle s) override {
    check(d_.cuMemcpyHtoDAsync(dst, src, bytes, stream(s)), "cuMemcpyHtoDAsync");
  }
  void download(void* dst, DevicePtr src, std::size_t bytes) override {
    check(d_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  }
  void fill8(DevicePtr dst, unsigned char value, std::size_t bytes, Handle s) override {
    check(d_.cuMemsetD8Async(dst, value, bytes, stream(s)), "cuMemsetD8Async");
  }
  void fill32(DevicePtr dst, std::uint32_t value, std::size_t count, Handle s) override {
    check(d_.cuMemsetD32Async(dst, value, count, stream(s)), "cuMemsetD32Async");
  }

  Handle load_module(const std::string& binary) override {
    CUmodule m = nullptr;
    check(d_.cuModuleLoadData(&m, binary.data()), "cuModuleLoadData");
    return m;
  }
  void unload_module(Handle m) noexcept override { current(), d_.cuModuleUnload(static_cast<CUmodule>(m)); }
  Handle function(Handle m, const std::string& name) override {
    CUfunction f = nullptr;
    check(d_.cuModuleGetFunction(&f, static_cast<CUmodule>(m), name.c_str()), "cuModuleGetFunction");
    return f;
  }
  gpu::FunctionLimits limits(Handle f) override {
    int threads = 0, smem = 0, regs = 0;
    const auto fn = static_cast<CUfunction>(f);
    d_.cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    d_.cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    d_.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    return {static_cast<std::uint64_t>(threads), static_cast<std::uint64_t>(smem), regs};
  }
  void allow_dynamic_shared(Handle f, std::uint64_t bytes) override {
    // Without asking, a block gets 48 KiB of static and dynamic shared memory together: 48 KiB
    // of dynamic beside a static `__shared__ int` fails to launch (CUDA_ERROR_INVALID_VALUE).
    int static_bytes = 0;
    d_.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, static_cast<CUfunction>(f));
    if (bytes + static_cast<std::uint64_t>(static_bytes) <= 48 * 1024) return;
    check(d_.cuFuncSetAttribute(static_cast<CUfunction>(f), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(bytes)),
          "cuFuncSetAttribute");
  }
  std::pair<DevicePtr, std::size_t> global(Handle m, const std::string& name) override {
    CUdeviceptr p = 0;
    std::size_t bytes = 0;
    check(d_.cuModuleGetGlobal(&p, &bytes, static_cast<CUmodule>(m), name.c_str()), "cuModuleGetGlobal");
    return {p, bytes};
  }
  void launch(Handle f, const LaunchGeometry& g, Handle s, void** params) override {
    if (g.clustered()) {
      launch_cluster(static_cast<CUfunction>(f), g, stream(s), params);
      return;
    }
    check(d_.cuLaunchKernel(static_cast<CUfunction>(f), u(g.grid[0]), u(g.grid[1]), u(g.grid[2]), u(g.block[0]),
                            u(g.block[1]), u(g.block[2]), u(g.shared_bytes), stream(s), params, nullptr),
          "cuLaunchKernel");
  }
  void encode_tensor_map(const gpu::TensorMapDesc& t, DevicePtr base, void* out) override;
  std::unique_ptr<gpu::GemmLibrary> gemm(Handle s, const gpu::Toolchain&) override {
    return std::make_unique<Cublas>(shared_from_this(), s);
  }
  std::optional<ConditionsReading> read_conditions() override { return nvml_ ? nvml_->read() : std::nullopt; }

  Handle create_stream() override {
    CUstream s = nullptr;
    check(d_.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return s;
  }
  void destroy_stream(Handle s) noexcept override { current(), d_.cuStreamDestroy(stream(s)); }
  void synchronize(Handle s) override { check(d_.cuStreamSynchronize(stream(s)), "cuStreamSynchronize"); }
  Handle create_event() override {
    CUevent e = nullptr;
    check(d_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }
  void destroy_event(Handle e) noexcept override { current(), d_.cuEventDestroy(event(e)); }
  void record(Handle e, Handle s) override { check(d_.cuEventRecord(event(e), stream(s)), "cuEventRecord"); }
  bool finished(Handle e) override {
    const CUresult r = d_.cuEventQuery(event(e));
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(r, "cuEventQuery");
    return true;
  }
  float elapsed_ms(Handle a, Handle b) override {
    float ms = 0;
    check(d_.cuEventElapsedTime(&ms, event(a), event(b)), "cuEventElapsedTime");
    return ms;
  }
  void begin_capture(Handle s) override {
    check(d_.cuStreamBeginCapture(stream(s), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  }
  Handle end_capture(Handle s) override {
    CUgraph g = nullptr;
    check(d_.cuStreamEndCapture(stream(s), &g), "cuStreamEndCapture");
    CUgraphExec exec = nullptr;
    const CUresult r = d_.cuGraphInstantiateWithFlags(&exec, g, 0);
    d_.cuGraphDestroy(g);
    check(r, "cuGraphInstantiate");
    return exec;
  }
  void launch_graph(Handle g, Handle s) override {
    check(d_.cuGraphLaunch(static_cast<CUgraphExec>(g), stream(s)), "cuGraphLaunch");
  }
  void destroy_graph(Handle g) noexcept override { current(), d_.cuGraphExecDestroy(static_cast<CUgraphExec>(g)); }

 protected:
  bool recreate(std::string& why) override {
    const CUresult destroyed = d_.cuCtxDestroy(ctx_);
    ctx_ = nullptr;
    const CUresult created = d_.cuCtxCreate(&ctx_, nullptr, 0, device_);
    if (created == CUDA_SUCCESS) return d_.cuCtxSetCurrent(ctx_) == CUDA_SUCCESS;
    ctx_ = nullptr;
    why = "destroying the old one: " + error_text(destroyed) + "; creating one: " + error_text(created);
    return false;
  }

 private:
  static CUstream stream(Handle s) { return static_cast<CUstream>(s); }
  static CUevent event(Handle e) { return static_cast<CUevent>(e); }
  // Releases run on whichever thread drops the last owner.
  void current() const noexcept { d_.cuCtxSetCurrent(ctx_); }
  // Cluster dimensions exist only as a launch attribute of cuLaunchKernelEx. Stream capture
  // records the attribute with the kernel node, so a captured graph replays the same clusters.
  void launch_cluster(CUfunction f, const LaunchGeometry& g, CUstream s, void** params) {
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = u(g.cluster[0]);
    cluster.value.clusterDim.y = u(g.cluster[1]);
    cluster.value.clusterDim.z = u(g.cluster[2]);
    CUlaunchConfig config{};
    config.gridDimX = u(g.grid[0]);
    config.gridDimY = u(g.grid[1]);
    config.gridDimZ = u(g.grid[2]);
    config.blockDimX = u(g.block[0]);
    config.blockDimY = u(g.block[1]);
    config.blockDimZ = u(g.block[2]);
    config.sharedMemBytes = u(g.shared_bytes);
    config.hStream = s;
    config.attrs = &cluster;
    config.numAttrs = 1;
    check(d_.cuLaunchKernelEx(&config, f, params, nullptr), "cuLaunchKernelEx (thread-block cluster)");
  }

  const Driver& d_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  int sms_ = 1;
  double l2_ = 0;
  std::optional<NvmlDevice> nvml_;  // none: no conditions are read
};

void CudaApi::encode_tensor_map(const gpu::TensorMapDesc& t, DevicePtr base, void* out) {
  static_assert(sizeof(CUtensorMap) == gpu::kTensorMapBytes);
  // Row-major: each dimension's stride is the product of the ones inside it.
  const std::size_t rank = t.dims.size();
  std::vector<cuuint64_t> dims(t.dims.begin(), t.dims.end()), strides;
  std::vector<cuuint32_t> box(t.box.begin(), t.box.end()), element_strides(rank, 1);
  cuuint64_t stride = elem_size(t.type);
  for (std::size_t i = 0; i + 1 < rank; ++i) strides.push_back(stride *= dims[i]);
  check(
      d_.cuTensorMapEncodeTiled(static_cast<CUtensorMap*>(out), tensor_map_type(t.type), static_cast<cuuint32_t>(rank),
                                reinterpret_cast<void*>(base), dims.data(), strides.data(), box.data(),
                                element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, tensor_map_swizzle(t.swizzle),
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled");
}

}  // namespace

std::shared_ptr<gpu::DeviceApi> open_device(const Driver& d, int index) { return std::make_shared<CudaApi>(d, index); }

}  // namespace ktune::cuda
