#pragma once
// The CPU backend: always built, the embedded default. Real blocked kernels (gemm f32,
// qmatmul f32 x int8) whose parameters matter, timed with a steady clock (CPU work is
// synchronous).
#include <memory>

#include "ktune/backend.h"

namespace ktune {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace ktune
