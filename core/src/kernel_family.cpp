#include "ktune/kernel_family.h"

#include <algorithm>
#include <charconv>

#include "ktune/error.h"
#include "ktune/expression.h"
#include "ktune/param_value.h"
#include "ktune/problem.h"

namespace ktune {

const KeyField* KernelFamily::field(const std::string& n) const {
  for (const auto& f : key_fields)
    if (f.name == n) return &f;
  return nullptr;
}

std::int64_t TpField::local(std::int64_t global, int tp_size) const {
  const std::string given = name + "=" + std::to_string(global) + " and --tp-size " + std::to_string(tp_size);
  if (!at_least_one || global >= tp_size) {
    if (global % tp_size != 0)
      throw InputError(name + "=" + std::to_string(global) + " is not divisible by --tp-size " +
                       std::to_string(tp_size) +
                       (at_least_one ? " (" + name +
                                           " is divided across ranks, or replicated when there are fewer "
                                           "than ranks: one must divide the other)"
                                     : ""));
    return global / tp_size;
  }
  // Fewer than ranks: each rank holds one, replicated over tp_size / global ranks.
  if (tp_size % global != 0)
    throw InputError(given + ": " + name + " is replicated when there are fewer than ranks, so " +
                     std::to_string(global) + " must divide " + std::to_string(tp_size));
  return 1;
}

const TpSplit* KernelFamily::tp_split(TpSplitDim dim) const {
  for (const auto& s : tp_splits)
    if (s.dim == dim) return &s;
  return nullptr;
}

const TpSplit& KernelFamily::resolve_tp_split(TpSplitDim dim) const {
  if (dim == TpSplitDim::None && tp_splits.size() == 1) return tp_splits.front();
  if (const TpSplit* s = tp_split(dim)) return *s;
  if (tp_splits.empty()) throw InputError(name + " does not support --tp-size: it has no tensor-parallel split");
  std::string choices;
  for (const auto& s : tp_splits) {
    std::string fields;
    for (const auto& f : s.fields) fields += (fields.empty() ? "" : ", ") + f.name;
    choices += (choices.empty() ? "" : " or ") + to_string(s.dim) + " (divides " + fields + ")";
  }
  if (dim == TpSplitDim::None) throw InputError("--tp-size needs --tp-split-dim for " + name + ": " + choices);
  throw InputError(name + " does not support --tp-split-dim " + to_string(dim) + "; use " + choices);
}

void KernelFamily::check_shape(const Problem& p) const {
  if (shape_rules.empty()) return;
  const Variables vars = variables(p);
  for (const auto& rule : shape_rules) {
    const Expression e(rule.expr);
    if (e.eval(vars) != 0) continue;
    std::string fields;
    const auto used = e.variables();
    for (const auto& f : key_fields)  // in the key's order
      if (std::find(used.begin(), used.end(), f.name) != used.end())
        fields += (fields.empty() ? "" : ", ") + f.name + "=" + p.field(f.name);
    throw InputError(name + " " + p.local_key() + ": " + fields + ": " + rule.description + " (" + rule.expr + ")");
  }
}

Variables KernelFamily::variables(const Problem& p) const {
  Variables vars;
  for (const auto& f : key_fields)
    vars[f.name] = f.numeric ? static_cast<double>(p.num(f.name)) : string_code(p.field(f.name));
  return vars;
}

void KernelFamily::check_space(const SearchSpace& space) const {
  std::string known;
  for (const auto& p : default_space.parameters()) known += (known.empty() ? "" : ", ") + p.name;
  for (const auto& p : space.parameters())
    if (!default_space.find(p.name))
      throw InputError("search space: '" + p.name + "' is not a parameter of " + name + " on " + backend +
                       "; its parameters: " + known);
  for (const auto& p : default_space.parameters())
    if (!space.find(p.name))
      throw InputError("search space: parameter '" + p.name + "' of " + name +
                       " is missing; give it at least one value (`ktune space " + name + " --json` lists them all)");
}

SearchSpace KernelFamily::user_space(const SearchSpace& space) const {
  check_space(space);
  auto all = space.constraints();
  for (const auto& limit : launch_limits)
    if (std::find(all.begin(), all.end(), limit) == all.end()) all.push_back(limit);
  if (all.size() == space.constraints().size()) return space;
  return space.is_list() ? SearchSpace(space.parameters(), space.configs(), all) : SearchSpace(space.parameters(), all);
}

double KernelFamily::flops(const Problem& p) const {
  return flops_expr.empty() ? 0 : Expression(flops_expr).eval(variables(p));
}
double KernelFamily::bytes(const Problem& p) const {
  return bytes_expr.empty() ? 0 : Expression(bytes_expr).eval(variables(p));
}

}  // namespace ktune
