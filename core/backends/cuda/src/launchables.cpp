#include "launchables.h"

#include <algorithm>
#include <mutex>

#include "ktune/error.h"
#include "ktune/host_data.h"

namespace ktune::cuda {

namespace {

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
    case ElemType::I8:
    case ElemType::U8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case ElemType::I32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case ElemType::U32:
      return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case ElemType::I64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

}  // namespace

cudaDataType cuda_type(ElemType t, const std::string& what) {
  switch (t) {
    case ElemType::F16:
      return CUDA_R_16F;
    case ElemType::BF16:
      return CUDA_R_16BF;
    case ElemType::F32:
      return CUDA_R_32F;
    default:
      throw InputError(what + ": cuBLAS reference needs f16, bf16 or f32 data, not " + to_string(t));
  }
}

void check_cublas(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw TrialFailure(TrialStatus::LaunchError,
                       what + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

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
    lost =
        "after a faulting kernel the driver refuses a new context (destroying the old one: " + error_text(destroyed) +
        "; creating one: " + error_text(created) + ")";
    return false;
  }
  make_current();
  return true;
}

void DeviceContext::check_usable() const {
  if (!lost.empty())
    throw RunError("the GPU is unusable in this process: " + lost +
                   "; resume the run in a new process (ktune tune --resume)");
}

Launchable::~Launchable() { drop_graph(); }

void Launchable::drop_graph() {
  if (graph && dev && graph_generation == dev->generation) dev->d.cuGraphExecDestroy(graph);
  graph = nullptr;
  graph_generation = -1;
}

// ---------------------------------------------------------------------------------------------
SpecKernel::~SpecKernel() {
  drop_graph();
  if (dev && generation == dev->generation)
    for (CUmodule m : modules) dev->d.cuModuleUnload(m);
}

void SpecKernel::load(const Session& s) {
  const Driver& d = dev->d;
  std::vector<CUmodule> loaded;
  std::vector<CUfunction> fns;
  try {
    for (std::size_t m = 0; m < compiled.size(); ++m) {
      CUmodule handle = nullptr;
      check(d.cuModuleLoadData(&handle, compiled[m].binary.data()), "cuModuleLoadData");
      loaded.push_back(handle);
    }
    const double optin =
        s.device_vars().count("smem_per_block_optin") ? s.device_vars().at("smem_per_block_optin") : 49152;
    for (const auto& l : plan.launches) {
      const auto& g = l.geometry;
      CUfunction f = nullptr;
      check(d.cuModuleGetFunction(&f, loaded[l.module], compiled[l.module].lowered[l.name].c_str()),
            "cuModuleGetFunction " + g.entry);
      int max_threads = 0, static_smem = 0, regs = 0;
      d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
      d.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
      d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
      if (g.threads() > static_cast<std::uint64_t>(max_threads))
        throw TrialFailure(TrialStatus::LaunchError, g.entry + ": " + std::to_string(g.threads()) +
                                                         " threads per block, but with " + std::to_string(regs) +
                                                         " registers per thread (and its launch bounds) at most " +
                                                         std::to_string(max_threads) + " fit");
      if (static_cast<double>(g.shared_bytes) + static_smem > optin)
        throw TrialFailure(TrialStatus::LaunchError, g.entry + ": needs " + std::to_string(g.shared_bytes) +
                                                         " bytes of dynamic + " + std::to_string(static_smem) +
                                                         " static shared memory, the device allows " +
                                                         std::to_string(static_cast<long long>(optin)) + " per block");
      if (g.shared_bytes > 48 * 1024) {
        const CUresult r =
            d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(g.shared_bytes));
        if (r != CUDA_SUCCESS)
          throw TrialFailure(TrialStatus::LaunchError, g.entry + ": cannot raise dynamic shared memory to " +
                                                           std::to_string(g.shared_bytes) + " bytes: " + error_text(r));
      }
      fns.push_back(f);
    }
  } catch (...) {
    for (CUmodule m : loaded) d.cuModuleUnload(m);
    throw;
  }
  modules = std::move(loaded);
  functions = std::move(fns);
  generation = dev->generation;
}

void SpecKernel::fill_constants(Session& s) {
  for (std::size_t m = 0; m < modules.size(); ++m)
    for (const auto& c : constant_fills[m]) {
      CUdeviceptr ptr = 0;
      std::size_t bytes = 0;
      check(s.d().cuModuleGetGlobal(&ptr, &bytes, modules[m], c.lowered.c_str()), "cuModuleGetGlobal " + c.symbol);
      const auto& data = s.host_inputs_.at(c.argument).data;
      s.upload(ptr, data.data(), std::min(bytes, data.size()), "fill __constant__ " + c.symbol + " from " + c.argument);
    }
  constants_generation = generation;
}

void SpecKernel::ensure_loaded(Session& s) {
  if (generation != dev->generation) {
    modules.clear();
    load(s);
  }
  if (constants_generation != generation) fill_constants(s);
  for (const auto& [name, bytes] : workspace_bytes) s.ensure_workspace(name, bytes);
}

const CUtensorMap& SpecKernel::tensor_map(Session& s, const std::string& name, TensorMapArg& t, int copy) {
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
      &map, tensor_map_type(t.type), static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(ptr), t.dims.data(),
      strides.data(), t.box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
      tensor_map_swizzle(t.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw TrialFailure(TrialStatus::LaunchError,
                       "tensor map " + name + " over " + t.tensor + ": the driver rejects it (" + error_text(r) +
                           "); rows must be 16-byte aligned, boxes at most 256 elements a side and, when swizzled, "
                           "the inner box no wider than the swizzle span");
  encoded_ptr = ptr;
  return map;
}

void SpecKernel::enqueue(Session& s, int copy) {
  const Driver& d = s.d();
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    const auto& g = plan.launches[i].geometry;
    const auto& args = plan.launches[i].args;
    std::vector<CUdeviceptr> ptrs(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t a = 0; a < args.size(); ++a) {
      const std::string& name = args[a];
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
                           static_cast<unsigned>(g.grid[2]), static_cast<unsigned>(g.block[0]),
                           static_cast<unsigned>(g.block[1]), static_cast<unsigned>(g.block[2]),
                           static_cast<unsigned>(g.shared_bytes), s.stream(), params.data(), nullptr),
          "cuLaunchKernel " + g.entry);
  }
}

// ---------------------------------------------------------------------------------------------
void CublasKernel::enqueue(Session& s, int copy) {
  cublasHandle_t h = s.cublas();
  const float alpha = 1.f, beta = 0.f;
  const CUdeviceptr bp = b.empty() ? converted_b : s.buffer(b, copy);
  // Row-major C = A*B is column-major C^T = B^T * A^T.
  check_cublas(cublasGemmEx(h, op_b, CUBLAS_OP_N, n, m, k, &alpha, reinterpret_cast<const void*>(bp), type_b, ldb,
                            reinterpret_cast<const void*>(s.buffer(a, copy)), type_a, k, &beta,
                            reinterpret_cast<void*>(c), type_a, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace ktune::cuda
