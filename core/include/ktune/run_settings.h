#pragma once
// RunSettings: what decides which configs a run measures and how: its problems, search space,
// strategy and measurement settings. One value type for the tune request, the run's metadata and
// the workbench's session, so that a resumed run can be checked against the run it continues
// field by field.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/measurement.h"
#include "ktune/problem.h"
#include "ktune/search_space.h"
#include "ktune/shard.h"
#include "ktune/strategy.h"

namespace ktune {

struct RunSettings {
  std::vector<Problem> problems;
  SearchSpace space;  // the family's default unless the user gave one
  StrategySpec strategy;
  MeasureSettings measure;
  Tolerance tolerance;
  std::uint64_t seed = 0;  // workload seed: identical inputs for every config of a problem
  ShardSpec shard;         // the slice of (problem x config) this run measures (--shard I/N)

  const RunSettings& settings() const { return *this; }
  RunSettings& settings() { return *this; }

  // {"problems", "space", "strategy", "measure", "tolerance", "seed", "shard"}: the keys of
  // run_metadata.json; "shard" only for a sharded run.
  nlohmann::json to_json() const;
  // Every key required but "shard" (a run without it is unsharded); errors name the key. Throws
  // InputError.
  static RunSettings from_json(const nlohmann::json& j);
};

// One field in which two settings differ: "problems", "space", "strategy.budget",
// "measure.noise_target", "seed", "shard", ... with both values as a person reads them.
struct SettingsDifference {
  std::string field;
  std::string run_value;
  std::string asked_value;
};
// Fields of `asked` that differ from `run`, in the order above. Problems compare as a set: the
// same shapes in another order are the same run.
std::vector<SettingsDifference> differences(const RunSettings& run, const RunSettings& asked);

// The problems with repeated keys removed, first occurrence kept: a shape given twice is tuned once.
std::vector<Problem> unique_problems(const std::vector<Problem>& problems);

}  // namespace ktune
