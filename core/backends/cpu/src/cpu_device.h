#pragma once
#include "ktune/device.h"

namespace ktune::cpu {

// Describes the CPU this process runs on (see cpu_device.cpp for where each property comes from).
DeviceInfo detect_cpu();

// Bytes of packing workspace a config may ask for: a quarter of physical memory, at most 2 GiB.
double workspace_limit_bytes();

}  // namespace ktune::cpu
