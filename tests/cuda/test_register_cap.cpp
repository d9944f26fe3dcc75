// The register cap a block's size gives its build, checked without a GPU against NVIDIA's
// allocation rule written out independently (registers per warp in units of 256, a block's warps
// spread over the SM's four sub-partitions of 16 Ki registers each): for every block size from one
// warp to 1,024 threads the cap fits and one more granule would not. The case that failed on the
// H100: a 736-thread block built with --maxrregcount=88 used 82 registers and the driver allowed
// 640 threads; the cap is 80, the cubin check refuses 82, and NVRTC's build under the cap fits.
#include <string>

#include <nlohmann/json.hpp>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "cubin_info.h"
#include "h100.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"

using namespace ktune;
using ktune_test::h100;

namespace {

const cuda::Compiler& compiler() {
  static const cuda::Compiler c("sm_90", {});
  return c;
}

// The cap in the options, or 255 (no option: the block holds the most a thread can use).
int cap_of(const std::vector<std::string>& options) {
  for (const auto& o : options)
    if (o.rfind("--maxrregcount=", 0) == 0) return std::stoi(o.substr(15));
  return 255;
}

// The occupancy calculator's rule, apart from kNvidiaRegisters: whether a block of `threads`
// launches on a 64 Ki-register SM when each thread uses `registers`.
bool launches(int threads, int registers) {
  const int warps = (threads + 31) / 32;
  const int per_warp = (registers * 32 + 255) / 256 * 256;
  const int warps_per_sub_partition = 16384 / per_warp;
  return warps_per_sub_partition * 4 >= warps;
}

void test_table() {
  for (int threads = 32; threads <= 1024; threads += 32) {
    const int cap = cap_of(compiler().register_cap(threads, h100()));
    CHECK_MSG(launches(threads, cap), std::to_string(threads) + " threads, cap " + std::to_string(cap));
    if (cap < 255)
      CHECK_MSG(!launches(threads, cap + 8) && cap % 8 == 0,
                std::to_string(threads) + " threads: cap " + std::to_string(cap) + " is not the largest that fits");
    CHECK(cuda::kNvidiaRegisters.allocated(static_cast<std::uint64_t>(cap), threads) <= 65536);
  }
  // Odd block sizes round up to whole warps, then to groups of four.
  CHECK(cap_of(compiler().register_cap(736, h100())) == 80);
  CHECK(cap_of(compiler().register_cap(737, h100())) == 80);
  CHECK(cap_of(compiler().register_cap(544, h100())) == 96);
  CHECK(cap_of(compiler().register_cap(1024, h100())) == 64);
  CHECK(cap_of(compiler().register_cap(256, h100())) == 255);
  CHECK(cap_of(compiler().register_cap(288, h100())) == 168);
  Variables no_regs = h100();
  no_regs.erase("regs_per_block");
  CHECK(compiler().register_cap(736, no_regs).empty());
}

// A kernel that keeps more values live than 80 registers hold.
constexpr const char* kHungry = R"(
extern "C" __global__ void hungry(float* out, const float* in) {
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = in[threadIdx.x + i * 1024];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = acc[i] * acc[(i + k + 1) % 128] + acc[(i + 64) % 128];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += acc[i] * (i + 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

KernelSpec hungry_spec() {
  static const std::map<std::string, std::string> files{{"hungry.cu", kHungry}};
  const auto j = nlohmann::json::parse(R"({
    "name": "hungry", "source": "hungry.cu", "key_fields": [{"name": "n", "default": 1}],
    "space": {"parameters": {"THREADS": [128, 736]}},
    "arguments": [{"name": "out", "buffer": "f32", "count": "1024", "role": "output"},
                  {"name": "in", "buffer": "f32", "count": "1024*128"}],
    "launches": [{"entry": "hungry", "grid": [1], "block": ["THREADS"], "args": ["out", "in"]}]})");
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "hungry.json", &files);
}

// The CUDA toolchain, but its cubins say every kernel uses `registers` per thread.
class Reports : public gpu::Toolchain {
 public:
  explicit Reports(int registers) : registers_(registers) {}
  CompiledModule compile(const KernelSource& s, const std::vector<std::string>& o,
                         const std::vector<std::string>& e) const override {
    return compiler().compile(s, o, e);
  }
  std::vector<std::string> register_cap(std::uint64_t t, const Variables& d) const override {
    return compiler().register_cap(t, d);
  }
  gpu::ModuleInfo inspect(const std::string& binary) const override {
    gpu::ModuleInfo info = compiler().inspect(binary);
    for (auto& [name, f] : info.functions) f.registers = registers_;
    return info;
  }
  const Utilities& utilities() const override { return compiler().utilities(); }

 private:
  int registers_;
};

// Plans, compiles and checks config THREADS=threads; the failure message, or "" and the
// registers the cubin says its kernel uses.
std::string build(int threads, const gpu::Toolchain& toolchain, int* registers = nullptr) {
  const KernelSpec s = hungry_spec();
  Problem p;
  p.family = "hungry";
  p.fields.emplace_back("n", "1");
  Config c;
  c.set("THREADS", ParamValue(threads));
  try {
    const auto plan = gpu::plan_build(s, s.launches(), p, c, h100(), toolchain);
    const auto modules = gpu::compile_plan(toolchain, s, plan);
    gpu::check_compiled(s, p, c, plan, modules, h100(), toolchain);
    if (registers) *registers = toolchain.inspect(modules[0].binary).functions.begin()->second.registers;
  } catch (const TrialFailure& e) {
    return e.what();
  }
  return "";
}

void test_736_threads() {
  int uncapped = 0, capped = 0;
  CHECK(build(128, compiler(), &uncapped).empty());
  CHECK_MSG(uncapped > 88, "the kernel must need more registers than the caps tried here: " + std::to_string(uncapped));
  const std::string why = build(736, compiler(), &capped);
  CHECK_MSG(why.empty(), why);
  CHECK_MSG(capped > 0 && capped <= 80, std::to_string(capped) + " registers at 736 threads");
  // What the old cap let through: 82 registers (88 allocated) x 24 warps' threads are past 64 Ki.
  const std::string refused = build(736, Reports(82));
  CHECK_MSG(refused.find("82 registers per thread x 736 threads take 67584") != std::string::npos, refused);
  CHECK_MSG(refused.find("by 128 threads") != std::string::npos, refused);
  CHECK(build(736, Reports(80)).empty());
}

}  // namespace

int main() {
  test_table();
  test_736_threads();
  return ktune_test::finish("test_register_cap");
}
