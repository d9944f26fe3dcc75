#pragma once
// Mixture-of-experts routing for grouped GEMM workloads, generated the same way for the CPU family
// and for kernel specs ("init": {"routing": ...}; kernel_spec.h): every token picks `topk`
// distinct experts, popularity skewed as a real router's is, so a few experts are hot and, with
// many experts, some get no rows at all. The draws come from host_data's counter-based generator:
// a seed gives the same routing on every machine and standard library.
//
// Which routing a problem gets follows one rule everywhere (the CPU family, kernel specs, and the
// Python port the baselines and the Triton worker use, bench/cuda/moe_routing.py): the workload
// seed and the counts that shape a routing (moe_routing_seed), nothing else. A real MoE layer's
// forward and backward passes share one routing, so fwd, dX and dW of one shape are timed on the
// same experts' rows, and the CPU and GPU families of one key on the same work.
#include <cstdint>
#include <vector>

namespace ktune {

// Routed row r = t * topk + j is token t's j-th choice.
struct MoeRouting {
  long experts = 0, tokens = 0, topk = 0;
  std::vector<std::int32_t> expert;  // [R] routed row -> expert
  std::vector<long> offset;          // [experts + 1] first expert-order position of each expert
  std::vector<std::int32_t> row;     // [R] expert-order position -> routed row (stable within an expert)
  std::vector<std::int32_t> token;   // [R] expert-order position -> token (row / topk)
  long rows() const { return tokens * topk; }
  long count(long e) const { return offset[e + 1] - offset[e]; }
  long busiest() const;  // rows of the hottest expert
};

// Expert popularity falls off as 1/rank^1.5 over a seeded ranking; each token draws its topk
// experts without replacement in proportion to it. Throws InputError when topk > experts or a
// count is not positive.
MoeRouting generate_moe_routing(long experts, long tokens, long topk, std::uint64_t seed);

// The seed generate_moe_routing draws a problem's routing from, for the run's workload seed. Only
// the counts enter, not the pass, hidden, intermediate, dtype or a tensor-parallel split: those
// change what is computed on the routed rows, not which expert a token picks, and a key field that
// entered would give one layer's passes (or its CPU and GPU families) different experts to read.
std::uint64_t moe_routing_seed(std::uint64_t workload_seed, long experts, long tokens, long topk);

// Fills offset, row and token from `expert` (exposed so tests can route by hand).
void sort_moe_routing(MoeRouting& r);

}  // namespace ktune
