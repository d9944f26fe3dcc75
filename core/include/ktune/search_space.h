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

// Candidate values are all of one kind: integers, booleans or strings (see param_value.h).
struct Parameter {
  std::string name;
  std::vector<ParamValue> values;
  std::string description;
  ParamValue::Kind kind() const { return values.empty() ? ParamValue::Kind::Int : values.front().kind(); }
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
  std::uint64_t total = 0;                                       // product of the candidate lists
  std::uint64_t valid = 0;                                       // after constraints
  std::vector<std::pair<std::string, std::uint64_t>> pruned_by;  // constraint expr -> count (first failing)
};

struct ConstraintIssue {
  std::size_t index;  // constraint index
  std::string message;
};

// Throws InputError when `report` left no config to measure, naming `what` (family and problem)
// and the constraint that pruned most.
void require_valid_configs(const PruneReport& report, const std::string& what);

// A space is the product of its parameters' candidate lists, or an explicit list of configs
// (TileLang's list of dicts); constraints prune either.
class SearchSpace {
 public:
  SearchSpace() = default;
  SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints);
  // An explicit list: `params` holds each parameter's values in order of first use (from_configs
  // derives them). Every config must give every parameter a value of its kind; a config with an
  // unknown or missing parameter is an InputError naming it and the config's position.
  SearchSpace(std::vector<Parameter> params, std::vector<Config> configs, std::vector<Constraint> constraints);
  static SearchSpace from_configs(std::vector<Config> configs, std::vector<Constraint> constraints);

  const std::vector<Parameter>& parameters() const { return params_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const Parameter* find(const std::string& name) const;
  // The explicit list, in its order; empty for a product space.
  const std::vector<Config>& configs() const { return configs_; }
  bool is_list() const { return !configs_.empty(); }

  std::uint64_t total_size() const;  // the product (saturating), or the list's length

  // The variables of `config` for expressions: integers, booleans 1/0, strings their code.
  static void bind(const Config& config, Variables& vars);
  // Throws InputError naming `what` and the parameter when `config` has a parameter this space
  // lacks or a value of another kind (a string for an integer parameter). Parameters the config
  // leaves out are allowed (a family's default fills them).
  void check_config(const Config& config, const std::string& what) const;

  // Checks each constraint parses and names only known variables (params + `context` names).
  // Returns one issue per bad constraint; the GUI marks them in place, validate() throws.
  std::vector<ConstraintIssue> check(const Variables& context) const;
  // Also refuses a space of more than kMaxSpaceSize configs before pruning, naming the largest lists.
  void validate(const Variables& context) const;  // throws InputError naming the culprit

  // The valid configs in odometer order (last parameter fastest). `context` holds problem and
  // device variables. Pruned ones go to `pruned` with the description of the first failing
  // constraint (in declaration order), and the counts to `report`, when given. Found by
  // backtracking with compiled constraints and cached per (space, context) in the process
  // (docs/search-space.md); with `pruned`, every config is listed, so the space is walked.
  std::vector<Config> enumerate(const Variables& context, std::vector<std::pair<Config, std::string>>* pruned = nullptr,
                                PruneReport* report = nullptr) const;
  // Counts only, without keeping the configs.
  PruneReport prune_report(const Variables& context) const;
  // The reason `config` is pruned, or nullopt if it satisfies every constraint.
  std::optional<std::string> violated(const Config& config, const Variables& context) const;

  // JSON: {"parameters": {"BM": [32, 64], "permute_x": [true, false], "cache_modifier": ["", ".cg"]}
  //                      | [{"name","values","description"}],
  //        "configs": [{"BM": 64, "permute_x": true, ...}, ...]   (instead of the product; with
  //                   "parameters" too, each value must be one of its parameter's candidates)
  //        "constraints": ["BM*BK <= 4096", "!(permute_x && permute_y)", "cache_modifier == '.cg' || BM > 32",
  //                        {"expr": "...", "description": "..."}]}
  nlohmann::json to_json() const;
  static SearchSpace from_json(const nlohmann::json& j);       // throws InputError
  static SearchSpace load(const std::filesystem::path& file);  // throws InputError naming the file
  void save(const std::filesystem::path& file) const;

  friend bool operator==(const SearchSpace&, const SearchSpace&) = default;

 private:
  std::vector<Parameter> params_;
  std::vector<Config> configs_;
  std::vector<Constraint> constraints_;
};

// A constraint list as a space file writes it (an expression, or {"expr", "description"}), and back;
// from_json throws InputError naming the entry that is not a constraint or does not parse.
nlohmann::json constraints_to_json(const std::vector<Constraint>& constraints);
std::vector<Constraint> constraints_from_json(const nlohmann::json& j);

// The brute-force walk SearchSpace::enumerate did before the solver: every config of the product
// (or the list) built and checked, constraint by constraint, in odometer order. Same contract as
// enumerate; kept as the reference that tests and bench/spaces hold the solver against, and used
// where the pruned configs are listed or a constraint cannot be evaluated on some partial config.
std::vector<Config> enumerate_brute_force(const SearchSpace& space, const Variables& context,
                                          std::vector<std::pair<Config, std::string>>* pruned = nullptr,
                                          PruneReport* report = nullptr);

}  // namespace ktune
