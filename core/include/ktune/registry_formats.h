#pragma once
// The registry in the seed tools' own file formats, for their users' loaders and files:
// - aiter: its tuned Triton GEMM configs by M bucket (registry_format_aiter.h);
// - tpu-inference: its tuned_data files, flat and nested, read and written
//   (registry_format_tpu.h).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"
#include "ktune/registry_format_aiter.h"
#include "ktune/registry_format_tpu.h"
