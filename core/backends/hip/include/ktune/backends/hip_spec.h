#pragma once
// The HIP backend's spec dialect: AMD device properties (compute units, LDS, wavefront size,
// registers per wave, the matrix-core kinds a target has) and the reference computed on the
// device by a simple trusted kernel. Plain data (no ROCm), built with every configuration.
#include "ktune/kernel_spec.h"

namespace ktune {

const SpecDialect& hip_spec_dialect();

}  // namespace ktune
