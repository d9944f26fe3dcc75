#pragma once
// SearchSpace: named parameters with candidate values, plus constraints that prune impossible
// configs before anything is compiled. Its size before and after pruning is always reported.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/config.h"
#include "ktune/expression.h"

namespace ktune {

// Largest product of candidate lists ktune enumerates: beyond it a walk takes minutes and its
// configs do not fit in memory, so the user is asked to narrow the lists instead.
inline constexpr std::uint64_t kMaxSpaceSize = 10'000'000;

struct Parameter {
  std::string name;
  std::vector<ParamValue> values;
  std::string description;
  friend bool operator==(const Parameter&, const Parameter&) = default;
};

// A constraint holds when its expression is non-zero; one that evaluates to NaN or infinity
// (0/0, mod(x, 0)) is an InputError naming it, never taken as true. Variables: the parameters, the problem's
// numeric key fields (M, N, K, ...), and the device's properties (l2_bytes, cores, smem_per_block, ...).
struct Constraint {
  std::string expr;
  std::string description;  // shown when a config is pruned by it
  friend bool operator==(const Constraint&, const Constraint&) = default;
};

struct PruneReport {
  std::uint64_t total = 0;   // product of the candidate lists
  std::uint64_t valid = 0;   // after constraints
  std::vector<std::pair<std::string, std::uint64_t>> pruned_by;  // constraint expr -> count (first failing)
};

struct ConstraintIssue {
  std::size_t index;  // constraint index
  std::string message;
};

// Throws InputError when `report` left no config to measure, naming `what` (family and problem)
// and the constraint that pruned most.
void require_valid_configs(const PruneReport& report, const std::string& what);

class SearchSpace {
 public:
  SearchSpace() = default;
  SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints);

  const std::vector<Parameter>& parameters() const { return params_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const Parameter* find(const std::string& name) const;

  std::uint64_t total_size() const;  // product, saturating

  // Checks each constraint parses and names only known variables (params + `context` names).
  // Returns one issue per bad constraint; the GUI marks them in place, validate() throws.
  std::vector<ConstraintIssue> check(const Variables& context) const;
  // Also refuses a space of more than kMaxSpaceSize configs before pruning, naming the largest lists.
  void validate(const Variables& context) const;  // throws InputError naming the culprit

  // Enumerate all configs in odometer order (last parameter fastest). `context` holds problem
  // and device variables. Returns valid configs; pruned ones go to `pruned` with the
  // description of the first failing constraint, and the counts to `report`, when given.
  std::vector<Config> enumerate(const Variables& context, std::vector<std::pair<Config, std::string>>* pruned = nullptr,
                                PruneReport* report = nullptr) const;
  // Counts only, without keeping the configs.
  PruneReport prune_report(const Variables& context) const;
  // The reason `config` is pruned, or nullopt if it satisfies every constraint.
  std::optional<std::string> violated(const Config& config, const Variables& context) const;

  // JSON: {"parameters": {"BM": [32, 64], ...} | [{"name","values","description"}],
  //        "constraints": ["BM*BK <= 4096", {"expr": "...", "description": "..."}]}
  nlohmann::json to_json() const;
  static SearchSpace from_json(const nlohmann::json& j);  // throws InputError
  static SearchSpace load(const std::filesystem::path& file);  // throws InputError naming the file
  void save(const std::filesystem::path& file) const;

  friend bool operator==(const SearchSpace&, const SearchSpace&) = default;

 private:
  std::vector<Parameter> params_;
  std::vector<Constraint> constraints_;
};

}  // namespace ktune
