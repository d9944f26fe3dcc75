#pragma once
// What a GPU ProblemSession (cuda, hip) tells beyond the generic interface (dynamic_cast to it).
#include <string>
#include <utility>
#include <vector>

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
  // The seeded data of input `name` as it was uploaded, and the reference output every config is
  // compared with (a test checks the reference itself against a brute force on the host).
  virtual const std::vector<unsigned char>& host_input(const std::string& name) const = 0;
  virtual const std::vector<double>& reference_output() const = 0;
};

}  // namespace ktune
