#include "ktune/kernel_spec.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ktune/error.h"
#include "ktune/host_data.h"

namespace ktune {

namespace {

std::uint64_t to_count(double v, const std::string& what) {
  if (!std::isfinite(v) || v < 0 || v != std::floor(v))
    throw InputError(what + " evaluated to " + std::to_string(v) + ", expected a non-negative integer");
  return static_cast<std::uint64_t>(v);
}

std::string number_text(double v);

}  // namespace

std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::F16:
    case ElemType::BF16:
      return 2;
    case ElemType::F32:
    case ElemType::I32:
    case ElemType::U32:
      return 4;
    case ElemType::F64:
    case ElemType::I64:
      return 8;
    case ElemType::I8:
    case ElemType::U8:
      return 1;
  }
  return 1;
}

const char* to_string(ElemType t) {
  switch (t) {
    case ElemType::F16:
      return "f16";
    case ElemType::BF16:
      return "bf16";
    case ElemType::F32:
      return "f32";
    case ElemType::F64:
      return "f64";
    case ElemType::I8:
      return "i8";
    case ElemType::U8:
      return "u8";
    case ElemType::I32:
      return "i32";
    case ElemType::U32:
      return "u32";
    case ElemType::I64:
      return "i64";
  }
  return "?";
}

ElemType elem_type_from_string(const std::string& s) {
  static const std::pair<const char*, ElemType> table[] = {
      {"f16", ElemType::F16}, {"bf16", ElemType::BF16}, {"f32", ElemType::F32},
      {"f64", ElemType::F64}, {"i8", ElemType::I8},     {"u8", ElemType::U8},
      {"i32", ElemType::I32}, {"u32", ElemType::U32},   {"i64", ElemType::I64}};
  for (const auto& [name, t] : table)
    if (s == name) return t;
  throw InputError("unknown element type '" + s + "': use one of f16, bf16, f32, f64, i8, u8, i32, u32, i64");
}

std::uint64_t fnv1a64(const std::string& data, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

SpecDialect::ReferenceKind SpecDialect::ReferenceKind::gemm() {
  ReferenceKind k;
  k.arguments = {"a", "b", "c"};
  k.expressions = {"m", "n", "k"};
  k.optional_arguments = {"b_scale"};
  k.choices["b_layout"] = {"kn", "nk"};
  return k;
}

std::string SpecArgument::published() const {
  if (init.kind == ArgInit::Kind::Lengths) return name + "_total";
  if (init.kind == ArgInit::Kind::PageTable) return name + "_pages";
  if (init.kind == ArgInit::Kind::Routing) return name + "_busiest";
  return "";
}

const ArgInit& SpecArgument::init_for(const Problem& p) const {
  if (init_field.empty()) return init;
  const std::string& value = p.field(init_field);
  const auto it = init_by_value.find(value);
  if (it == init_by_value.end())
    throw InputError("its init has no entry for " + init_field + "=" + value + ": add one to the init's \"map\"");
  return it->second;
}

const SpecArgument* KernelSpec::argument(const std::string& name) const {
  for (const auto& a : args_)
    if (a.name == name) return &a;
  return nullptr;
}

const SpecArgument& KernelSpec::output() const { return *argument(output_); }

std::string define_value(const ParamValue& v) {
  if (!v.is_string()) return std::to_string(v.as_int());
  // A C string literal: string parameters select code through literal concatenation, as PTX
  // cache modifiers in inline assembly do ("ld.global" CACHE_MODIFIER ".f32 ..."). Their values
  // hold no quote or backslash (string_value_problem), so nothing needs escaping.
  return "\"" + v.as_string() + "\"";
}

KernelSource KernelSpec::program() const { return {source_, source_file_.filename().string(), headers_}; }

Config KernelSpec::complete(const Config& c) const {
  Config out = c;
  for (const auto& [name, value] : family_.default_config.values())
    if (!out.has(name)) out.set(name, value);
  return out;
}

Variables KernelSpec::variables(const Problem& p, const Config& c, const Variables& device) const {
  Variables vars = device;
  SearchSpace::bind(complete(c), vars);
  for (const auto& [name, value] : family_.variables(p)) vars[name] = value;
  return vars;
}

std::string KernelSpec::substitute(const std::string& text, const Problem& p, const Config& c) const {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = text.find("${", pos);
    if (open == std::string::npos) break;
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos)
      throw InputError("unterminated \"${\" in \"" + text + "\" (" + family_.source + ")");
    out += text.substr(pos, open - pos);
    const std::string name = text.substr(open + 2, close - open - 2);
    std::optional<std::string> value;
    if (family_.field(name))
      value = p.field(name);
    else if (c.has(name))
      value = c.value(name).is_string() ? c.value(name).as_string() : std::to_string(c.get(name));
    else
      for (const auto& [dn, dv] : defines(p, c))
        if (dn == name) value = dv;
    if (!value)
      throw InputError("\"${" + name + "}\" in \"" + text + "\" (" + family_.source +
                       ") names no key field, parameter or define");
    out += *value;
    pos = close + 1;
  }
  return out + text.substr(pos);
}

std::vector<std::pair<std::string, std::string>> KernelSpec::defines(const Problem& p, const Config& c) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (params_as_defines_) {
    const Config full = complete(c);
    for (const auto& [name, value] : full.values()) out.emplace_back(name, define_value(value));
  }
  const Variables vars = variables(p, c);
  for (const auto& d : defines_) {
    if (!d.field.empty()) {
      const std::string& v = p.field(d.field);
      auto it = d.map.find(v);
      if (it == d.map.end())
        throw InputError("define " + d.name + " (" + family_.source + ") has no value for " + d.field + "=" + v);
      out.emplace_back(d.name, it->second);
    } else {
      out.emplace_back(d.name, number_text(Expression(d.expr).eval(vars)));
    }
  }
  return out;
}

namespace {

std::vector<std::string> options_with(const std::vector<std::string>& options,
                                      const std::vector<std::pair<std::string, std::string>>& defines) {
  std::vector<std::string> defs;
  for (const auto& [name, value] : defines) defs.push_back("-D" + name + "=" + value);
  std::sort(defs.begin(), defs.end());
  std::vector<std::string> out = options;
  out.insert(out.end(), defs.begin(), defs.end());
  return out;
}

std::string number_text(double v) {
  std::ostringstream os;
  if (v == std::floor(v) && std::abs(v) < 9e15)
    os << static_cast<long long>(v);
  else
    os << v;
  return os.str();
}

}  // namespace

std::vector<std::string> KernelSpec::compile_options(const Problem& p, const Config& c) const {
  return options_with(options_, defines(p, c));
}

std::vector<std::pair<std::string, std::string>> KernelSpec::launch_defines(const SpecLaunch& l, const Problem& p,
                                                                            const Config& c) const {
  auto out = defines(p, c);
  if (l.defines.empty()) return out;
  const Variables vars = variables(p, c);
  for (const auto& define : l.defines) {
    const std::string& name = define.first;  // a lambda may not capture a structured binding before clang 16
    const std::string v = number_text(Expression(define.second).eval(vars));
    const auto it = std::find_if(out.begin(), out.end(), [&](const auto& d) { return d.first == name; });
    if (it != out.end())
      it->second = v;
    else
      out.emplace_back(name, v);
  }
  return out;
}

std::vector<std::string> KernelSpec::launch_compile_options(const SpecLaunch& l, const Problem& p,
                                                            const Config& c) const {
  return options_with(options_, launch_defines(l, p, c));
}

LaunchGeometry KernelSpec::geometry(const SpecLaunch& l, const Problem& p, const Config& c,
                                    const Variables& device) const {
  const Variables vars = variables(p, c, device);
  LaunchGeometry g;
  g.entry = substitute(l.entry, p, c);
  g.active = l.when.empty() || Expression(l.when).eval(vars) != 0;
  for (int k = 0; k < 3; ++k) {
    g.grid[k] = to_count(Expression(l.grid[k]).eval(vars), "grid \"" + l.grid[k] + "\" of " + g.entry);
    g.block[k] = to_count(Expression(l.block[k]).eval(vars), "block \"" + l.block[k] + "\" of " + g.entry);
    g.cluster[k] = to_count(Expression(l.cluster[k]).eval(vars), "cluster \"" + l.cluster[k] + "\" of " + g.entry);
  }
  g.shared_bytes =
      to_count(Expression(l.shared_bytes).eval(vars), "shared_bytes \"" + l.shared_bytes + "\" of " + g.entry);
  return g;
}

ElemType KernelSpec::arg_type(const SpecArgument& a, const Problem& p, const Config& c) const {
  return elem_type_from_string(substitute(a.dtype, p, c));
}

std::uint64_t KernelSpec::arg_count(const SpecArgument& a, const Problem& p, const Config& c,
                                    const Variables& device) const {
  if (!a.is_buffer()) throw InputError("argument " + a.name + " is not a buffer; it has no element count");
  return to_count(Expression(a.count).eval(variables(p, c, device)), "count \"" + a.count + "\" of buffer " + a.name);
}

std::uint64_t KernelSpec::max_arg_count(const SpecArgument& a, const Problem& p, const Variables& device) const {
  bool reads_config = false;
  for (const auto& v : Expression(a.count).variables())
    if (family_.default_space.find(v)) reads_config = true;
  std::uint64_t most = arg_count(a, p, family_.default_config, device);
  if (!reads_config) return most;
  Variables context = device;
  for (const auto& [name, value] : family_.variables(p)) context[name] = value;
  for (const auto& c : family_.default_space.enumerate(context)) most = std::max(most, arg_count(a, p, c, device));
  return most;
}

double KernelSpec::reduced(const void* data, ElemType t, std::size_t total, const Problem& p, const Config& c,
                           const Variables& device) const {
  std::size_t n = total;
  if (!check_.count.empty())
    n = to_count(Expression(check_.count).eval(variables(p, c, device)), "check.count \"" + check_.count + "\"");
  if (n > total)
    throw InputError("check.count \"" + check_.count + "\" is " + std::to_string(n) + " for " + c.key() + ", but " +
                     output_ + " holds " + std::to_string(total) + " elements");
  double acc = check_.reduce == SpecCheck::Reduce::Max ? -HUGE_VAL : 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = load_elem(data, t, i);
    // NaN (a partial result never written) must not vanish in max(): it poisons both reductions.
    if (std::isnan(v)) return v;
    acc = check_.reduce == SpecCheck::Reduce::Max ? std::max(acc, v) : acc + v;
  }
  return acc;
}

std::map<std::string, std::string> KernelSpec::constants() const {
  std::map<std::string, std::string> out;
  for (const auto& a : args_)
    if (!a.constant.empty()) out[a.constant] = a.name;
  return out;
}

}  // namespace ktune
