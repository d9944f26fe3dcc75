#pragma once
#include <optional>
#include <string>

#include "ktune/device.h"
#include "ukernels.h"

namespace ktune::cpu {

// Describes the CPU this process runs on (see cpu_device.cpp for where each property comes
// from), as KTUNE_CPU_DEVICE overrides it when set.
DeviceInfo detect_cpu();

// Bytes of packing workspace a config may ask for: a quarter of physical memory, at most 2 GiB.
double workspace_limit_bytes();

// A synthetic device, so that tests and CI meet other machines' caches, thread counts and ISAs
// on this one: KTUNE_CPU_DEVICE="l1d=32K l2=256K l3=2M cores=1 threads=1 isa=portable", every
// field optional (sizes in bytes with an optional K, M or G suffix; threads defaults to cores;
// isa one of portable, avx2, avx512, avx512-vnni, at most what the host runs).
inline constexpr const char* kCpuDeviceVariable = "KTUNE_CPU_DEVICE";

struct CpuOverride {
  std::optional<double> l1d, l2, l3;
  std::optional<int> cores, threads;
  std::optional<IsaLevel> isa;
  std::string spec;  // the variable's text, recorded in the device
};

// Throws InputError naming the variable and the malformed field.
CpuOverride parse_cpu_override(const std::string& spec);
// The variable's override; nullopt when it is unset or blank.
std::optional<CpuOverride> cpu_override_from_env();
// The level the override leaves a host that runs up to `host_isa` (InputError above it).
IsaLevel allowed_isa_level(IsaLevel host_isa, const std::optional<CpuOverride>& o);
// `host` (its ISA properties those of `host_isa`) with the override applied and marked synthetic.
// Throws InputError for an isa above host_isa, or caches or counts that no machine has
// (l1d < l2 <= l3 and cores <= threads must hold; a field left out is the host's).
DeviceInfo apply_cpu_override(DeviceInfo host, IsaLevel host_isa, const CpuOverride& o);

}  // namespace ktune::cpu
