#include "ktune/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ktune/error.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"

namespace ktune {

long MoeRouting::busiest() const {
  long most = 0;
  for (long e = 0; e < experts; ++e) most = std::max(most, count(e));
  return most;
}

MoeRouting generate_moe_routing(long experts, long tokens, long topk, std::uint64_t seed) {
  if (experts < 1 || tokens < 1 || topk < 1)
    throw InputError("MoE routing of " + std::to_string(tokens) + " tokens, top-" + std::to_string(topk) + " of " +
                     std::to_string(experts) + " experts: every count must be at least 1");
  if (topk > experts)
    throw InputError("MoE routing: topk=" + std::to_string(topk) + " exceeds experts=" + std::to_string(experts) +
                     ": each token picks topk distinct experts; lower topk or raise experts");
  MoeRouting r;
  r.experts = experts;
  r.tokens = tokens;
  r.topk = topk;
  // Draws 0..experts-1 shuffle the ranking (Fisher-Yates); the picks use the draws after them.
  std::vector<long> rank(experts);
  std::iota(rank.begin(), rank.end(), 0L);
  for (long i = experts; i > 1; --i)
    std::swap(rank[i - 1], rank[draw(seed, static_cast<std::uint64_t>(i - 1)) % static_cast<std::uint64_t>(i)]);
  // (rank+1)^1.5 through sqrt, which IEEE rounds exactly: the weights are the same everywhere.
  std::vector<double> popularity(experts);
  for (long e = 0; e < experts; ++e) {
    const double k = static_cast<double>(rank[e] + 1);
    popularity[e] = 1.0 / (k * std::sqrt(k));
  }
  r.expert.resize(static_cast<std::size_t>(r.rows()));
  std::vector<double> left(experts);
  for (long t = 0; t < tokens; ++t) {
    left = popularity;
    for (long j = 0; j < topk; ++j) {
      const double total = std::accumulate(left.begin(), left.end(), 0.0);
      const std::uint64_t i = static_cast<std::uint64_t>(experts + t * topk + j);
      double u = unit_draw(seed, i) * total;
      // Past the sum by rounding, the last expert still available takes it.
      long e = -1;
      for (long c = 0; c < experts; ++c) {
        if (left[c] <= 0) continue;
        e = c;
        if (u < left[c]) break;
        u -= left[c];
      }
      left[e] = 0;
      r.expert[static_cast<std::size_t>(t * topk + j)] = static_cast<std::int32_t>(e);
    }
  }
  sort_moe_routing(r);
  return r;
}

std::uint64_t moe_routing_seed(std::uint64_t workload_seed, long experts, long tokens, long topk) {
  // A hash of the counts as text, which a script ports in a line (bench/cuda/moe_routing.py).
  return workload_seed ^ fnv1a64("moe_routing experts=" + std::to_string(experts) +
                                 " tokens=" + std::to_string(tokens) + " topk=" + std::to_string(topk));
}

void sort_moe_routing(MoeRouting& r) {
  const long R = r.rows();
  r.offset.assign(static_cast<std::size_t>(r.experts + 1), 0);
  for (long i = 0; i < R; ++i) ++r.offset[r.expert[i] + 1];
  std::partial_sum(r.offset.begin(), r.offset.end(), r.offset.begin());
  std::vector<long> next(r.offset.begin(), r.offset.end() - 1);
  r.row.resize(static_cast<std::size_t>(R));
  r.token.resize(static_cast<std::size_t>(R));
  for (long i = 0; i < R; ++i) {
    const long s = next[r.expert[i]]++;
    r.row[s] = static_cast<std::int32_t>(i);
    r.token[s] = static_cast<std::int32_t>(i / r.topk);
  }
}

}  // namespace ktune
