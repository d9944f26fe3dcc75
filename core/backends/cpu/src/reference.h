#pragma once
// Accurate references, computed once per problem: products accumulated in double.
#include <cstdint>
#include <vector>

#include "thread_pool.h"

namespace ktune::cpu {

// alpha * A[M,K] * B[K,N] (row-major); beta is 0 in the sessions' workload.
std::vector<double> gemm_reference(const float* A, const float* B, long M, long N, long K, double alpha,
                                   ThreadPool& pool);

// y[b, o] = scale[o] * sum_i x[b, i] * w[o, i]
std::vector<double> qmatmul_reference(const float* x, const std::int8_t* w, const float* scale, long batch, long out,
                                      long in, ThreadPool& pool);

// sum_i x[i] * y[i] in double, vectorized for the ISA this CPU runs.
double dot_f64(const double* x, const double* y, long n);

}  // namespace ktune::cpu
