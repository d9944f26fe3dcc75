#pragma once
// Accurate references, computed once per problem: products accumulated in double.
#include <cstdint>
#include <vector>

#include "ktune/moe_routing.h"
#include "paged_attention.h"
#include "thread_pool.h"

namespace ktune::cpu {

enum class MoePass;

// alpha * A[M,K] * B[K,N] (row-major); beta is 0 in the sessions' workload.
std::vector<double> gemm_reference(const float* A, const float* B, long M, long N, long K, double alpha,
                                   ThreadPool& pool);

// y[b, o] = scale[o] * sum_i x[b, i] * w[o, i]
std::vector<double> qmatmul_reference(const float* x, const std::int8_t* w, const float* scale, long batch, long out,
                                      long in, ThreadPool& pool);

// sum_i x[i] * y[i] in double, vectorized for the ISA this CPU runs.
double dot_f64(const double* x, const double* y, long n);

// The grouped (MoE) GEMM of `pass` (grouped_gemm.h has the tensors), straight from the routing's
// expert of each row, not through its expert-order arrays: y [R, I], dx [R, H] or dw [E, I, H].
std::vector<double> grouped_gemm_reference(MoePass pass, const MoeRouting& routing, const float* x, const float* w,
                                           const float* dy, long hidden, long intermediate, ThreadPool& pool);

// Per sequence and q head: every score, the max-subtracted softmax and the weighted sum of V,
// rows found through the page table (the layout of paged_attention.h).
std::vector<double> paged_attention_reference(const PagedAttentionOperands& op, ThreadPool& pool);

}  // namespace ktune::cpu
