#include "ktune/expression.h"

#include <muParser.h>
#include <algorithm>
#include <cmath>

#include "ktune/error.h"
#include "ktune/param_value.h"

namespace ktune {

namespace {

// Division by zero in a helper is an error, not a NaN: a comparison would turn the NaN into a
// silent 0 or 1 ("mod(K, BK) == 0" with BK = 0).
double ceil_div(double a, double b) {
  if (b == 0) throw mu::ParserError("ceil_div by zero");
  return std::ceil(a / b);
}
double is_pow2(double x) {
  // Outside (0, 2^62] (NaN and infinities included) the cast to an integer would be undefined.
  if (!(x > 0 && x <= 0x1p62)) return 0.0;
  const auto v = static_cast<long long>(x);
  return (static_cast<double>(v) == x && (v & (v - 1)) == 0) ? 1.0 : 0.0;
}
double imod(double a, double b) {
  if (b == 0) throw mu::ParserError("mod by zero");
  return std::fmod(a, b);
}

// muparser's built-in operators let a NaN or an infinity flow into a comparison, which turns it
// into a silent 0 or 1 ("(BM - BM) / (BM - BM) == 0" would prune, "log2(0) < 4" would keep).
// ktune defines the operators itself so that such a value stops the evaluation with its cause.
double finite(double v, const char* what) {
  if (!std::isfinite(v)) throw mu::ParserError(std::string(what) + " gives " + (std::isnan(v) ? "NaN" : "infinity"));
  return v;
}
double operand(double v) {
  if (!std::isfinite(v)) throw mu::ParserError(std::string("an operand is ") + (std::isnan(v) ? "NaN" : "infinity"));
  return v;
}
double add(double a, double b) { return finite(a + b, "an addition"); }
double sub(double a, double b) { return finite(a - b, "a subtraction"); }
double mul(double a, double b) { return finite(a * b, "a multiplication"); }
double div(double a, double b) {
  if (b == 0) throw mu::ParserError("division by zero");
  return finite(a / b, "a division");
}
double pow_(double a, double b) { return finite(std::pow(a, b), "a power"); }
double lt(double a, double b) { return operand(a) < operand(b) ? 1.0 : 0.0; }
double gt(double a, double b) { return operand(a) > operand(b) ? 1.0 : 0.0; }
double le(double a, double b) { return operand(a) <= operand(b) ? 1.0 : 0.0; }
double ge(double a, double b) { return operand(a) >= operand(b) ? 1.0 : 0.0; }
double eq(double a, double b) { return operand(a) == operand(b) ? 1.0 : 0.0; }
double ne(double a, double b) { return operand(a) != operand(b) ? 1.0 : 0.0; }
double land(double a, double b) { return operand(a) != 0 && operand(b) != 0 ? 1.0 : 0.0; }
double lor(double a, double b) { return operand(a) != 0 || operand(b) != 0 ? 1.0 : 0.0; }

void define_operators(mu::Parser& p) {
  p.EnableBuiltInOprt(false);
  // Precedence and associativity as muparser's own (and C's): || < && < comparisons < + - < * / < ^.
  p.DefineOprt("||", lor, mu::prLOR, mu::oaLEFT, true);
  p.DefineOprt("&&", land, mu::prLAND, mu::oaLEFT, true);
  using Op = double (*)(double, double);
  const std::pair<const char*, Op> comparisons[] = {{"<", lt},  {">", gt},  {"<=", le},
                                                    {">=", ge}, {"==", eq}, {"!=", ne}};
  for (const auto& [name, f] : comparisons) p.DefineOprt(name, f, mu::prCMP, mu::oaLEFT, true);
  p.DefineOprt("+", add, mu::prADD_SUB, mu::oaLEFT, true);
  p.DefineOprt("-", sub, mu::prADD_SUB, mu::oaLEFT, true);
  p.DefineOprt("*", mul, mu::prMUL_DIV, mu::oaLEFT, true);
  p.DefineOprt("/", div, mu::prMUL_DIV, mu::oaLEFT, true);
  p.DefineOprt("^", pow_, mu::prPOW, mu::oaRIGHT, true);
}

double floor_(double x) { return std::floor(x); }
double ceil_(double x) { return std::ceil(x); }
double log2_(double x) { return std::log2(x); }
double not_(double x) { return x == 0.0 ? 1.0 : 0.0; }

// muparser has no string comparison, so each quoted literal ("…" or '…') becomes a hidden
// variable holding its string_code; a string parameter holds the code of its value, and == / !=
// compare them as numbers.
constexpr const char* kLiteralPrefix = "_ktune_str_";

std::string replace_literals(const std::string& text, std::map<std::string, double>& literals) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char q = text[i];
    if (q != '"' && q != '\'') {
      out += q;
      continue;
    }
    const std::size_t end = text.find(q, i + 1);
    if (end == std::string::npos)
      throw InputError("cannot parse expression '" + text + "': unterminated string at position " + std::to_string(i));
    const std::string name = kLiteralPrefix + std::to_string(literals.size());
    literals[name] = string_code(text.substr(i + 1, end - i - 1));
    out += name;
    i = end;
  }
  return out;
}

}  // namespace

struct Expression::Impl {
  mu::Parser parser;
  // std::map nodes never move, so muparser can keep pointers to the values.
  std::map<std::string, double> storage;
  std::vector<std::string> names;

  static double* factory(const char* name, void* self) { return &static_cast<Impl*>(self)->storage[name]; }

  explicit Impl(const std::string& text) {
    define_operators(parser);
    parser.DefineFun("ceil_div", ceil_div);
    parser.DefineFun("is_pow2", is_pow2);
    parser.DefineFun("mod", imod);
    parser.DefineFun("floor", floor_);
    parser.DefineFun("ceil", ceil_);
    parser.DefineFun("log2", log2_);
    parser.DefineInfixOprt("!", not_);
    parser.DefineConst("true", 1.0);
    parser.DefineConst("false", 0.0);
    parser.SetVarFactory(factory, this);
    try {
      std::map<std::string, double> literals;
      const std::string rewritten = replace_literals(text, literals);
      for (const auto& [name, code] : literals) {
        storage[name] = code;
        parser.DefineVar(name, &storage[name]);
      }
      parser.SetExpr(rewritten);
      for (const auto& [name, ptr] : parser.GetUsedVar())
        if (!literals.count(name)) names.push_back(name);
    } catch (const mu::Parser::exception_type& e) {
      // A negative position: the parser folded a constant part and its value is the error.
      throw InputError(e.GetPos() < 0 ? "cannot evaluate expression '" + text + "': " + e.GetMsg()
                                      : "cannot parse expression '" + text + "': " + e.GetMsg() + " (at position " +
                                            std::to_string(e.GetPos()) + ")");
    }
  }
};

Expression::Expression(std::string text) : text_(std::move(text)) {
  if (text_.find_first_not_of(" \t") == std::string::npos) throw InputError("empty expression");
  impl_ = std::make_unique<Impl>(text_);
}
Expression::~Expression() = default;
Expression::Expression(const Expression& o) : text_(o.text_), impl_(std::make_unique<Impl>(o.text_)) {}
Expression& Expression::operator=(const Expression& o) {
  if (this != &o) {
    text_ = o.text_;
    impl_ = std::make_unique<Impl>(o.text_);
  }
  return *this;
}
Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;

std::vector<std::string> Expression::variables() const { return impl_->names; }

double Expression::eval(const Variables& vars) const {
  for (const auto& name : impl_->names) {
    auto it = vars.find(name);
    if (it == vars.end()) {
      std::string known;
      for (const auto& [k, v] : vars) known += (known.empty() ? "" : ", ") + k;
      throw InputError("unknown variable '" + name + "' in expression '" + text_ + "'; known variables: " + known);
    }
    impl_->storage[name] = it->second;
  }
  return eval_bound();
}

double* Expression::slot(const std::string& name) {
  if (std::find(impl_->names.begin(), impl_->names.end(), name) == impl_->names.end()) return nullptr;
  return &impl_->storage[name];
}

double Expression::eval_bound() const {
  try {
    return impl_->parser.Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw InputError("cannot evaluate expression '" + text_ + "': " + e.GetMsg());
  }
}

}  // namespace ktune
