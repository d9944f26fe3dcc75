#pragma once
// The few device operations a kernel-spec session needs, behind one small interface with one
// implementation per vendor (the CUDA driver API in core/backends/cuda, the HIP runtime in
// core/backends/hip), and an owner for every object they make. Nothing above this header names a
// vendor type: handles are opaque pointers, failures are ApiError, and the session
// (spec_session.h) is written once over it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ktune/conditions.h"
#include "ktune/kernel_spec.h"

namespace ktune::gpu {

using DevicePtr = std::uint64_t;
using Handle = void*;  // a stream, event, module, function or graph of the vendor's API

// A failed call, classified the way the session must react to it.
class ApiError : public std::runtime_error {
 public:
  enum class Kind {
    Failed,       // this call failed; the context is fine (a launch out of resources, a bad argument)
    OutOfMemory,  // an allocation
    Fault,        // a kernel faulted: the context is unusable until reset
  };
  ApiError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  bool sticky() const { return kind_ == Kind::Fault; }

 private:
  Kind kind_;
};

// A loaded function's own limits: registers and launch bounds cap its threads per block.
struct FunctionLimits {
  std::uint64_t max_threads = 0;
  std::uint64_t static_shared = 0;
  int registers = 0;
};

// A tensor map (TMA descriptor) over a dense row-major tensor, dims innermost first.
struct TensorMapDesc {
  ElemType type{};
  int swizzle = 0;  // bytes: 0, 32, 64, 128
  std::vector<std::uint64_t> dims;
  std::vector<std::uint32_t> box;
};
constexpr std::size_t kTensorMapBytes = 128;

// C = A x B, row-major (B is n x k when b_nk), accumulated in f32.
struct GemmCall {
  int m = 0, n = 0, k = 0;
  DevicePtr a = 0, b = 0, c = 0;
  ElemType in{}, out{};  // A and B share `in`
  bool b_nk = false;
};

// Y = block-scaled 8-bit A [m, k] x B [n, k]^T, row-major, e4m3 codes with f32 scales: a_scale one
// per 1x128 block of A, stored [k / 128][m] (m fastest, as cuBLASLt and torch._scaled_mm take
// it), b_scale one per 128x128 block of B, [ceil(n / 128)][k / 128]; k a multiple of 128.
struct BlockScaledCall {
  int m = 0, n = 0, k = 0;
  DevicePtr a = 0, b = 0, a_scale = 0, b_scale = 0, y = 0;
  ElemType out{};  // bf16 or f32
};

// A gemm the vendor trusts: its tuned library (cuBLAS, timed as the baseline too) or a simple
// kernel of ktune's own.
class GemmLibrary {
 public:
  virtual ~GemmLibrary() = default;
  // "cuBLAS": names the reference in mismatch messages.
  virtual std::string name() const = 0;
  // A tuned library, worth timing against every config.
  virtual bool baseline() const = 0;
  // Enqueues `call` on the stream the library was made for; ApiError for types it lacks.
  virtual void enqueue(const GemmCall& call) = 0;
  // The library's block-scaled 8-bit gemm ("cuBLASLt block-scaled"), or empty with why not in
  // `why_not` (a toolkit or device without it).
  virtual std::string block_scaled_name(std::string& why_not) const {
    why_not = name() + " has no block-scaled gemm";
    return "";
  }
  // Makes what enqueue(call) needs for call's shape, outside any graph capture (the library's
  // plan: its algorithm query); ApiError where it cannot.
  virtual void plan(const BlockScaledCall& call) { enqueue(call); }
  // Enqueues `call` on the library's stream; ApiError where it cannot.
  virtual void enqueue(const BlockScaledCall& call) {
    (void)call;
    throw ApiError(ApiError::Kind::Failed, name() + " has no block-scaled gemm");
  }
};

class Toolchain;

// One device of one vendor, in a context of ktune's own (one per device and process, shared by
// every session on it). Every call but the context's own is made with the context current on
// the calling thread, which make_current() ensures. Failures throw ApiError.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  // --- the context
  virtual void make_current() = 0;
  // Multiprocessors (SMs, CUs) and the L2 size: the session's own kernels and buffers are sized by them.
  virtual int compute_units() const = 0;
  virtual double l2_bytes() const = 0;

  // --- memory
  virtual DevicePtr alloc(std::size_t bytes) = 0;
  virtual void free(DevicePtr p) noexcept = 0;
  virtual void upload(DevicePtr dst, const void* src, std::size_t bytes, Handle stream) = 0;  // in stream order
  virtual void download(void* dst, DevicePtr src, std::size_t bytes) = 0;                     // blocking
  virtual void fill8(DevicePtr dst, unsigned char value, std::size_t bytes, Handle stream) = 0;
  virtual void fill32(DevicePtr dst, std::uint32_t value, std::size_t count, Handle stream) = 0;

  // --- code
  virtual Handle load_module(const std::string& binary) = 0;
  virtual void unload_module(Handle module) noexcept = 0;
  virtual Handle function(Handle module, const std::string& name) = 0;
  virtual FunctionLimits limits(Handle function) = 0;
  // Lets `function` use `bytes` of dynamic shared memory (beyond the default a vendor grants
  // without asking); ApiError when the device cannot.
  virtual void allow_dynamic_shared(Handle function, std::uint64_t bytes) = 0;
  // A module's global symbol (a __constant__ array): its address and size.
  virtual std::pair<DevicePtr, std::size_t> global(Handle module, const std::string& name) = 0;
  virtual void launch(Handle function, const LaunchGeometry& g, Handle stream, void** params) = 0;
  // Writes the kTensorMapBytes of a descriptor of `t` at `base` into `out` (dialects with tensor maps).
  virtual void encode_tensor_map(const TensorMapDesc& t, DevicePtr base, void* out) = 0;
  // The vendor's trusted gemm, enqueueing on `stream`.
  virtual std::unique_ptr<GemmLibrary> gemm(Handle stream, const Toolchain& toolchain) = 0;
  // The device's clock, power and limits now (ktune/conditions.h), from the vendor's management
  // library; nullopt where there is none. Called while a timed sample runs, so it must not wait on the device.
  virtual std::optional<ConditionsReading> read_conditions() { return std::nullopt; }

  // --- streams, events, graphs
  virtual Handle create_stream() = 0;
  virtual void destroy_stream(Handle stream) noexcept = 0;
  virtual void synchronize(Handle stream) = 0;
  virtual Handle create_event() = 0;
  virtual void destroy_event(Handle event) noexcept = 0;
  virtual void record(Handle event, Handle stream) = 0;
  virtual bool finished(Handle event) = 0;  // false while pending
  virtual float elapsed_ms(Handle start, Handle stop) = 0;
  // Launches between begin_capture and end_capture are recorded, not run; end_capture returns
  // the graph ready to launch. A failed capture is ended before ApiError is thrown.
  virtual void begin_capture(Handle stream) = 0;
  virtual Handle end_capture(Handle stream) = 0;
  virtual void launch_graph(Handle graph, Handle stream) = 0;
  virtual void destroy_graph(Handle graph) noexcept = 0;

  // --- recovery (not virtual: the same for every vendor)
  // The context's generation grows at every reset: a handle made in an older one died with it.
  int generation() const { return generation_; }
  // Why this process can no longer use the device, or empty.
  const std::string& lost() const { return lost_; }
  bool alive(int generation) const { return generation == generation_ && lost_.empty(); }
  // Throws RunError when lost().
  void check_usable() const;
  // After a sticky fault: a fresh context. Some drivers keep the fault for the whole process
  // (H100, driver 580); then lost() says so and false is returned: only a new process can go on.
  bool reset();
  // Shared while modules load on compile threads, unique while the context is reset.
  std::shared_mutex mutex;

 protected:
  // Destroys the context and makes a new one; false with `why` when the driver refuses.
  virtual bool recreate(std::string& why) = 0;

 private:
  int generation_ = 0;
  std::string lost_;
};

// Owns one handle of a context, released only in the generation it was made in (a reset
// context took its handles with it). Move-only.
template <void (DeviceApi::*Release)(Handle) noexcept>
class Owned {
 public:
  Owned() = default;
  Owned(std::shared_ptr<DeviceApi> api, Handle h) : api_(std::move(api)), h_(h), generation_(api_->generation()) {}
  ~Owned() { reset(); }
  Owned(Owned&& o) noexcept : api_(std::move(o.api_)), h_(std::exchange(o.h_, nullptr)), generation_(o.generation_) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = std::move(o.api_);
      h_ = std::exchange(o.h_, nullptr);
      generation_ = o.generation_;
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return h_; }
  // Made, and made in the current context.
  bool alive() const { return h_ && api_->alive(generation_); }
  void reset() noexcept {
    if (h_ && api_->alive(generation_)) (api_.get()->*Release)(h_);
    h_ = nullptr;
  }

 private:
  std::shared_ptr<DeviceApi> api_;
  Handle h_ = nullptr;
  int generation_ = -1;
};

using Stream = Owned<&DeviceApi::destroy_stream>;
using Event = Owned<&DeviceApi::destroy_event>;
using Module = Owned<&DeviceApi::unload_module>;
using Graph = Owned<&DeviceApi::destroy_graph>;

// Device memory of at least 16 bytes; running out is a RunError naming `what`. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<DeviceApi> api, std::size_t bytes, const std::string& what);
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  DevicePtr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != 0; }
  void reset() noexcept;

 private:
  std::shared_ptr<DeviceApi> api_;
  DevicePtr ptr_ = 0;
  std::size_t bytes_ = 0;
  int generation_ = -1;
};

}  // namespace ktune::gpu
