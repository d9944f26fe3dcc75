#include "ktune/search_space.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "json_path.h"
#include "ktune/error.h"
#include "ktune/json_read.h"
#include "space_solver.h"

namespace ktune {

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints)
    : params_(std::move(params)), constraints_(std::move(constraints)) {
  std::set<std::string> seen;
  for (const auto& p : params_) {
    if (p.name.empty()) throw InputError("search space: a parameter has an empty name");
    if (!seen.insert(p.name).second) throw InputError("search space: parameter '" + p.name + "' appears twice");
    if (p.values.empty()) throw InputError("search space: parameter '" + p.name + "' has no candidate values");
    for (const auto& v : p.values) {
      if (v.kind() != p.kind())
        throw InputError("search space: parameter '" + p.name + "' mixes " + to_string(p.kind()) + " and " +
                         to_string(v.kind()) + " values (" + v.text() + "); give it values of one kind");
      if (v.is_string())
        if (const std::string why = string_value_problem(v.as_string()); !why.empty())
          throw InputError("search space: parameter '" + p.name + "': " + why);
    }
  }
}

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<Config> configs,
                         std::vector<Constraint> constraints)
    : SearchSpace(std::move(params), std::move(constraints)) {
  if (configs.empty()) throw InputError("search space: the list of configs is empty");
  std::set<std::string> keys;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const std::string what = "search space: config #" + std::to_string(i + 1) + " (" + configs[i].key() + ")";
    check_config(configs[i], what);
    for (const auto& p : params_) {
      if (!configs[i].has(p.name)) throw InputError(what + " has no value for parameter '" + p.name + "'");
      const auto& v = configs[i].value(p.name);
      if (std::find(p.values.begin(), p.values.end(), v) == p.values.end())
        throw InputError(what + ": " + p.name + "=" + v.text() + " is not one of the parameter's candidates");
    }
    Config ordered;
    for (const auto& p : params_) ordered.set(p.name, configs[i].value(p.name));
    if (!keys.insert(ordered.key()).second) throw InputError(what + " is listed twice");
    configs_.push_back(std::move(ordered));
  }
}

SearchSpace SearchSpace::from_configs(std::vector<Config> configs, std::vector<Constraint> constraints) {
  if (configs.empty()) throw InputError("search space: the list of configs is empty");
  // The first config names the parameters and their order; values in order of first use.
  std::vector<Parameter> params;
  for (const auto& [name, v] : configs.front().values()) params.push_back({name, {}, ""});
  for (std::size_t i = 0; i < configs.size(); ++i)
    for (const auto& [name, v] : configs[i].values()) {
      const std::string& wanted = name;  // a lambda may not capture a structured binding before clang 16
      auto it = std::find_if(params.begin(), params.end(), [&](const Parameter& p) { return p.name == wanted; });
      if (it == params.end())
        throw InputError("search space: config #" + std::to_string(i + 1) + " (" + configs[i].key() +
                         ") has parameter '" + name +
                         "', which config #1 does not have; every config names the same parameters");
      if (!it->values.empty() && v.kind() != it->kind())
        throw InputError("search space: config #" + std::to_string(i + 1) + " (" + configs[i].key() + "): " + name +
                         "=" + v.text() + " is a " + to_string(v.kind()) + ", but '" + name + "' takes " +
                         to_string(it->kind()) + " values in the configs before it");
      if (std::find(it->values.begin(), it->values.end(), v) == it->values.end()) it->values.push_back(v);
    }
  return SearchSpace(std::move(params), std::move(configs), std::move(constraints));
}

void SearchSpace::check_config(const Config& config, const std::string& what) const {
  for (const auto& [name, v] : config.values()) {
    const Parameter* p = find(name);
    if (!p) {
      std::string known;
      for (const auto& q : params_) known += (known.empty() ? "" : ", ") + q.name;
      throw InputError(what + " has unknown parameter '" + name + "' (parameters: " + known + ")");
    }
    if (v.kind() != p->kind())
      throw InputError(what + ": " + name + "=" + v.text() + " is a " + to_string(v.kind()) + ", but '" + name +
                       "' takes " + to_string(p->kind()) + " values");
  }
}

void SearchSpace::bind(const Config& config, Variables& vars) {
  for (const auto& [k, v] : config.values()) vars[k] = v.number();
}

const Parameter* SearchSpace::find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

std::uint64_t SearchSpace::total_size() const {
  if (is_list()) return configs_.size();
  if (params_.empty()) return 0;
  std::uint64_t n = 1;
  for (const auto& p : params_) {
    if (n > std::numeric_limits<std::uint64_t>::max() / p.values.size())
      return std::numeric_limits<std::uint64_t>::max();
    n *= p.values.size();
  }
  return n;
}

std::vector<ConstraintIssue> SearchSpace::check(const Variables& context) const {
  std::vector<ConstraintIssue> issues;
  for (std::size_t i = 0; i < constraints_.size(); ++i) {
    try {
      Expression e(constraints_[i].expr);
      for (const auto& name : e.variables()) {
        if (find(name) || context.count(name)) continue;
        std::string known;
        for (const auto& p : params_) known += (known.empty() ? "" : ", ") + p.name;
        for (const auto& [k, v] : context) known += ", " + k;
        issues.push_back(
            {i, "unknown variable '" + name + "' in constraint '" + constraints_[i].expr + "'; known: " + known});
        break;
      }
    } catch (const InputError& e) {
      issues.push_back({i, e.what()});
    }
  }
  return issues;
}

void SearchSpace::validate(const Variables& context) const {
  if (params_.empty()) throw InputError("search space has no parameters");
  if (total_size() > kMaxSpaceSize) {
    std::vector<const Parameter*> largest;
    for (const auto& p : params_) largest.push_back(&p);
    std::sort(largest.begin(), largest.end(), [](auto* a, auto* b) { return a->values.size() > b->values.size(); });
    std::string lists;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, largest.size()); ++i)
      lists += (i ? ", " : "") + largest[i]->name + " (" + std::to_string(largest[i]->values.size()) + " values)";
    const std::string size =
        total_size() == std::numeric_limits<std::uint64_t>::max() ? "more than 2^64" : std::to_string(total_size());
    throw InputError("search space has " + size + " configs before pruning, more than ktune enumerates (" +
                     std::to_string(kMaxSpaceSize) + "): narrow the longest candidate lists: " + lists);
  }
  const auto issues = check(context);
  if (!issues.empty())
    throw InputError("search space constraint #" + std::to_string(issues.front().index + 1) + ": " +
                     issues.front().message);
}

namespace {

std::string describe(const Constraint& c) {
  return c.description.empty() ? c.expr : c.description + " (" + c.expr + ")";
}

// Whether `c` holds for `config`, whose values are bound in `vars`.
bool holds(const Expression& e, const Constraint& c, const Variables& vars, const Config& config) {
  std::string problem;
  double v = 0;
  try {
    v = e.eval(vars);
    if (std::isfinite(v)) return v != 0.0;
    problem = std::string("evaluates to ") + (std::isnan(v) ? "NaN" : "infinity");
  } catch (const InputError& err) {
    problem = err.what();
  }
  throw InputError("constraint " + describe(c) + " for " + config.key() + ": " + problem +
                   "; a constraint must give a finite number (0 prunes the config): guard the division or mod by "
                   "zero with a conditional, which evaluates only the branch it takes, e.g. "
                   "\"BK > 0 ? mod(K, BK) == 0 : 0\" (&& and || evaluate both sides)");
}

// Walks the explicit list, or the product of the candidate lists, evaluating constraints with
// one variables map whose parameter entries are updated in place (no per-config allocation of
// the context).
template <typename Visit>
void walk(const SearchSpace& space, const Variables& context, Visit&& visit) {
  const auto& params = space.parameters();
  const auto& constraints = space.constraints();
  if (params.empty()) return;
  std::vector<Expression> exprs;
  exprs.reserve(constraints.size());
  for (const auto& c : constraints) exprs.emplace_back(c.expr);
  Variables vars = context;
  auto check = [&](Config&& config) {
    SearchSpace::bind(config, vars);
    int failed = -1;
    for (std::size_t c = 0; c < exprs.size(); ++c) {
      if (!holds(exprs[c], constraints[c], vars, config)) {
        failed = static_cast<int>(c);
        break;
      }
    }
    visit(std::move(config), failed);
  };
  if (space.is_list()) {
    for (const auto& c : space.configs()) check(Config(c));
    return;
  }
  std::vector<std::size_t> idx(params.size(), 0);
  while (true) {
    std::vector<std::pair<std::string, ParamValue>> values;
    values.reserve(params.size());
    for (std::size_t p = 0; p < params.size(); ++p) values.emplace_back(params[p].name, params[p].values[idx[p]]);
    check(Config(std::move(values)));
    std::size_t p = params.size();
    while (p > 0) {
      --p;
      if (++idx[p] < params[p].values.size()) break;
      idx[p] = 0;
      if (p == 0) return;
    }
  }
}

// One pass over the space that feeds the counts of a report and, optionally, the configs.
template <typename OnValid, typename OnPruned>
PruneReport classify(const SearchSpace& space, const Variables& context, OnValid&& on_valid, OnPruned&& on_pruned) {
  const auto& constraints = space.constraints();
  PruneReport r;
  std::vector<std::uint64_t> counts(constraints.size(), 0);
  walk(space, context, [&](Config&& c, int failed) {
    ++r.total;
    if (failed < 0) {
      ++r.valid;
      on_valid(std::move(c));
    } else {
      ++counts[static_cast<std::size_t>(failed)];
      on_pruned(std::move(c), constraints[static_cast<std::size_t>(failed)]);
    }
  });
  for (std::size_t i = 0; i < constraints.size(); ++i) r.pruned_by.emplace_back(constraints[i].expr, counts[i]);
  return r;
}

}  // namespace

void require_valid_configs(const PruneReport& report, const std::string& what) {
  if (report.valid > 0) return;
  std::string worst;
  std::uint64_t most = 0;
  for (const auto& [expr, n] : report.pruned_by)
    if (n > most) most = n, worst = expr;
  throw InputError("impossible search space for " + what + ": all " + std::to_string(report.total) +
                   " configs are pruned (most by '" + worst + "', " + std::to_string(most) +
                   " configs); relax the constraints or widen the candidate values");
}

std::vector<Config> enumerate_brute_force(const SearchSpace& space, const Variables& context,
                                          std::vector<std::pair<Config, std::string>>* pruned, PruneReport* report) {
  space.validate(context);
  std::vector<Config> valid;
  PruneReport r = classify(
      space, context, [&](Config&& c) { valid.push_back(std::move(c)); },
      [&](Config&& c, const Constraint& why) {
        if (pruned) pruned->emplace_back(std::move(c), "pruned by " + describe(why));
      });
  if (report) *report = std::move(r);
  return valid;
}

std::vector<Config> SearchSpace::enumerate(const Variables& context,
                                           std::vector<std::pair<Config, std::string>>* pruned,
                                           PruneReport* report) const {
  if (pruned) return enumerate_brute_force(*this, context, pruned, report);
  const auto solved = detail::solve_space_cached(*this, context);
  if (!solved) return enumerate_brute_force(*this, context, nullptr, report);
  if (report) *report = solved->report;
  return solved->valid;
}

PruneReport SearchSpace::prune_report(const Variables& context) const {
  if (const auto solved = detail::solve_space_cached(*this, context)) return solved->report;
  validate(context);
  return classify(
      *this, context, [](Config&&) {}, [](Config&&, const Constraint&) {});
}

std::optional<std::string> SearchSpace::violated(const Config& config, const Variables& context) const {
  Variables vars = context;
  bind(config, vars);
  for (const auto& c : constraints_)
    if (!holds(Expression(c.expr), c, vars, config)) return "pruned by " + describe(c);
  return std::nullopt;
}

nlohmann::json SearchSpace::to_json() const {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : params_) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : p.values) values.push_back(v.to_json());
    nlohmann::json jp{{"name", p.name}, {"values", values}};
    if (!p.description.empty()) jp["description"] = p.description;
    params.push_back(jp);
  }
  nlohmann::json out{{"parameters", params}, {"constraints", constraints_to_json(constraints_)}};
  if (is_list()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : configs_) list.push_back(c.to_json());
    out["configs"] = list;
  }
  return out;
}

namespace {

template <typename J>
std::vector<ParamValue> parse_values(const std::string& name, const detail::BasicJsonPath<J>& v) {
  std::vector<ParamValue> out;
  if (v.json().is_array()) {
    v.for_each_element([&](const auto& x) {
      if (x.json().is_boolean())
        out.push_back(x.json().template get<bool>());
      else if (x.json().is_string())
        out.push_back(x.string());
      else
        out.push_back(x.integer());
      if (out.back().kind() != out.front().kind()) {
        const char* article = out.front().is_int() ? "an " : "a ";
        x.fail("expected " + std::string(article) + to_string(out.front().kind()) + ", got " + json_excerpt(x.json()) +
               " (a parameter's values are all of one kind)");
      }
    });
  } else if (v.has("from") && v.has("to")) {
    // {"from": 16, "to": 256, "mul": 2} or {"from": 1, "to": 8, "step": 1}
    const std::int64_t from = v["from"].integer();
    const std::int64_t to = v["to"].integer();
    const std::int64_t mul = v.has("mul") ? v["mul"].integer() : 1;
    const std::int64_t step = v.has("step") ? v["step"].integer() : (mul > 1 ? 0 : 1);
    if ((mul <= 1 && step <= 0) || (mul > 1 && from <= 0))
      v.fail("parameter '" + name + "': a range needs step > 0, or mul > 1 with from > 0");
    // Stops before the next value would pass `to` (or overflow), and before the list outgrows any
    // space ktune can enumerate.
    for (std::int64_t x = from; x <= to;) {
      if (out.size() >= kMaxSpaceSize)
        v.fail("parameter '" + name + "': the range has more than " + std::to_string(kMaxSpaceSize) +
               " values; raise \"step\" or narrow \"from\"..\"to\"");
      out.push_back(x);
      if (mul > 1 ? __builtin_mul_overflow(x, mul, &x) : __builtin_add_overflow(x, step, &x)) break;
    }
  } else {
    v.expected("a list of integers, booleans or strings, or {\"from\",\"to\",\"step\"|\"mul\"}");
  }
  if (out.empty()) v.fail("parameter '" + name + "' has no candidate values");
  std::set<ParamValue> unique(out.begin(), out.end());
  if (unique.size() != out.size()) v.fail("parameter '" + name + "' lists a value twice");
  return out;
}

// One config of an explicit list, in the order its file wrote it.
template <typename J>
Config parse_config(const detail::BasicJsonPath<J>& c) {
  if (!c.json().is_object()) c.expected("a config: an object of parameter: value");
  Config out;
  c.for_each_member([&](const std::string& name, const auto& v) {
    try {
      out.set(name, ParamValue::from_json(nlohmann::json(v.json()), "parameter '" + name + "'"));
    } catch (const InputError& e) {
      v.fail(e.what());
    }
  });
  return out;
}

template <typename P>
std::vector<Constraint> parse_constraints(const P& jc) {
  std::vector<Constraint> cons;
  jc.for_each_element([&](const auto& c) {
    if (c.json().is_string())
      cons.push_back({c.string(), ""});
    else if (c.has("expr"))
      cons.push_back({c["expr"].string(), c.string_or("description", "")});
    else
      c.expected("an expression string or {\"expr\", \"description\"}");
  });
  for (std::size_t i = 0; i < cons.size(); ++i) {
    try {
      Expression check(cons[i].expr);
    } catch (const InputError& e) {
      throw InputError("constraint #" + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return cons;
}

template <typename J>
SearchSpace parse_space(const J& j) {
  const detail::BasicJsonPath<J> root(j);
  if (!j.is_object() || !(j.contains("parameters") || j.contains("configs")))
    throw InputError(
        "a search space is a JSON object with \"parameters\" (candidate lists) or \"configs\" (a list of "
        "configs), and optional \"constraints\"");
  std::vector<Parameter> params;
  if (const auto jp = root.find("parameters")) {
    if (jp->json().is_object()) {
      jp->for_each_member([&](const std::string& name, const auto& values) {
        params.push_back({name, parse_values(name, values), ""});
      });
    } else if (jp->json().is_array()) {
      jp->for_each_element([&](const auto& p) {
        const std::string name = p["name"].string();
        params.push_back({name, parse_values(name, p["values"]), p.string_or("description", "")});
      });
    } else {
      jp->expected("an object or an array of {\"name\", \"values\"}");
    }
  }
  std::vector<Constraint> cons;
  if (const auto jc = root.find("constraints")) cons = parse_constraints(*jc);
  if (const auto jl = root.find("configs")) {
    std::vector<Config> configs;
    jl->for_each_element([&](const auto& c) { configs.push_back(parse_config(c)); });
    if (params.empty()) return SearchSpace::from_configs(std::move(configs), std::move(cons));
    return SearchSpace(std::move(params), std::move(configs), std::move(cons));
  }
  return SearchSpace(std::move(params), std::move(cons));
}

}  // namespace

SearchSpace SearchSpace::from_json(const nlohmann::json& j) { return parse_space(j); }

nlohmann::json constraints_to_json(const std::vector<Constraint>& constraints) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : constraints) {
    if (c.description.empty())
      out.push_back(c.expr);
    else
      out.push_back({{"expr", c.expr}, {"description", c.description}});
  }
  return out;
}

std::vector<Constraint> constraints_from_json(const nlohmann::json& j) {
  return parse_constraints(detail::BasicJsonPath<nlohmann::json>(j));
}

SearchSpace SearchSpace::load(const std::filesystem::path& file) {
  // ordered_json keeps the parameters in the order the user wrote them.
  const nlohmann::ordered_json j = read_ordered_json_file(file, "search space");
  try {
    return parse_space(j);
  } catch (const InputError& e) {
    throw InputError("search space " + file.string() + ": " + e.what());
  }
}

void SearchSpace::save(const std::filesystem::path& file) const {
  std::ofstream out(file);
  out << to_json().dump(2) << '\n';
  if (!out) throw RunError("cannot write " + file.string());
}

}  // namespace ktune
