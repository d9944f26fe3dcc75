// The paged_attention family on the device: its reference kernel against a dense brute force on
// the host (f64, pages gathered through the table), then configs covering every value of every
// parameter and every split / q-heads-per-block pair against that reference, on ragged lengths
// and shuffled page tables (a kernel that ignores the table or the lengths cannot pass), GQA
// groups of 1, 4 and 8, head_dim 32 to 256, page sizes 8 to 64, f16 and bf16. Split configs are
// validated twice: the merge counters must be left at zero for the next launch.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "check.h"
#include "device_checks.h"
#include "gpu.h"
#include "ktune/backends/gpu.h"
#include "ktune/host_data.h"
#include "ktune/measurement.h"
#include "paged_covering.h"

using namespace ktune;

namespace {

struct Shape {
  long seqs, q_heads, kv_heads, head_dim, page, max_len, min_len;
  std::string dtype;
};

std::vector<std::int32_t> ints(const std::vector<unsigned char>& bytes) {
  std::vector<std::int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// out[b][h][:] = softmax(q . K^T / sqrt(d)) V over sequence b's tokens, in f64.
std::vector<double> brute_force(const GpuSessionInfo& s, const Shape& sh) {
  const ElemType t = elem_type_from_string(sh.dtype);
  const auto& q = s.host_input("Q");
  const auto& k = s.host_input("K");
  const auto& v = s.host_input("V");
  const auto lengths = ints(s.host_input("lengths"));
  const auto table = ints(s.host_input("page_table"));
  const long max_pages = (sh.max_len + sh.page - 1) / sh.page, d = sh.head_dim;
  std::vector<double> out(sh.seqs * sh.q_heads * d);
  for (long b = 0; b < sh.seqs; ++b)
    for (long h = 0; h < sh.q_heads; ++h) {
      const long kvh = h / (sh.q_heads / sh.kv_heads), qrow = (b * sh.q_heads + h) * d;
      std::vector<double> score(lengths[b]);
      double mx = -INFINITY;
      auto row = [&](long tok) {
        return ((table[b * max_pages + tok / sh.page] * sh.kv_heads + kvh) * sh.page + tok % sh.page) * d;
      };
      for (long tok = 0; tok < lengths[b]; ++tok) {
        double dot = 0;
        for (long e = 0; e < d; ++e) dot += load_elem(q.data(), t, qrow + e) * load_elem(k.data(), t, row(tok) + e);
        score[tok] = dot / std::sqrt(static_cast<double>(d));
        mx = std::max(mx, score[tok]);
      }
      double sum = 0;
      for (double& x : score) sum += x = std::exp(x - mx);
      for (long tok = 0; tok < lengths[b]; ++tok)
        for (long e = 0; e < d; ++e) out[qrow + e] += score[tok] / sum * load_elem(v.data(), t, row(tok) + e);
    }
  return out;
}

// The workload is what the test claims: ragged lengths, one at max_model_len, a shuffled table.
void check_workload(const GpuSessionInfo& s, const Shape& sh, const std::string& key) {
  const auto lengths = ints(s.host_input("lengths"));
  const auto table = ints(s.host_input("page_table"));
  std::set<std::int32_t> distinct(lengths.begin(), lengths.end());
  CHECK_MSG(*distinct.rbegin() == sh.max_len, key);
  CHECK_MSG(*distinct.begin() >= sh.min_len, key);
  if (sh.min_len < sh.max_len) CHECK_MSG(sh.seqs < 3 || distinct.size() > 1, key + ": lengths are not ragged");
  bool in_order = true;
  for (long i = 1; i < (lengths[0] + sh.page - 1) / sh.page; ++i) in_order &= table[i] == table[i - 1] + 1;
  CHECK_MSG(!in_order || lengths[0] <= 2 * sh.page, key + ": the page table is not shuffled");
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_paged_attention_gpu");
  const KernelFamily family = gpu.backend->family("paged_attention");
  const Shape shapes[] = {{5, 8, 2, 128, 16, 300, 1, "bf16"},
                          {3, 4, 4, 64, 64, 1000, 1, "f16"},
                          {4, 16, 2, 256, 8, 517, 1, "bf16"},
                          {7, 8, 1, 32, 32, 200, 100, "f16"},
                          {2, 32, 8, 128, 16, 4096, 4096, "bf16"}};
  Tolerance tol;
  tol.atol = 5e-3, tol.rtol = 1e-2;
  int validated = 0;
  for (const Shape& sh : shapes) {
    const Problem p = ktune_test::make_problem(family, {{"num_sequences", std::to_string(sh.seqs)},
                                                        {"num_q_heads", std::to_string(sh.q_heads)},
                                                        {"num_kv_heads", std::to_string(sh.kv_heads)},
                                                        {"head_dim", std::to_string(sh.head_dim)},
                                                        {"page_size", std::to_string(sh.page)},
                                                        {"max_model_len", std::to_string(sh.max_len)},
                                                        {"min_len", std::to_string(sh.min_len)},
                                                        {"dtype", sh.dtype}});
    auto session = gpu.backend->open(gpu.device, family, p, 1234);
    const auto& info = dynamic_cast<const GpuSessionInfo&>(*session);
    check_workload(info, sh, p.key());
    const std::vector<double> want = brute_force(info, sh);
    ktune_test::check_reference(info.reference_output(), want, tol, p.key());

    Variables ctx = gpu.device.variables();
    for (const auto& [name, v] : family.variables(p)) ctx[name] = v;
    const auto chosen =
        ktune_test::paged_covering(family.default_space.enumerate(ctx));
    validated += ktune_test::validate_configs(*session, chosen, tol, p.key(),
                                              [](const Config& c) { return c.get("SPLITS") > 1 ? 2 : 1; });
    std::printf("%s: reference = brute force, %zu configs validated\n", p.key().c_str(), chosen.size());
  }
  std::printf("%d validations\n", validated);
  return ktune_test::finish("test_paged_attention_gpu");
}
