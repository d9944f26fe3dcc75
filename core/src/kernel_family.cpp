#include "ktune/kernel_family.h"

#include <charconv>

#include "ktune/error.h"
#include "ktune/param_value.h"
#include "ktune/problem.h"

namespace ktune {

const KeyField* KernelFamily::field(const std::string& n) const {
  for (const auto& f : key_fields)
    if (f.name == n) return &f;
  return nullptr;
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

double KernelFamily::flops(const Problem& p) const { return flops_expr.empty() ? 0 : Expression(flops_expr).eval(variables(p)); }
double KernelFamily::bytes(const Problem& p) const { return bytes_expr.empty() ? 0 : Expression(bytes_expr).eval(variables(p)); }

}  // namespace ktune
