#include "ktune/run_settings.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "json_path.h"

namespace ktune {

using nlohmann::json;

json RunSettings::to_json() const {
  json problems_json = json::array();
  for (const auto& p : problems) problems_json.push_back(p.to_json());
  json j = {{"problems", problems_json},
            {"space", space.to_json()},
            {"strategy", ktune::to_json(strategy)},
            {"measure", ktune::to_json(measure)},
            {"tolerance", ktune::to_json(tolerance)},
            {"seed", seed}};
  if (shard.sharded()) j["shard"] = {{"index", shard.index}, {"count", shard.count}};
  return j;
}

RunSettings RunSettings::from_json(const json& j) {
  const detail::JsonPath root(j);
  RunSettings s;
  for (std::size_t i = 0; i < root["problems"].size(); ++i)
    s.problems.push_back(root["problems"][i].parse(Problem::from_json));
  s.space = root["space"].parse(SearchSpace::from_json);
  s.strategy = strategy_spec_from_json(root["strategy"].json());
  s.measure = measure_settings_from_json(root["measure"].json());
  s.tolerance = tolerance_from_json(root["tolerance"].json());
  s.seed = root["seed"].unsigned_integer();
  if (const auto shard = root.find("shard")) {
    const auto count = (*shard)["count"].unsigned_integer(), index = (*shard)["index"].unsigned_integer();
    if (count == 0 || index >= count || count > std::numeric_limits<std::uint32_t>::max())
      (*shard).fail("index " + std::to_string(index) + " of " + std::to_string(count) + " is not a shard");
    s.shard = {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(count)};
  }
  return s;
}

namespace {

std::string describe_problems(const std::vector<Problem>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p.key();
  return out.empty() ? "(none)" : out;
}

// "BM=[32,64] BN=[64] (2 constraints)": enough to see which lists differ without the whole JSON.
std::string describe_space(const SearchSpace& space) {
  std::string out;
  for (const auto& p : space.parameters()) {
    std::string values;
    for (const auto& v : p.values) values += (values.empty() ? "" : ",") + v.text();
    out += (out.empty() ? "" : " ") + p.name + "=[" + values + "]";
  }
  if (space.is_list()) out += " (a list of " + std::to_string(space.configs().size()) + " configs)";
  return out + " (" + std::to_string(space.constraints().size()) + " constraints)";
}

// Member by member, for the flat settings objects (strategy, measure, tolerance).
void compare_members(const std::string& section, const json& run, const json& asked,
                     std::vector<SettingsDifference>& out) {
  for (auto it = run.begin(); it != run.end(); ++it) {
    const auto other = asked.find(it.key());
    const json asked_value = other == asked.end() ? json(nullptr) : *other;
    if (*it != asked_value) out.push_back({section + "." + it.key(), it->dump(), asked_value.dump()});
  }
}

}  // namespace

std::vector<SettingsDifference> differences(const RunSettings& run, const RunSettings& asked) {
  std::vector<SettingsDifference> out;
  auto keys = [](const std::vector<Problem>& ps) {
    std::set<std::string> k;
    for (const auto& p : ps) k.insert(p.family + "/" + p.key());
    return k;
  };
  if (keys(run.problems) != keys(asked.problems))
    out.push_back({"problems", describe_problems(run.problems), describe_problems(asked.problems)});
  if (!(run.space == asked.space)) {
    // Two spaces with the same lists can still differ in their constraints.
    std::string r = describe_space(run.space), a = describe_space(asked.space);
    if (r == a) r = run.space.to_json().dump(), a = asked.space.to_json().dump();
    out.push_back({"space", r, a});
  }
  compare_members("strategy", to_json(run.strategy), to_json(asked.strategy), out);
  compare_members("measure", to_json(run.measure), to_json(asked.measure), out);
  compare_members("tolerance", to_json(run.tolerance), to_json(asked.tolerance), out);
  if (run.seed != asked.seed) out.push_back({"seed", std::to_string(run.seed), std::to_string(asked.seed)});
  auto shard_text = [](const ShardSpec& s) { return s.sharded() ? s.to_string() : std::string("none (unsharded)"); };
  if (!(run.shard == asked.shard)) out.push_back({"shard", shard_text(run.shard), shard_text(asked.shard)});
  return out;
}

std::vector<Problem> unique_problems(const std::vector<Problem>& problems) {
  std::vector<Problem> out;
  std::set<std::string> seen;
  for (const auto& p : problems)
    if (seen.insert(p.family + "/" + p.key()).second) out.push_back(p);
  return out;
}

}  // namespace ktune
