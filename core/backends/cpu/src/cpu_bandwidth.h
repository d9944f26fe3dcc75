#pragma once
// The CPU's memory read bandwidth, the roofline's slope: every core streams through its slice of
// a buffer several times the last-level cache (first touched by the thread that reads it, so the
// pages sit near it), the best of a few passes, as STREAM reports its best. Measured once per
// device: the number is kept in a small cache file (bandwidth.json in the CPU cache folder,
// $KTUNE_CPU_CACHE, else $XDG_CACHE_HOME/ktune/cpu or ~/.cache/ktune/cpu) and read back by every
// later process, as a GPU's bandwidth comes with the device.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

#include "ktune/device.h"

namespace ktune::cpu {

// Bytes the measurement streams through: four times the last-level cache, so the passes come from
// memory and not from the cache, at least 64 MiB, at most 1 GiB and the device's workspace limit.
std::size_t bandwidth_buffer_bytes(const DeviceInfo& device);

// `threads` threads (this one among them) each read their slice of a `bytes` buffer, `passes`
// times in step; the fastest pass's bytes over its time (first reader's start to last reader's
// end) in GB/s (10^9 bytes per second). Throws RunError when the buffer cannot be allocated.
double measure_read_bandwidth_gbs(std::size_t bytes, int threads, int passes);

struct Bandwidth {
  double gbs = 0;      // 0: not known
  std::string source;  // how it was found, or why it is not known
};

// The device's read bandwidth as `dir`/bandwidth.json keeps it, else found by `probe` (a
// measurement, GB/s) and kept there for the next process. The file keys devices by name, cores,
// threads and last-level cache; an entry that is not a plausible number, or a file that does not
// read, is measured again and rewritten. A folder that cannot be written still gives the number
// measured (and says it was not kept).
Bandwidth cached_read_bandwidth(const DeviceInfo& device, const std::filesystem::path& dir,
                                const std::function<double()>& probe);

// The bandwidth of this machine's CPU, as detect_cpu() records it (mem_bandwidth_gbs).
Bandwidth host_read_bandwidth(const DeviceInfo& host);

}  // namespace ktune::cpu
