#include "ktune/search_space.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ktune/error.h"

namespace ktune {

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints)
    : params_(std::move(params)), constraints_(std::move(constraints)) {
  std::set<std::string> seen;
  for (const auto& p : params_) {
    if (p.name.empty()) throw InputError("search space: a parameter has an empty name");
    if (!seen.insert(p.name).second) throw InputError("search space: parameter '" + p.name + "' appears twice");
    if (p.values.empty()) throw InputError("search space: parameter '" + p.name + "' has no candidate values");
  }
}

const Parameter* SearchSpace::find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

std::uint64_t SearchSpace::total_size() const {
  if (params_.empty()) return 0;
  std::uint64_t n = 1;
  for (const auto& p : params_) {
    if (n > std::numeric_limits<std::uint64_t>::max() / p.values.size()) return std::numeric_limits<std::uint64_t>::max();
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
        issues.push_back({i, "unknown variable '" + name + "' in constraint '" + constraints_[i].expr +
                                 "'; known: " + known});
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
  const auto issues = check(context);
  if (!issues.empty()) throw InputError("search space constraint #" + std::to_string(issues.front().index + 1) + ": " + issues.front().message);
}

namespace {

// Walks the product of the candidate lists, evaluating constraints with one variables map whose
// parameter entries are updated in place (no per-config allocation of the context).
template <typename Visit>
void walk(const std::vector<Parameter>& params, const std::vector<Constraint>& constraints, const Variables& context,
          Visit&& visit) {
  if (params.empty()) return;
  std::vector<Expression> exprs;
  exprs.reserve(constraints.size());
  for (const auto& c : constraints) exprs.emplace_back(c.expr);
  Variables vars = context;
  std::vector<std::size_t> idx(params.size(), 0);
  while (true) {
    std::vector<std::pair<std::string, ParamValue>> values;
    values.reserve(params.size());
    for (std::size_t p = 0; p < params.size(); ++p) {
      const ParamValue v = params[p].values[idx[p]];
      values.emplace_back(params[p].name, v);
      vars[params[p].name] = static_cast<double>(v);
    }
    int failed = -1;
    for (std::size_t c = 0; c < exprs.size(); ++c) {
      if (exprs[c].eval(vars) == 0.0) {
        failed = static_cast<int>(c);
        break;
      }
    }
    visit(Config(std::move(values)), failed);
    std::size_t p = params.size();
    while (p > 0) {
      --p;
      if (++idx[p] < params[p].values.size()) break;
      idx[p] = 0;
      if (p == 0) return;
    }
  }
}

std::string describe(const Constraint& c) { return c.description.empty() ? c.expr : c.description + " (" + c.expr + ")"; }

}  // namespace

namespace {

// One pass over the space that feeds the counts of a report and, optionally, the configs.
template <typename OnValid, typename OnPruned>
PruneReport classify(const std::vector<Parameter>& params, const std::vector<Constraint>& constraints,
                     const Variables& context, OnValid&& on_valid, OnPruned&& on_pruned) {
  PruneReport r;
  std::vector<std::uint64_t> counts(constraints.size(), 0);
  walk(params, constraints, context, [&](Config&& c, int failed) {
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

std::vector<Config> SearchSpace::enumerate(const Variables& context, std::vector<std::pair<Config, std::string>>* pruned,
                                           PruneReport* report) const {
  validate(context);
  std::vector<Config> valid;
  PruneReport r = classify(
      params_, constraints_, context, [&](Config&& c) { valid.push_back(std::move(c)); },
      [&](Config&& c, const Constraint& why) {
        if (pruned) pruned->emplace_back(std::move(c), "pruned by " + describe(why));
      });
  if (report) *report = std::move(r);
  return valid;
}

PruneReport SearchSpace::prune_report(const Variables& context) const {
  validate(context);
  return classify(params_, constraints_, context, [](Config&&) {}, [](Config&&, const Constraint&) {});
}

std::optional<std::string> SearchSpace::violated(const Config& config, const Variables& context) const {
  Variables vars = context;
  for (const auto& [k, v] : config.values()) vars[k] = static_cast<double>(v);
  for (const auto& c : constraints_)
    if (Expression(c.expr).eval(vars) == 0.0) return "pruned by " + describe(c);
  return std::nullopt;
}

nlohmann::json SearchSpace::to_json() const {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : params_) {
    nlohmann::json jp{{"name", p.name}, {"values", p.values}};
    if (!p.description.empty()) jp["description"] = p.description;
    params.push_back(jp);
  }
  nlohmann::json cons = nlohmann::json::array();
  for (const auto& c : constraints_) {
    if (c.description.empty())
      cons.push_back(c.expr);
    else
      cons.push_back({{"expr", c.expr}, {"description", c.description}});
  }
  return {{"parameters", params}, {"constraints", cons}};
}

namespace {

template <typename J>
std::vector<ParamValue> parse_values(const std::string& name, const J& v) {
  std::vector<ParamValue> out;
  if (v.is_array()) {
    for (const auto& x : v) {
      if (!x.is_number_integer())
        throw InputError("parameter '" + name + "': candidate values must be integers, got " + x.dump());
      out.push_back(x.template get<ParamValue>());
    }
  } else if (v.is_object() && v.contains("from") && v.contains("to")) {
    // {"from": 16, "to": 256, "mul": 2} or {"from": 1, "to": 8, "step": 1}
    const auto from = v.at("from").template get<ParamValue>();
    const auto to = v.at("to").template get<ParamValue>();
    const ParamValue mul = v.contains("mul") ? v.at("mul").template get<ParamValue>() : 1;
    const ParamValue step = v.contains("step") ? v.at("step").template get<ParamValue>() : (mul > 1 ? 0 : 1);
    if ((mul <= 1 && step <= 0) || (mul > 1 && from <= 0))
      throw InputError("parameter '" + name + "': a range needs step > 0, or mul > 1 with from > 0");
    for (ParamValue x = from; x <= to && out.size() < 100000; x = mul > 1 ? x * mul : x + step) out.push_back(x);
  } else {
    throw InputError("parameter '" + name + "': expected a list of integers or {\"from\",\"to\",\"step\"|\"mul\"}, got " +
                     v.dump());
  }
  if (out.empty()) throw InputError("parameter '" + name + "' has no candidate values");
  std::set<ParamValue> unique(out.begin(), out.end());
  if (unique.size() != out.size()) throw InputError("parameter '" + name + "' lists a value twice");
  return out;
}

template <typename J>
SearchSpace parse_space(const J& j) {
  if (!j.is_object() || !j.contains("parameters"))
    throw InputError("a search space is a JSON object with \"parameters\" (and optional \"constraints\")");
  std::vector<Parameter> params;
  const auto& jp = j.at("parameters");
  if (jp.is_object()) {
    for (const auto& [name, values] : jp.items()) params.push_back({name, parse_values(name, values), ""});
  } else if (jp.is_array()) {
    for (const auto& p : jp) {
      if (!p.is_object() || !p.contains("name") || !p.contains("values") || !p.at("name").is_string())
        throw InputError("each entry of \"parameters\" needs \"name\" and \"values\", got " + p.dump());
      const auto name = p.at("name").template get<std::string>();
      params.push_back({name, parse_values(name, p.at("values")),
                        p.contains("description") ? p.at("description").template get<std::string>() : ""});
    }
  } else {
    throw InputError("\"parameters\" must be an object or an array");
  }
  std::vector<Constraint> cons;
  if (j.contains("constraints")) {
    const auto& jc = j.at("constraints");
    if (!jc.is_array()) throw InputError("\"constraints\" must be an array of expressions");
    for (const auto& c : jc) {
      if (c.is_string())
        cons.push_back({c.template get<std::string>(), ""});
      else if (c.is_object() && c.contains("expr") && c.at("expr").is_string())
        cons.push_back({c.at("expr").template get<std::string>(),
                        c.contains("description") ? c.at("description").template get<std::string>() : ""});
      else
        throw InputError("a constraint is an expression string or {\"expr\", \"description\"}, got " + c.dump());
    }
  }
  SearchSpace space(std::move(params), std::move(cons));
  for (std::size_t i = 0; i < space.constraints().size(); ++i) {
    try {
      Expression check(space.constraints()[i].expr);
    } catch (const InputError& e) {
      throw InputError("constraint #" + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return space;
}

}  // namespace

SearchSpace SearchSpace::from_json(const nlohmann::json& j) {
  try {
    return parse_space(j);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("malformed search space: ") + e.what());
  }
}

SearchSpace SearchSpace::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError("cannot read search space file " + file.string());
  try {
    // ordered_json keeps the parameters in the order the user wrote them.
    return parse_space(nlohmann::ordered_json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    throw InputError("search space file " + file.string() + " is not valid JSON: " + e.what());
  } catch (const InputError& e) {
    throw InputError("search space file " + file.string() + ": " + e.what());
  }
}

void SearchSpace::save(const std::filesystem::path& file) const {
  std::ofstream out(file);
  out << to_json().dump(2) << '\n';
  if (!out) throw RunError("cannot write " + file.string());
}

}  // namespace ktune
