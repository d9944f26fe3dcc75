// The paged_attention family's spec without a GPU: it parses, its space on an H100 keeps configs
// of both schemes for tpu-tune's shapes (and the default config everywhere the shape rules
// allow), its workload is ragged and shuffled, and configs covering every value of every
// parameter, the reference kernel and the read ceiling of bench/cuda compile with NVRTC for
// sm_90 within the H100's register and shared-memory limits. Running them waits for a GPU
// (cuda/test_paged_attention_gpu).
#include <cstdio>
#include <filesystem>
#include <set>

#include "build_plan.h"
#include "check.h"
#include "compiler.h"
#include "h100.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/measurement.h"
#include "ktune/search_space.h"
#include "paged_covering.h"
#include "spec_build.h"

using namespace ktune;
using ktune_test::h100;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(KTUNE_SOURCE_DIR);

const cuda::Compiler& compiler() {
  static const cuda::Compiler c("sm_90", {});
  return c;
}

Problem problem(const KernelSpec& s, long seqs, long q, long kv, long head_dim, long page, long len, long min_len,
                const std::string& dtype) {
  Problem p;
  p.family = s.family().name;
  p.fields = {{"num_sequences", std::to_string(seqs)}, {"num_q_heads", std::to_string(q)},
              {"num_kv_heads", std::to_string(kv)},    {"head_dim", std::to_string(head_dim)},
              {"page_size", std::to_string(page)},     {"max_model_len", std::to_string(len)},
              {"min_len", std::to_string(min_len)},    {"dtype", dtype}};
  return p;
}

Variables context(const KernelSpec& s, const Problem& p) { return ktune_test::h100_context(s, p); }

// "" when config `c` (with `launches`) plans, compiles and fits the H100; else why not.
std::string build(const KernelSpec& s, const std::vector<SpecLaunch>& launches, const Problem& p, const Config& c) {
  return ktune_test::build_on(compiler(), s, launches, p, c, h100());
}

void test_space_and_builds() {
  const KernelSpec s = KernelSpec::load(kSource / "resources/kernels/cuda/paged_attention.json", cuda_spec_dialect());
  const std::vector<Problem> problems = {problem(s, 16, 32, 8, 128, 16, 4096, 4096, "bf16"),
                                         problem(s, 35, 32, 8, 128, 64, 8192, 1, "f16"),
                                         problem(s, 4, 16, 2, 256, 8, 517, 1, "bf16")};
  int built = 0, tma = 0;
  for (const Problem& p : problems) {
    const Variables ctx = context(s, p);
    const auto valid = s.family().default_space.enumerate(ctx);
    std::set<double> schemes;
    for (const Config& c : valid) schemes.insert(c.get("MMA"));
    CHECK_MSG(schemes.size() == 2, p.key() + ": both schemes must stay in the space");
    const auto pruned = s.family().default_space.violated(s.family().default_config, ctx);
    CHECK_MSG(!pruned, p.key() + ": the default config is pruned by " + pruned.value_or(""));
    const auto chosen = ktune_test::paged_covering(valid);
    for (const Config& c : chosen) {
      const std::string why = build(s, s.launches(), p, c);
      CHECK_MSG(why.empty(), p.key() + " " + c.key() + ": " + why);
      built += why.empty();
      tma += why.empty() && c.get("TMA") == 1;
    }
    const std::string ref = build(s, {s.reference().launch}, p, s.family().default_config);
    CHECK_MSG(ref.empty(), p.key() + " reference: " + ref);
    std::printf("%s: %zu valid configs, %zu built\n", p.key().c_str(), valid.size(), chosen.size());
  }
  CHECK(built > 20);
  CHECK_MSG(tma > 0, "no TMA-fed config was built");
}

// The read ceiling reads the same pages: same key fields, and it builds.
void test_read_ceiling() {
  const KernelSpec attn =
      KernelSpec::load(kSource / "resources/kernels/cuda/paged_attention.json", cuda_spec_dialect());
  const KernelSpec read = KernelSpec::load(kSource / "bench/cuda/paged_read.json", cuda_spec_dialect());
  CHECK(attn.family().key_fields.size() == read.family().key_fields.size());
  for (const char* arg : {"lengths", "page_table", "K", "V"}) {
    CHECK_MSG(read.argument(arg) && attn.argument(arg), arg);
    if (read.argument(arg) && attn.argument(arg))
      CHECK_MSG(read.argument(arg)->count == attn.argument(arg)->count, arg);
  }
  const Problem p = problem(read, 64, 32, 8, 128, 16, 4096, 4096, "bf16");
  const auto valid = read.family().default_space.enumerate(context(read, p));
  CHECK(!valid.empty());
  const std::string why = build(read, read.launches(), p, read.family().default_config);
  CHECK_MSG(why.empty(), why);
}

// A --space file that copied the spec's constraints still gets its launch limits: the bench's
// space kept 360 of 1,296 trials the H100 could not launch (256 to 512 KiB of shared memory).
void test_user_space_keeps_launch_limits() {
  const KernelSpec s = KernelSpec::load(kSource / "resources/kernels/cuda/paged_attention.json", cuda_spec_dialect());
  CHECK(!s.family().launch_limits.empty());
  const SearchSpace file = SearchSpace::load(kSource / "bench/cuda/paged_space.json");
  const SearchSpace space = s.family().user_space(file);
  const Problem p = problem(s, 64, 32, 8, 128, 16, 4096, 4096, "bf16");
  const Variables ctx = context(s, p);
  Config big = s.family().default_config;
  for (const auto& [name, v] : std::vector<std::pair<std::string, int>>{
           {"TOKENS", 32}, {"QPB", 4}, {"WARPS", 8}, {"STAGES", 4}, {"MMA", 1}, {"L2HINT", 1}})
    big.set(name, v);
  CHECK(!file.violated(big, ctx));
  const auto why = space.violated(big, ctx);
  CHECK_MSG(why && why->find("shared memory") != std::string::npos, why.value_or("not pruned"));
  CHECK(space.enumerate(ctx).size() < file.enumerate(ctx).size());
  // A space that already holds the limits is returned as it is.
  CHECK(s.family().user_space(s.family().default_space).constraints() == s.family().default_space.constraints());
}

// Shapes the kernels cannot serve are refused with the rule that says why.
void test_shape_rules() {
  const KernelSpec s = KernelSpec::load(kSource / "resources/kernels/cuda/paged_attention.json", cuda_spec_dialect());
  CHECK_THROWS(InputError, s.family().check_shape(problem(s, 4, 12, 8, 128, 16, 256, 1, "bf16")), "multiple");
  CHECK_THROWS(InputError, s.family().check_shape(problem(s, 4, 8, 8, 96, 16, 256, 1, "bf16")), "head_dim");
  CHECK_THROWS(InputError, s.family().check_shape(problem(s, 4, 8, 8, 128, 16, 256, 257, "bf16")), "min_len");
}

}  // namespace

int main() {
  test_space_and_builds();
  test_read_ceiling();
  test_user_space_keeps_launch_limits();
  test_shape_rules();
  return ktune_test::finish("test_paged_attention_spec");
}
