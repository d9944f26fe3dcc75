#pragma once
// ReplayBackend: a recorded run as a device. The strategy searches the recorded configs (the
// recorded list is the replay's space, under the run's constraints), and the run's trials
// answer: a recorded config's samples come back in their recorded order (cycling when more are
// asked), a recorded failure throws its recorded status. A sparse landscape (a Kernel Tuner cache
// of 898 configs of a 414,720-config space) is searched as the landscape it is, never answered
// with configs nobody measured. One space serves every problem of a run: a config recorded for
// another problem only is answered as a launch_error "not in the recorded landscape". No device, no compiler:
// strategies can be tested in CI and compared on real landscapes (ktune tune --replay, bench/strategies).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

namespace ktune {

class ReplayBackend : public Backend {
 public:
  // Reads the run (metadata and trials). `family` describes the kernel (key fields, FLOP count)
  // when the caller knows it; by default one is made from the run: its problems' fields, no FLOP
  // count. Throws InputError when the run cannot be read or has no trials.
  explicit ReplayBackend(const std::filesystem::path& run_dir, std::optional<KernelFamily> family = std::nullopt);
  // The recorded run's family is this build's own when one of `backends` has it (so TFLOP/s are
  // computed), else one made from the run.
  static std::unique_ptr<ReplayBackend> for_run(const std::filesystem::path& run_dir,
                                                const std::vector<std::unique_ptr<Backend>>& backends);

  // Each recorded answer takes this long (0: instant), so a front end can show the search
  // unfold as a live run does.
  void set_pace_ms(double ms) { pace_ms_ = ms; }

  std::string name() const override { return "replay"; }
  std::vector<DeviceInfo> devices() override { return {metadata_.device}; }
  std::vector<KernelFamily> families() const override { return {family_}; }
  // The recorded run's: its samples were measured on inputs made by them.
  int workload_rules() const override { return metadata_.workload_rules; }
  std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family, const Problem& problem,
                                       std::uint64_t seed) override;

  const RunMetadata& metadata() const { return metadata_; }
  // The recorded trial of each config of `problem_key` (the last one when a config was measured
  // twice), by config key.
  const std::map<std::string, Trial>& landscape(const std::string& problem_key) const;
  // Recorded configs over all problems (one per problem and config).
  std::size_t recorded_configs() const;
  // The replay's space: the recorded configs as an explicit list (recorded_space).
  const SearchSpace& space() const { return space_; }

  // A request that replays the run: its family, problems, the recorded configs as its space, `strategy`, and its
  // measurement settings without warm-up (samples are instant; the noise rule still decides how
  // many of the recorded samples a config takes, as it did when they were recorded).
  TuneRequest request(const StrategySpec& strategy) const;

 private:
  RunMetadata metadata_;
  KernelFamily family_;
  SearchSpace space_;
  double pace_ms_ = 0;
  std::map<std::string, std::map<std::string, Trial>> trials_;  // problem key -> config key -> trial
};

// The configs of `recorded` that `space` holds, once each, as an explicit list in the space's own
// order (the odometer order of its candidate lists, or its list's order) with its constraints, so
// a strategy searching it proposes nothing else. A config the space does not hold (a value that
// is not a candidate, a parameter missing or unknown) is left out. Throws InputError when none is
// left.
SearchSpace recorded_space(const SearchSpace& space, const std::vector<Config>& recorded);

// A family for a run whose kernel this build does not know: the run's problem fields as key
// fields (numeric when every value is an integer), no FLOP or byte count.
KernelFamily family_from_run(const RunMetadata& metadata);

}  // namespace ktune
