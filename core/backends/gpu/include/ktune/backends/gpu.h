#pragma once
// What a GPU ProblemSession (cuda, hip) tells beyond the generic interface (dynamic_cast to it).
#include <utility>

namespace ktune {

class GpuSessionInfo {
 public:
  virtual ~GpuSessionInfo() = default;
  // Runs a short busy probe now and returns the SM clock it saw (cycles against the wall clock);
  // RunError where the vendor has no probe.
  virtual double measure_sm_clock_mhz() = 0;
  // The SM clock seen by probes in this session so far: lowest and highest.
  virtual std::pair<double, double> sm_clock_range_mhz() const = 0;
  // Context resets after sticky faults (crashed trials) so far.
  virtual int recoveries() const = 0;
};

}  // namespace ktune
