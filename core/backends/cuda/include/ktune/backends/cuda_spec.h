#pragma once
// The CUDA backend's spec dialect: CUDA device properties, TMA tensor maps, the cuBLAS
// reference. Plain data (no toolkit), built with every configuration so specs can be checked
// anywhere.
#include "ktune/kernel_spec.h"

namespace ktune {

const SpecDialect& cuda_spec_dialect();

}  // namespace ktune
