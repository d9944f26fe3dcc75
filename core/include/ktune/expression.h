#pragma once
// A numeric expression over named variables (muparser syntax: + - * / ^, comparisons, && ||,
// ?:, prefix !, true/false, string literals "..." or '...' compared with == and != (string
// parameters, see param_value.h), min/max, and the ktune helpers ceil_div(a,b), is_pow2(x), mod, floor, ceil, log2).
// Used for search-space constraints, FLOP/byte counts, and GPU launch geometry.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ktune {

using Variables = std::map<std::string, double>;

class Expression {
 public:
  // Throws InputError when the text does not parse; the message quotes the text and the position.
  explicit Expression(std::string text);
  ~Expression();
  Expression(const Expression&);
  Expression& operator=(const Expression&);
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;

  const std::string& text() const { return text_; }
  // Names the expression reads (known after parsing).
  std::vector<std::string> variables() const;
  // Throws InputError naming any variable missing from `vars`, or on evaluation errors.
  double eval(const Variables& vars) const;

  // For evaluating one expression many times (a space's constraints over its configs): the
  // storage the compiled expression reads `name` from, or nullptr when it does not read it.
  // Values written there are seen by eval_bound(), which skips eval()'s lookups by name. The
  // pointer lives as long as this object (moves keep it; copies get their own).
  double* slot(const std::string& name);
  // Throws InputError on evaluation errors, as eval() does.
  double eval_bound() const;

 private:
  struct Impl;
  std::string text_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
