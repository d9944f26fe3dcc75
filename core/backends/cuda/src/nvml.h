#pragma once
// NVML (the driver's management library), loaded with dlopen as the driver is, for the device's
// conditions while a kernel is timed (ktune/conditions.h). Only what ktune reads is declared:
// the toolkit ships no nvml.h everywhere, and these entry points have kept their ABI since
// CUDA 8. A machine without it reads no conditions; nothing else depends on it.
#include <optional>
#include <string>

#include "ktune/conditions.h"

namespace ktune::cuda {

// One GPU as NVML knows it, found by PCI bus id: NVML's device order is not CUDA's (under
// CUDA_VISIBLE_DEVICES, or CUDA_DEVICE_ORDER=FASTEST_FIRST).
class NvmlDevice {
 public:
  // nullopt, with `why`, when NVML is missing or does not know the device.
  static std::optional<NvmlDevice> open(const std::string& pci_bus_id, std::string* why = nullptr);
  // The SM clock, board power and clock event reasons now; nullopt when the clock cannot be read.
  std::optional<ConditionsReading> read() const;

 private:
  explicit NvmlDevice(void* handle) : handle_(handle) {}
  void* handle_;
};

}  // namespace ktune::cuda
