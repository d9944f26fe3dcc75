#include "ktune/kernel_spec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune {

namespace {

// Device properties a GPU backend reports (device.h); a spec may read them in any expression.
const std::set<std::string>& gpu_property_names() {
  static const std::set<std::string> names{
      "sms",         "smem_per_block", "smem_per_block_optin", "smem_per_sm",     "regs_per_block",
      "regs_per_sm", "warp_size",      "max_threads_per_block", "l2_bytes",       "sm_clock_mhz",
      "mem_clock_mhz", "mem_bandwidth_gbs", "cc_major",        "cc_minor",        "peak_gflops_f16",
      "peak_gflops_f32"};
  return names;
}

struct Ctx {
  std::string origin;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(origin + ": " + where + ": " + what);
  }
};

std::string as_text(const nlohmann::json& v, const Ctx& ctx, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) {
    std::ostringstream os;
    os << v.get<double>();
    return os.str();
  }
  ctx.fail(where, "expected a string or a number, got " + v.dump());
}

std::string req_string(const nlohmann::json& j, const char* key, const Ctx& ctx, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) ctx.fail(where, std::string("missing \"") + key + "\"");
  if (!j.at(key).is_string()) ctx.fail(where + "." + key, "expected a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

std::string opt_string(const nlohmann::json& j, const char* key, const Ctx& ctx, const std::string& where,
                       std::string fallback = {}) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) ctx.fail(where + "." + key, "expected a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

std::uint64_t to_count(double v, const std::string& what) {
  if (!std::isfinite(v) || v < 0 || v != std::floor(v))
    throw InputError(what + " evaluated to " + std::to_string(v) + ", expected a non-negative integer");
  return static_cast<std::uint64_t>(v);
}

}  // namespace

std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::F16:
    case ElemType::BF16: return 2;
    case ElemType::F32:
    case ElemType::I32:
    case ElemType::U32: return 4;
    case ElemType::F64:
    case ElemType::I64: return 8;
    case ElemType::I8:
    case ElemType::U8: return 1;
  }
  return 1;
}

const char* to_string(ElemType t) {
  switch (t) {
    case ElemType::F16: return "f16";
    case ElemType::BF16: return "bf16";
    case ElemType::F32: return "f32";
    case ElemType::F64: return "f64";
    case ElemType::I8: return "i8";
    case ElemType::U8: return "u8";
    case ElemType::I32: return "i32";
    case ElemType::U32: return "u32";
    case ElemType::I64: return "i64";
  }
  return "?";
}

ElemType elem_type_from_string(const std::string& s) {
  static const std::pair<const char*, ElemType> table[] = {
      {"f16", ElemType::F16}, {"bf16", ElemType::BF16}, {"f32", ElemType::F32}, {"f64", ElemType::F64},
      {"i8", ElemType::I8},   {"u8", ElemType::U8},     {"i32", ElemType::I32}, {"u32", ElemType::U32},
      {"i64", ElemType::I64}};
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

KernelSpec KernelSpec::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError("cannot read kernel spec " + file.string() + ": check the path");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("kernel spec " + file.string() + " is not valid JSON: " + e.what());
  }
  return from_json(j, file.parent_path(), file.string());
}

KernelSpec KernelSpec::from_json(const nlohmann::json& j, const std::filesystem::path& base_dir,
                                 const std::string& origin, const std::map<std::string, std::string>* files) {
  const Ctx ctx{origin};
  if (!j.is_object()) ctx.fail("top level", "expected a JSON object");
  KernelSpec s;
  KernelFamily& f = s.family_;
  f.name = req_string(j, "name", ctx, "spec");
  f.backend = opt_string(j, "backend", ctx, "spec", "cuda");
  f.description = opt_string(j, "description", ctx, "spec");
  f.source = origin;

  // Key fields.
  if (!j.contains("key_fields") || !j["key_fields"].is_array() || j["key_fields"].empty())
    ctx.fail("key_fields", "expected a non-empty array of {\"name\", \"numeric\", \"default\", \"choices\"}");
  for (std::size_t i = 0; i < j["key_fields"].size(); ++i) {
    const auto& kf = j["key_fields"][i];
    const std::string where = "key_fields[" + std::to_string(i) + "]";
    KeyField k;
    k.name = req_string(kf, "name", ctx, where);
    k.numeric = kf.value("numeric", true);
    if (kf.contains("default")) k.default_value = as_text(kf["default"], ctx, where + ".default");
    if (kf.contains("choices"))
      for (const auto& c : kf["choices"]) k.choices.push_back(as_text(c, ctx, where + ".choices"));
    k.help = opt_string(kf, "help", ctx, where);
    if (f.field(k.name)) ctx.fail(where, "duplicate key field '" + k.name + "'");
    f.key_fields.push_back(std::move(k));
  }
  auto check_field = [&](const char* key, bool numeric) {
    const std::string v = opt_string(j, key, ctx, "spec");
    if (!v.empty()) {
      const KeyField* k = f.field(v);
      if (!k) ctx.fail(key, "'" + v + "' is not one of the key fields");
      if (numeric && !k->numeric) ctx.fail(key, "'" + v + "' must be a numeric key field");
    }
    return v;
  };
  f.bucket_field = check_field("bucket_field", true);
  f.tp_out_field = check_field("tp_out_field", true);
  f.tp_in_field = check_field("tp_in_field", true);
  f.flops_expr = opt_string(j, "flops", ctx, "spec");
  f.bytes_expr = opt_string(j, "bytes", ctx, "spec");

  // Space and default config.
  if (!j.contains("space")) ctx.fail("spec", "missing \"space\" (parameters and constraints)");
  try {
    f.default_space = SearchSpace::from_json(j["space"]);
  } catch (const InputError& e) {
    ctx.fail("space", e.what());
  }
  if (j.contains("default_config")) {
    try {
      f.default_config = Config::from_json(j["default_config"]);
    } catch (const InputError& e) {
      ctx.fail("default_config", e.what());
    }
  } else {
    for (const auto& p : f.default_space.parameters())
      if (!p.values.empty()) f.default_config.set(p.name, p.values.front());
  }
  for (const auto& p : f.default_space.parameters())
    if (!f.default_config.has(p.name)) ctx.fail("default_config", "has no value for parameter '" + p.name + "'");

  // Source.
  const std::string src = req_string(j, "source", ctx, "spec");
  s.source_file_ = base_dir / src;
  if (files) {
    auto it = files->find(src);
    if (it == files->end()) ctx.fail("source", "no embedded file named " + src);
    s.source_ = it->second;
  } else {
    std::ifstream in(s.source_file_, std::ios::binary);
    if (!in) ctx.fail("source", "cannot read kernel source " + s.source_file_.string());
    std::ostringstream os;
    os << in.rdbuf();
    s.source_ = os.str();
  }

  // Compile settings.
  if (j.contains("compile")) {
    const auto& c = j["compile"];
    if (!c.is_object()) ctx.fail("compile", "expected an object with options, defines, params_as_defines");
    for (const auto& o : c.value("options", nlohmann::json::array())) s.options_.push_back(as_text(o, ctx, "compile.options"));
    s.params_as_defines_ = c.value("params_as_defines", true);
    if (c.contains("defines")) {
      if (!c["defines"].is_object()) ctx.fail("compile.defines", "expected an object name -> expression or {field, map}");
      for (const auto& [name, v] : c["defines"].items()) {
        SpecDefine d;
        d.name = name;
        const std::string where = "compile.defines." + name;
        if (v.is_object()) {
          d.field = req_string(v, "field", ctx, where);
          const KeyField* k = f.field(d.field);
          if (!k || k->numeric) ctx.fail(where + ".field", "'" + d.field + "' is not a text key field");
          if (!v.contains("map") || !v["map"].is_object()) ctx.fail(where, "missing \"map\": {field value: define value}");
          for (const auto& [from, to] : v["map"].items()) d.map[from] = as_text(to, ctx, where + ".map");
          for (const auto& choice : k->choices)
            if (!d.map.count(choice)) ctx.fail(where + ".map", "has no entry for " + d.field + "=" + choice);
        } else {
          d.expr = as_text(v, ctx, where);
        }
        s.defines_.push_back(std::move(d));
      }
    }
  }

  // Arguments.
  if (!j.contains("arguments") || !j["arguments"].is_array() || j["arguments"].empty())
    ctx.fail("arguments", "expected a non-empty array of buffers and scalars");
  for (std::size_t i = 0; i < j["arguments"].size(); ++i) {
    const auto& a = j["arguments"][i];
    const std::string where = "arguments[" + std::to_string(i) + "]";
    SpecArgument arg;
    arg.name = req_string(a, "name", ctx, where);
    if (s.argument(arg.name)) ctx.fail(where, "duplicate argument '" + arg.name + "'");
    if (a.contains("buffer")) {
      arg.dtype = req_string(a, "buffer", ctx, where);
      if (!a.contains("count")) ctx.fail(where, "buffer '" + arg.name + "' needs \"count\" (an element count expression)");
      arg.count = as_text(a["count"], ctx, where + ".count");
    } else if (a.contains("scalar")) {
      arg.kind = SpecArgument::Kind::Scalar;
      arg.dtype = req_string(a, "scalar", ctx, where);
      if (!a.contains("value")) ctx.fail(where, "scalar '" + arg.name + "' needs \"value\" (an expression)");
      arg.value = as_text(a["value"], ctx, where + ".value");
    } else if (a.contains("tensor_map")) {
      arg.kind = SpecArgument::Kind::TensorMap;
      arg.tensor = req_string(a, "tensor_map", ctx, where);
      const SpecArgument* of = s.argument(arg.tensor);
      if (!of || !of->is_buffer())
        ctx.fail(where + ".tensor_map", "'" + arg.tensor + "' is not a buffer declared before this argument");
      arg.dtype = of->dtype;
      for (auto [key, out] : {std::pair{"dims", &arg.dims}, {"box", &arg.box}}) {
        if (!a.contains(key) || !a[key].is_array() || a[key].empty() || a[key].size() > 5)
          ctx.fail(where, std::string("tensor map '") + arg.name + "' needs \"" + key + "\": 1 to 5 expressions, innermost first");
        for (const auto& e : a[key]) out->push_back(as_text(e, ctx, where + "." + key));
      }
      if (arg.dims.size() != arg.box.size()) ctx.fail(where, "tensor map '" + arg.name + "': \"dims\" and \"box\" differ in rank");
      if (a.contains("swizzle")) {
        if (!a["swizzle"].is_number_integer()) ctx.fail(where + ".swizzle", "expected 0, 32, 64 or 128 (bytes)");
        arg.swizzle = a["swizzle"].get<int>();
        if (arg.swizzle != 0 && arg.swizzle != 32 && arg.swizzle != 64 && arg.swizzle != 128)
          ctx.fail(where + ".swizzle", "expected 0, 32, 64 or 128 (bytes), got " + std::to_string(arg.swizzle));
      }
    } else {
      ctx.fail(where, "argument '" + arg.name + "' needs \"buffer\": dtype, \"scalar\": dtype or \"tensor_map\": buffer");
    }
    if (arg.dtype.find("${") == std::string::npos) {
      try {
        elem_type_from_string(arg.dtype);
      } catch (const InputError& e) {
        ctx.fail(where, e.what());
      }
    }
    const std::string role = opt_string(a, "role", ctx, where, "input");
    if (role == "input") arg.role = ArgRole::Input;
    else if (role == "output") arg.role = ArgRole::Output;
    else if (role == "workspace") arg.role = ArgRole::Workspace;
    else ctx.fail(where + ".role", "'" + role + "' is not input, output or workspace");
    if (a.contains("init")) {
      const auto& in = a["init"];
      if (in == "zero") arg.init.kind = ArgInit::Kind::Zero;
      else if (in == "none") arg.init.kind = ArgInit::Kind::None;
      else if (in.is_object() && in.contains("uniform") && in["uniform"].is_array() && in["uniform"].size() == 2 &&
               in["uniform"][0].is_number() && in["uniform"][1].is_number()) {
        arg.init.kind = ArgInit::Kind::Uniform;
        arg.init.lo = in["uniform"][0].get<double>();
        arg.init.hi = in["uniform"][1].get<double>();
        if (!(arg.init.lo <= arg.init.hi)) ctx.fail(where + ".init", "uniform bounds must be [lo, hi] with lo <= hi");
      } else {
        ctx.fail(where + ".init", "expected \"zero\", \"none\" or {\"uniform\": [lo, hi]}, got " + in.dump());
      }
    } else if (arg.is_buffer() && arg.role == ArgRole::Input) {
      arg.init.kind = ArgInit::Kind::Uniform;  // inputs are random unless said otherwise: zeros hide bugs
    }
    if (arg.role != ArgRole::Input && !arg.is_buffer()) ctx.fail(where, "only a buffer can be an output or a workspace");
    s.args_.push_back(std::move(arg));
  }
  {
    std::vector<std::string> outputs;
    for (const auto& a : s.args_)
      if (a.role == ArgRole::Output) outputs.push_back(a.name);
    if (outputs.size() != 1)
      ctx.fail("arguments", "exactly one argument must have \"role\": \"output\" (the one validated), found " +
                                std::to_string(outputs.size()));
    s.output_ = outputs.front();
  }

  // Launches.
  if (!j.contains("launches") || !j["launches"].is_array() || j["launches"].empty())
    ctx.fail("launches", "expected a non-empty array of {entry, grid, block, shared_bytes, args, when}");
  for (std::size_t i = 0; i < j["launches"].size(); ++i) {
    const auto& l = j["launches"][i];
    const std::string where = "launches[" + std::to_string(i) + "]";
    SpecLaunch launch;
    launch.entry = req_string(l, "entry", ctx, where);
    auto dims = [&](const char* key, std::array<std::string, 3>& out) {
      if (!l.contains(key)) ctx.fail(where, std::string("missing \"") + key + "\" (1 to 3 expressions)");
      const auto& d = l[key];
      if (!d.is_array() || d.empty() || d.size() > 3)
        ctx.fail(where + "." + key, "expected an array of 1 to 3 expressions, got " + d.dump());
      for (std::size_t k = 0; k < d.size(); ++k) out[k] = as_text(d[k], ctx, where + "." + key);
    };
    dims("grid", launch.grid);
    dims("block", launch.block);
    if (l.contains("shared_bytes")) launch.shared_bytes = as_text(l["shared_bytes"], ctx, where + ".shared_bytes");
    if (l.contains("when")) launch.when = as_text(l["when"], ctx, where + ".when");
    if (!l.contains("args") || !l["args"].is_array()) ctx.fail(where, "missing \"args\": argument names in parameter order");
    for (const auto& a : l["args"]) {
      const std::string name = as_text(a, ctx, where + ".args");
      if (!s.argument(name)) ctx.fail(where + ".args", "'" + name + "' is not a declared argument");
      launch.args.push_back(name);
    }
    s.launches_.push_back(std::move(launch));
  }

  // Reference.
  if (j.contains("reference")) {
    const auto& r = j["reference"];
    s.reference_.kind = req_string(r, "kind", ctx, "reference");
    if (s.reference_.kind == "cublas_gemm") {
      for (const char* key : {"a", "b", "c", "m", "n", "k"})
        if (!r.contains(key)) ctx.fail("reference", std::string("cublas_gemm needs \"") + key + "\"");
      for (const auto& [k, v] : r.items())
        if (k != "kind") s.reference_.fields[k] = as_text(v, ctx, "reference." + k);
      for (const char* key : {"a", "b", "c", "b_scale"}) {
        auto it = s.reference_.fields.find(key);
        if (it != s.reference_.fields.end() && !s.argument(it->second))
          ctx.fail(std::string("reference.") + key, "'" + it->second + "' is not a declared argument");
      }
      const std::string layout = s.reference_.fields.count("b_layout") ? s.reference_.fields["b_layout"] : "kn";
      if (layout != "kn" && layout != "nk") ctx.fail("reference.b_layout", "expected \"kn\" (K x N) or \"nk\" (N x K)");
    } else if (s.reference_.kind == "config") {
      if (!r.contains("config")) ctx.fail("reference", "kind config needs \"config\": the trusted parameter values");
      try {
        s.reference_.config = Config::from_json(r["config"]);
      } catch (const InputError& e) {
        ctx.fail("reference.config", e.what());
      }
    } else if (s.reference_.kind != "none") {
      ctx.fail("reference.kind", "'" + s.reference_.kind + "' is not one of none, cublas_gemm, config");
    }
  }

  // Every expression must parse and read only known names, so a typo fails at load, not mid-run.
  std::set<std::string> known = gpu_property_names();
  for (const auto& k : f.key_fields)
    if (k.numeric) known.insert(k.name);
  for (const auto& p : f.default_space.parameters()) known.insert(p.name);
  auto check_expr = [&](const std::string& text, const std::string& where) {
    if (text.empty()) return;
    try {
      Expression e(text);
      for (const auto& v : e.variables())
        if (!known.count(v)) ctx.fail(where, "'" + v + "' in \"" + text + "\" is not a numeric key field, parameter or device property");
    } catch (const InputError& e) {
      ctx.fail(where, e.what());
    }
  };
  check_expr(f.flops_expr, "flops");
  check_expr(f.bytes_expr, "bytes");
  for (const auto& d : s.defines_) check_expr(d.expr, "compile.defines." + d.name);
  for (const auto& a : s.args_) {
    check_expr(a.is_buffer() ? a.count : a.value, "arguments." + a.name);
    for (const auto& e : a.dims) check_expr(e, "arguments." + a.name + ".dims");
    for (const auto& e : a.box) check_expr(e, "arguments." + a.name + ".box");
  }
  for (std::size_t i = 0; i < s.launches_.size(); ++i) {
    const auto& l = s.launches_[i];
    const std::string where = "launches[" + std::to_string(i) + "]";
    for (int k = 0; k < 3; ++k) {
      check_expr(l.grid[k], where + ".grid");
      check_expr(l.block[k], where + ".block");
    }
    check_expr(l.shared_bytes, where + ".shared_bytes");
    check_expr(l.when, where + ".when");
  }
  for (const char* key : {"m", "n", "k"}) {
    auto it = s.reference_.fields.find(key);
    if (it != s.reference_.fields.end()) check_expr(it->second, std::string("reference.") + key);
  }
  return s;
}

const SpecArgument* KernelSpec::argument(const std::string& name) const {
  for (const auto& a : args_)
    if (a.name == name) return &a;
  return nullptr;
}

const SpecArgument& KernelSpec::output() const { return *argument(output_); }

Config KernelSpec::complete(const Config& c) const {
  Config out = c;
  for (const auto& [name, value] : family_.default_config.values())
    if (!out.has(name)) out.set(name, value);
  return out;
}

Variables KernelSpec::variables(const Problem& p, const Config& c, const Variables& device) const {
  Variables vars = device;
  const Config full = complete(c);
  for (const auto& [name, value] : full.values()) vars[name] = static_cast<double>(value);
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
    if (close == std::string::npos) throw InputError("unterminated \"${\" in \"" + text + "\" (" + family_.source + ")");
    out += text.substr(pos, open - pos);
    const std::string name = text.substr(open + 2, close - open - 2);
    std::optional<std::string> value;
    if (family_.field(name)) value = p.field(name);
    else if (c.has(name)) value = std::to_string(c.get(name));
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
    for (const auto& [name, value] : full.values()) out.emplace_back(name, std::to_string(value));
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
      const double v = Expression(d.expr).eval(vars);
      std::ostringstream os;
      if (v == std::floor(v) && std::abs(v) < 9e15) os << static_cast<long long>(v);
      else os << v;
      out.emplace_back(d.name, os.str());
    }
  }
  return out;
}

std::vector<std::string> KernelSpec::compile_options(const Problem& p, const Config& c) const {
  std::vector<std::string> defs;
  for (const auto& [name, value] : defines(p, c)) defs.push_back("-D" + name + "=" + value);
  std::sort(defs.begin(), defs.end());
  std::vector<std::string> out = options_;
  out.insert(out.end(), defs.begin(), defs.end());
  return out;
}

LaunchGeometry KernelSpec::geometry(const SpecLaunch& l, const Problem& p, const Config& c, const Variables& device) const {
  const Variables vars = variables(p, c, device);
  LaunchGeometry g;
  g.entry = substitute(l.entry, p, c);
  g.active = l.when.empty() || Expression(l.when).eval(vars) != 0;
  for (int k = 0; k < 3; ++k) {
    g.grid[k] = to_count(Expression(l.grid[k]).eval(vars), "grid \"" + l.grid[k] + "\" of " + g.entry);
    g.block[k] = to_count(Expression(l.block[k]).eval(vars), "block \"" + l.block[k] + "\" of " + g.entry);
  }
  g.shared_bytes = to_count(Expression(l.shared_bytes).eval(vars), "shared_bytes \"" + l.shared_bytes + "\" of " + g.entry);
  return g;
}

ElemType KernelSpec::arg_type(const SpecArgument& a, const Problem& p, const Config& c) const {
  return elem_type_from_string(substitute(a.dtype, p, c));
}

std::uint64_t KernelSpec::arg_count(const SpecArgument& a, const Problem& p, const Config& c, const Variables& device) const {
  if (!a.is_buffer()) throw InputError("argument " + a.name + " is not a buffer; it has no element count");
  return to_count(Expression(a.count).eval(variables(p, c, device)), "count \"" + a.count + "\" of buffer " + a.name);
}

}  // namespace ktune
