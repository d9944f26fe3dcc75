// KernelSpec::from_json in parts, one per job: the family (name, key fields, space, default
// config), the kernel source, the compile settings, the arguments, the launches and the reference;
// then kernel_spec_checks.cpp's check that every expression reads only names the spec knows, and
// the launch limits derived as constraints. Every read goes
// through JsonPath, so an error names the field: "key_fields[1].numeric: expected true or false".
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "family_sharding.h"
#include "json_path.h"
#include "kernel_spec_checks.h"
#include "kernel_spec_data.h"
#include "kernel_spec_index.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"
#include "ktune/workload_rules.h"

namespace ktune {

using detail::JsonPath;
using detail::spec_text;

std::string detail::spec_text(const JsonPath& v) {
  if (v.json().is_string()) return v.string();
  if (v.json().is_number_integer()) return std::to_string(v.integer());
  if (v.json().is_number()) {
    std::ostringstream os;
    os << v.number();
    return os.str();
  }
  v.expected("a string or a number");
}

namespace {

// A non-empty array member, read element by element.
template <class F>
void each_of(const JsonPath& root, const char* key, const char* what, F&& f) {
  if (!root.has(key)) root.fail(std::string("missing \"") + key + "\": " + what);
  const JsonPath list = root[key];
  if (list.size() == 0) list.fail(std::string("expected ") + what);
  list.for_each_element(f);
}

// Whether `file` lies under `dir` (both resolved, absolute).
bool inside(const std::filesystem::path& dir, const std::filesystem::path& file) {
  auto f = file.begin();
  for (const auto& part : dir) {
    if (part.empty()) continue;  // a trailing separator
    if (f == file.end() || *f != part) return false;
    ++f;
  }
  return f != file.end();
}

}  // namespace

// Outside the spec's folder a file is refused unless allowed, before anything reads it; the
// message names the paths, never what the file holds.
std::filesystem::path detail::spec_file(const JsonPath& at, const std::string& path, const std::string& what,
                                        const std::filesystem::path& base_dir) {
  namespace fs = std::filesystem;
  const fs::path folder = base_dir.empty() ? fs::path(".") : base_dir;
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(folder, ec), ec);
  if (ec) at.fail("cannot resolve the spec's folder " + folder.string() + ": " + ec.message());
  const fs::path file = fs::weakly_canonical(fs::absolute(folder / path, ec), ec);
  if (ec) at.fail("cannot resolve " + (folder / path).string() + ": " + ec.message());
  if (!inside(dir, file) && !source_outside_spec_allowed())
    at.fail(what + " resolves to " + file.string() + ", outside the spec's folder " + dir.string() +
            ": put the file in that folder (or below it), or, if you trust this spec, pass "
            "--allow-source-outside-spec (" +
            kAllowSourceOutsideSpecEnv + "=1)");
  return file;
}

std::filesystem::path detail::spec_file(const JsonPath& src, const std::filesystem::path& base_dir) {
  return spec_file(src, src.string(), "\"" + src.string() + "\"", base_dir);
}

bool source_outside_spec_allowed() {
  const char* v = std::getenv(kAllowSourceOutsideSpecEnv);
  return v && std::string_view(v) == "1";
}

struct KernelSpecReader {
  KernelSpec& s;
  const SpecDialect& dialect;
  KernelFamily& f = s.family_;
  std::filesystem::path base_dir;  // the spec's folder: where input files are read
  bool embedded = false;           // built-in files: no folder to read from

  void family(const JsonPath& root) {
    f.name = root["name"].string();
    f.backend = root.string_or("backend", dialect.backend);
    if (f.backend != dialect.backend)
      root["backend"].fail("'" + f.backend + "' is not this backend: load the spec with --backend " + f.backend);
    f.description = root.string_or("description", "");
    each_of(root, "key_fields", "a non-empty array of {\"name\", \"numeric\", \"default\", \"choices\"}",
            [&](const JsonPath& kf) {
              KeyField k;
              k.name = kf["name"].string();
              k.numeric = kf.boolean_or("numeric", true);
              if (const auto d = kf.find("default")) k.default_value = spec_text(*d);
              if (const auto c = kf.find("choices"))
                c->for_each_element([&](const JsonPath& v) { k.choices.push_back(spec_text(v)); });
              k.help = kf.string_or("help", "");
              if (f.field(k.name)) kf.fail("duplicate key field '" + k.name + "'");
              f.key_fields.push_back(std::move(k));
            });
    f.bucket_field = detail::key_field_of(root, "bucket_field", f, true);
    detail::read_sharding(root, f);
    f.flops_expr = root.string_or("flops", "");
    f.bytes_expr = root.string_or("bytes", "");

    if (!root.has("space")) root.fail("missing \"space\" (parameters and constraints)");
    f.default_space = root["space"].parse(SearchSpace::from_json);
    if (const auto d = root.find("default_config")) {
      f.default_config = d->parse(Config::from_json);
    } else {
      for (const auto& p : f.default_space.parameters()) f.default_config.set(p.name, p.values.front());
    }
    for (const auto& p : f.default_space.parameters())
      if (!f.default_config.has(p.name)) root["default_config"].fail("has no value for parameter '" + p.name + "'");
  }

  // Kernel Tuner's argument names written into a spec: refused with the spec's spelling, since an
  // ignored "cmem_args" leaves constant memory at zero and every config wrong.
  static void kernel_tuner_keys(const JsonPath& root) {
    static const std::pair<const char*, const char*> hints[] = {
        {"tune_params", "\"space\": {\"parameters\": {...}}"},
        {"restrictions", "\"space\": {\"constraints\": [...]}"},
        {"problem_size", "\"key_fields\" (given per run with --shape)"},
        {"grid_div_x", "a launch's \"grid\": [\"ceil_div(n, block_size_x)\", ...]"},
        {"grid_div_y", "a launch's \"grid\": [..., \"ceil_div(m, block_size_y)\"]"},
        {"block_size_names", "a launch's \"block\": [\"block_size_x\", ...]"},
        {"cmem_args", "\"constant\": \"SYMBOL\" on the input buffer that holds the data"},
        {"smem_args", "a launch's \"shared_bytes\""},
        {"texmem_args", "nothing: texture memory is not supported; read the buffer through __ldg"},
        {"answer", "\"reference\": {\"kind\": \"config\" | \"kernel\" | ...}"},
        {"verify", "\"check\": {\"reduce\": \"sum\", \"count\": ..., \"rtol\": ...} or --atol/--rtol"},
        {"atol", "\"check\": {\"atol\": ...} or --atol"},
        {"kernel_name", "a launch's \"entry\""},
        {"compiler_options", "\"compile\": {\"options\": [...]}"},
        {"iterations", "nothing: ktune samples until --noise-target (see --min-samples, --max-samples)"},
        {"strategy", "nothing in the spec: ktune tune --strategy"},
        {"observers", "nothing: ktune records time, FLOP/s and GB/s"}};
    for (const auto& [key, hint] : hints)
      if (root.has(key))
        root[key].fail(std::string("is Kernel Tuner's; a spec says it as ") + hint +
                       " (docs/coming-from-kernel-tuner.md)");
  }

  void source(const JsonPath& root, const std::filesystem::path& base_dir,
              const std::map<std::string, std::string>* files) {
    const JsonPath src = root["source"];
    s.source_file_ = base_dir / src.string();
    if (files) {
      const auto it = files->find(src.string());
      if (it == files->end()) src.fail("no embedded file named " + src.string());
      s.source_ = it->second;
    } else {
      const std::filesystem::path file = detail::spec_file(src, base_dir);
      try {
        s.source_ = read_text_file(file, "kernel source");
      } catch (const InputError& e) {
        src.fail(e.what());
      }
    }
    s.headers_ = detail::read_headers(src, s.source_, base_dir, files);
  }

  void compile(const JsonPath& c) {
    c.object();
    if (const auto o = c.find("options"))
      o->for_each_element([&](const JsonPath& v) { s.options_.push_back(spec_text(v)); });
    s.params_as_defines_ = c.boolean_or("params_as_defines", true);
    if (const auto defines = c.find("defines"))
      defines->for_each_member([&](const std::string& name, const JsonPath& v) {
        SpecDefine d;
        d.name = name;
        if (v.json().is_object()) {
          d.field = v["field"].string();
          const KeyField* k = f.field(d.field);
          if (!k || k->numeric) v["field"].fail("'" + d.field + "' is not a text key field");
          if (!v.has("map")) v.fail("missing \"map\": {field value: define value}");
          v["map"].for_each_member([&](const std::string& from, const JsonPath& to) { d.map[from] = spec_text(to); });
          for (const auto& choice : k->choices)
            if (!d.map.count(choice)) v["map"].fail("has no entry for " + d.field + "=" + choice);
        } else {
          d.expr = spec_text(v);
        }
        s.defines_.push_back(std::move(d));
      });
  }

  void argument(const JsonPath& a) {
    SpecArgument arg;
    arg.name = a["name"].string();
    if (s.argument(arg.name)) a.fail("duplicate argument '" + arg.name + "'");
    if (a.has("buffer")) {
      arg.dtype = a["buffer"].string();
      if (!a.has("count")) a.fail("buffer '" + arg.name + "' needs \"count\" (an element count expression)");
      arg.count = spec_text(a["count"]);
    } else if (a.has("scalar")) {
      arg.kind = SpecArgument::Kind::Scalar;
      arg.dtype = a["scalar"].string();
      if (!a.has("value")) a.fail("scalar '" + arg.name + "' needs \"value\" (an expression)");
      arg.value = spec_text(a["value"]);
    } else if (a.has("tensor_map")) {
      if (!dialect.tensor_maps) a["tensor_map"].fail("the " + dialect.backend + " backend has no tensor maps");
      tensor_map(a, arg);
    } else {
      a.fail("argument '" + arg.name + "' needs \"buffer\": dtype, \"scalar\": dtype or \"tensor_map\": buffer");
    }
    if (arg.dtype.find("${") == std::string::npos) {
      try {
        elem_type_from_string(arg.dtype);
      } catch (const InputError& e) {
        a.fail(e.what());
      }
    }
    const std::string role = a.string_or("role", "input");
    if (role == "input")
      arg.role = ArgRole::Input;
    else if (role == "output")
      arg.role = ArgRole::Output;
    else if (role == "workspace")
      arg.role = ArgRole::Workspace;
    else
      a["role"].fail("'" + role + "' is not input, output or workspace");
    if (arg.role == ArgRole::Output)
      output_init(a, arg);
    else if (const auto in = a.find("init"))
      init(*in, arg);
    else if (arg.is_buffer() && arg.role == ArgRole::Input)
      arg.init.kind = ArgInit::Kind::Uniform;  // inputs are random unless said otherwise: zeros hide bugs
    if (arg.role != ArgRole::Input && !arg.is_buffer()) a.fail("only a buffer can be an output or a workspace");
    if (arg.init.generated_index()) detail::check_index_buffer(a, arg);
    if (const auto c = a.find("constant")) {
      if (!arg.is_buffer() || arg.role != ArgRole::Input)
        c->fail("only an input buffer fills a __constant__ symbol (its generated data is copied there)");
      arg.constant = c->string();
      for (const auto& other : s.args_)
        if (other.constant == arg.constant)
          c->fail("'" + arg.constant + "' is already filled by argument '" + other.name + "'");
    }
    s.args_.push_back(std::move(arg));
  }

  void tensor_map(const JsonPath& a, SpecArgument& arg) {
    arg.kind = SpecArgument::Kind::TensorMap;
    arg.tensor = a["tensor_map"].string();
    const SpecArgument* of = s.argument(arg.tensor);
    if (!of || !of->is_buffer())
      a["tensor_map"].fail("'" + arg.tensor + "' is not a buffer declared before this argument");
    arg.dtype = of->dtype;
    for (const auto& [key, list] : {std::pair{"dims", &arg.dims}, {"box", &arg.box}}) {
      std::vector<std::string>* out = list;  // clang 14 cannot capture a structured binding
      if (!a.has(key) || !a[key].json().is_array() || a[key].size() == 0 || a[key].size() > 5)
        a.fail(std::string("tensor map '") + arg.name + "' needs \"" + key + "\": 1 to 5 expressions, innermost first");
      a[key].for_each_element([&](const JsonPath& e) { out->push_back(spec_text(e)); });
    }
    if (arg.dims.size() != arg.box.size()) a.fail("tensor map '" + arg.name + "': \"dims\" and \"box\" differ in rank");
    if (const auto sw = a.find("swizzle")) {
      const std::int64_t v = sw->integer();
      if (v != 0 && v != 32 && v != 64 && v != 128)
        sw->fail("expected 0, 32, 64 or 128 (bytes), got " + std::to_string(v));
      arg.swizzle = static_cast<int>(v);
    }
  }

  void init(const JsonPath& in, SpecArgument& arg) const {
    const nlohmann::json& j = in.json();
    if (j == "zero") {
      arg.init.kind = ArgInit::Kind::Zero;
    } else if (j == "none") {
      arg.init.kind = ArgInit::Kind::None;
    } else if (in.has("uniform") && in["uniform"].json().is_array() && in["uniform"].size() == 2) {
      arg.init.kind = ArgInit::Kind::Uniform;
      arg.init.lo = in["uniform"][0].number();
      arg.init.hi = in["uniform"][1].number();
      if (!(arg.init.lo <= arg.init.hi)) in.fail("uniform bounds must be [lo, hi] with lo <= hi");
    } else if (in.has("e4m3") && in["e4m3"].json().is_array() && in["e4m3"].size() == 2) {
      detail::read_e4m3_init(in, arg);
    } else if (in.has("field")) {
      detail::read_field_init(in, arg, f, [&](const JsonPath& one, SpecArgument& a) { init(one, a); });
    } else if (in.has("lengths")) {
      detail::read_lengths_init(in["lengths"], arg.init);
    } else if (in.has("page_table")) {
      detail::read_page_table_init(in["page_table"], arg, s);
    } else if (in.has("routing") || in.has("expert_offsets") || in.has("expert_order")) {
      detail::read_routing_init(in, arg, s);
    } else if (in.has("file")) {
      detail::read_file_init(in, arg, base_dir, embedded);
    } else {
      in.expected(
          "\"zero\", \"none\", {\"uniform\": [lo, hi]}, {\"e4m3\": [lo, hi]}, {\"field\": F, \"map\": {...}}, "
          "{\"lengths\": {\"min\", \"max\"}}, {\"page_table\": {\"lengths\", \"page_size\", \"shuffle\"}}, "
          "{\"routing\": {\"experts\", \"topk\"}}, {\"expert_offsets\": ROUTING}, "
          "{\"expert_order\": {\"routing\", \"index\"}} or {\"file\": \"data.npy\"}");
    }
  }

  // Outputs: poisoned (NaN bytes) before each validation run unless the kernel accumulates.
  static void output_init(const JsonPath& a, SpecArgument& arg) {
    arg.init.kind = ArgInit::Kind::Poison;
    const auto in = a.find("init");
    if (!in) return;
    if (in->json() == "zero")
      arg.init.kind = ArgInit::Kind::Zero;
    else if (in->json() != "poison" && in->json() != "nan")
      in->expected("\"poison\" (NaN bytes, the default) or \"zero\" (for outputs accumulated with atomics)");
  }

  void one_output(const JsonPath& arguments) {
    std::vector<std::string> outputs;
    for (const auto& a : s.args_)
      if (a.role == ArgRole::Output) outputs.push_back(a.name);
    if (outputs.size() != 1)
      arguments.fail("exactly one argument must have \"role\": \"output\" (the one validated), found " +
                     std::to_string(outputs.size()));
    s.output_ = outputs.front();
  }

  void launch(const JsonPath& l) { s.launches_.push_back(read_launch(l)); }

  SpecLaunch read_launch(const JsonPath& l) const {
    SpecLaunch launch;
    launch.entry = l["entry"].string();
    auto dims = [&](const char* key, std::array<std::string, 3>& out) {
      const JsonPath d = l[key];
      if (!d.json().is_array() || d.size() == 0 || d.size() > 3) d.expected("an array of 1 to 3 expressions");
      for (std::size_t k = 0; k < d.size(); ++k) out[k] = spec_text(d[k]);
    };
    for (const char* key : {"grid", "block"})
      if (!l.has(key)) l.fail(std::string("missing \"") + key + "\" (1 to 3 expressions)");
    dims("grid", launch.grid);
    dims("block", launch.block);
    if (l.has("cluster")) {
      dims("cluster", launch.cluster);
      const bool none =
          std::all_of(launch.cluster.begin(), launch.cluster.end(), [](const std::string& c) { return c == "1"; });
      if (!dialect.clusters && !none)
        l["cluster"].fail("the " + dialect.backend +
                          " backend has no thread-block clusters: leave \"cluster\" out (or all ones)");
    }
    if (const auto sb = l.find("shared_bytes")) launch.shared_bytes = spec_text(*sb);
    if (const auto w = l.find("when")) launch.when = spec_text(*w);
    if (!l.has("args")) l.fail("missing \"args\": argument names in parameter order");
    l["args"].for_each_element([&](const JsonPath& a) {
      const std::string name = spec_text(a);
      if (!s.argument(name)) a.fail("'" + name + "' is not a declared argument");
      launch.args.push_back(name);
    });
    if (const auto defines = l.find("defines")) {
      defines->for_each_member(
          [&](const std::string& name, const JsonPath& v) { launch.defines.emplace_back(name, spec_text(v)); });
    }
    return launch;
  }

  void reference(const JsonPath& r) {
    SpecReference& ref = s.reference_;
    ref.kind = r["kind"].string();
    if (const auto kind = dialect.references.find(ref.kind); kind != dialect.references.end()) {
      backend_reference(r, kind->second);
    } else if (ref.kind == "config") {
      if (!r.has("config")) r.fail("kind config needs \"config\": the trusted parameter values");
      ref.config = r["config"].parse(Config::from_json);
    } else if (ref.kind == "kernel") {
      ref.launch = read_launch(r);
      if (!ref.launch.when.empty()) r["when"].fail("a reference kernel always runs: leave \"when\" out");
      ref.output = r.string_or("output", s.output_);
      const SpecArgument* out = s.argument(ref.output);
      if (!out || !out->is_buffer()) r["output"].fail("'" + ref.output + "' is not a declared buffer");
      if (std::find(ref.launch.args.begin(), ref.launch.args.end(), ref.output) == ref.launch.args.end())
        r["args"].fail("the reference kernel must take its output '" + ref.output + "' as an argument");
    } else if (ref.kind != "none") {
      std::string kinds = "none, config, kernel";
      for (const auto& [name, k] : dialect.references) kinds += ", " + name;
      r["kind"].fail("'" + ref.kind + "' is not one of " + kinds + " (the " + dialect.backend + " backend's)");
    }
  }

  void backend_reference(const JsonPath& r, const SpecDialect::ReferenceKind& kind) {
    library_call(r, s.reference_.kind, kind, s.reference_.fields);
  }

  // "baseline": {"kind": a baseline kind of the dialect, "when": an expression, its fields}.
  void baseline(const JsonPath& b) {
    SpecBaseline& base = s.baseline_;
    base.kind = b["kind"].string();
    const auto kind = dialect.baselines.find(base.kind);
    if (kind == dialect.baselines.end()) {
      std::string kinds;
      for (const auto& [name, k] : dialect.baselines) kinds += (kinds.empty() ? "" : ", ") + name;
      b["kind"].fail("'" + base.kind + "' is not a baseline of the " + dialect.backend + " backend" +
                     (kinds.empty() ? " (it has none)" : " (it has " + kinds + ")"));
    }
    base.when = b.string_or("when", "");
    library_call(b, base.kind, kind->second, base.fields);
  }

  // The fields of a library call of kind `name` (a reference or a baseline) into `fields`:
  // every member but "kind" and "when".
  void library_call(const JsonPath& r, const std::string& name, const SpecDialect::ReferenceKind& kind,
                    std::map<std::string, std::string>& fields) {
    for (const auto* keys : {&kind.arguments, &kind.expressions})
      for (const auto& key : *keys)
        if (!r.has(key)) r.fail(name + " needs \"" + key + "\"");
    r.for_each_member([&](const std::string& k, const JsonPath& v) {
      if (k != "kind" && k != "when") fields[k] = spec_text(v);
    });
    for (const auto* keys : {&kind.arguments, &kind.optional_arguments})
      for (const auto& key : *keys) {
        const auto it = fields.find(key);
        if (it != fields.end() && !s.argument(it->second))
          r[key].fail("'" + it->second + "' is not a declared argument");
      }
    for (const auto& [key, allowed] : kind.choices) {
      const auto it = fields.find(key);
      if (it == fields.end()) continue;
      if (std::find(allowed.begin(), allowed.end(), it->second) == allowed.end()) {
        std::string list;
        for (const auto& v : allowed) list += (list.empty() ? "\"" : ", \"") + v + "\"";
        r[key].fail("expected one of " + list);
      }
    }
  }

  void check(const JsonPath& c) {
    SpecCheck& k = s.check_;
    c.object();
    const std::string reduce = c.string_or("reduce", "none");
    if (reduce == "sum")
      k.reduce = SpecCheck::Reduce::Sum;
    else if (reduce == "max")
      k.reduce = SpecCheck::Reduce::Max;
    else if (reduce != "none")
      c["reduce"].fail("'" + reduce + "' is not sum, max or none");
    if (const auto n = c.find("count")) {
      if (k.reduce == SpecCheck::Reduce::None) n->fail("a count needs \"reduce\": \"sum\" or \"max\"");
      k.count = spec_text(*n);
    }
    if (const auto v = c.find("atol")) k.atol = v->number();
    if (const auto v = c.find("rtol")) k.rtol = v->number();
    detail::read_check_scope(c, k, s);
  }

  // An output whose size depends on the config cannot be compared element by element with one
  // reference: each config writes its own number of partial results.
  void output_size(const JsonPath& root) const {
    const SpecArgument& out = *s.argument(s.output_);
    for (const auto& v : Expression(out.count).variables())
      if (f.default_space.find(v) && s.check_.reduce == SpecCheck::Reduce::None)
        root.fail("the output '" + out.name + "' has a count that reads parameter '" + v +
                  "': configs write different numbers of elements, so compare one number from each: add "
                  "\"check\": {\"reduce\": \"sum\" or \"max\", \"count\": \"" +
                  out.count + "\"}");
  }
};

KernelSpec KernelSpec::load(const std::filesystem::path& file, const SpecDialect& dialect) {
  // The origin is the path alone: it is also the family's `source`, shown where the family is listed.
  return from_json(read_json_file(file, "kernel spec"), file.parent_path(), dialect, file.string());
}

KernelSpec KernelSpec::from_json(const nlohmann::json& j, const std::filesystem::path& base_dir,
                                 const SpecDialect& dialect, const std::string& origin,
                                 const std::map<std::string, std::string>* files) {
  KernelSpec s;
  s.family_.source = origin;
  s.shared_memory_limit_ = dialect.shared_memory_limit;
  KernelSpecReader read{s, dialect};
  read.base_dir = base_dir;
  read.embedded = files != nullptr;
  const JsonPath root(j);
  try {
    root.object();
    read.kernel_tuner_keys(root);
    read.family(root);
    read.source(root, base_dir, files);
    if (const auto c = root.find("compile")) read.compile(*c);
    each_of(root, "arguments", "a non-empty array of buffers and scalars",
            [&](const JsonPath& a) { read.argument(a); });
    read.one_output(root["arguments"]);
    for (const auto& a : s.arguments())
      if (a.init.kind == ArgInit::Kind::Routing) s.family_.workload_rules_since = kMoeRoutingRules;
    each_of(root, "launches", "a non-empty array of {entry, grid, block, cluster, shared_bytes, args, when}",
            [&](const JsonPath& l) { read.launch(l); });
    if (const auto r = root.find("reference")) read.reference(*r);
    if (const auto b = root.find("baseline")) read.baseline(*b);
    if (const auto c = root.find("check")) read.check(*c);
    detail::check_spec_expressions(s, dialect);
    read.output_size(root);
    detail::add_derived_limits(s, dialect);
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
  return s;
}

}  // namespace ktune
