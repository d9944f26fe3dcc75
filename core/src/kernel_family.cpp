#include "ktune/kernel_family.h"

#include <charconv>

#include "ktune/error.h"
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
    if (f.numeric) vars[f.name] = static_cast<double>(p.num(f.name));
  return vars;
}

double KernelFamily::flops(const Problem& p) const { return flops_expr.empty() ? 0 : Expression(flops_expr).eval(variables(p)); }
double KernelFamily::bytes(const Problem& p) const { return bytes_expr.empty() ? 0 : Expression(bytes_expr).eval(variables(p)); }

}  // namespace ktune
