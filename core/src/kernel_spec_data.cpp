#include "kernel_spec_data.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernel_spec_index.h"
#include "ktune/array_file.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/host_data.h"

namespace ktune {

namespace {

// The names `text` includes in quotes (`#include "x.cuh"`); <...> includes are the compiler's.
// Read line by line without a preprocessor: an include in a block comment or an #if'd-out branch
// still counts, which costs a header read for nothing, or a refusal that names it.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t line = 0; line < text.size();) {
    const std::size_t end = std::min(text.find('\n', line), text.size());
    std::size_t i = text.find_first_not_of(" \t", line);
    if (i < end && text[i] == '#') {
      i = text.find_first_not_of(" \t", i + 1);
      if (i < end && text.compare(i, 7, "include") == 0) {
        i = text.find_first_not_of(" \t", i + 7);
        const std::size_t close = i < end && text[i] == '"' ? text.find('"', i + 1) : std::string::npos;
        if (close < end && close > i + 1) out.push_back(text.substr(i + 1, close - i - 1));
      }
    }
    line = end + 1;
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> detail::read_headers(const JsonPath& src, const std::string& source,
                                                        const std::filesystem::path& base_dir,
                                                        const std::map<std::string, std::string>* files) {
  std::map<std::string, std::string> headers;
  // (includer, name) pairs still to look at; a header's own includes join when it is read.
  std::vector<std::pair<std::string, std::string>> todo;
  const auto queue = [&](const std::string& includer, const std::string& text) {
    for (auto& name : quoted_includes(text)) todo.emplace_back(includer, std::move(name));
  };
  queue(src.string(), source);
  while (!todo.empty()) {
    const auto [includer, name] = std::move(todo.back());
    todo.pop_back();
    if (headers.count(name)) continue;
    std::string text;
    if (files) {
      const auto it = files->find(name);
      if (it == files->end()) continue;
      text = it->second;
    } else {
      const std::string what = includer + ": #include \"" + name + "\"";
      const std::filesystem::path file = spec_file(src, name, what, base_dir);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) continue;  // not the spec's: a toolkit header, say
      try {
        text = read_text_file(file, "kernel header");
      } catch (const InputError& e) {
        src.fail(what + ": " + e.what());
      }
    }
    queue(name, text);
    headers.emplace(name, std::move(text));
  }
  return headers;
}

void detail::read_file_init(const JsonPath& in, SpecArgument& arg, const std::filesystem::path& base_dir,
                            bool embedded) {
  in.for_each_member([&](const std::string& k, const JsonPath& v) {
    if (k != "file" && k != "dtype") v.fail("unknown key: expected \"file\" or \"dtype\"");
  });
  const JsonPath f = in["file"];
  if (embedded) f.fail("a built-in spec has no folder to read \"" + f.string() + "\" from");
  if (arg.role != ArgRole::Input || !arg.is_buffer()) f.fail("only an input buffer is read from a file");
  arg.init.kind = ArgInit::Kind::File;
  arg.init.file = spec_file(f, base_dir);
  const bool npy = arg.init.file.extension() == ".npy";
  if (const auto d = in.find("dtype")) {
    if (npy) d->fail("a .npy file says its own dtype: leave \"dtype\" out");
    arg.init.file_dtype = d->string();
    try {
      elem_type_from_string(arg.init.file_dtype);
    } catch (const InputError& e) {
      d->fail(e.what());
    }
  } else if (!npy) {
    in.fail("\"" + f.string() +
            "\" is read as raw binary: say its element type, \"dtype\": \"f32\" (or save it as .npy)");
  }
  try {
    if (npy) {
      const NpyHeader h = read_npy_header(arg.init.file);
      if (arg.dtype.find("${") == std::string::npos && h.type != elem_type_from_string(arg.dtype))
        throw InputError(arg.init.file.string() + ": holds " + to_string(h.type) + " elements, the argument '" +
                         arg.name + "' is " + arg.dtype + ": save it as " + arg.dtype);
    } else if (!std::filesystem::is_regular_file(arg.init.file)) {
      throw InputError(arg.init.file.string() + ": no such file: run the script that writes it first");
    }
  } catch (const InputError& e) {
    f.fail(e.what());
  }
}

void detail::read_e4m3_init(const JsonPath& in, SpecArgument& arg) {
  arg.init.kind = ArgInit::Kind::E4m3;
  arg.init.lo = in["e4m3"][0].number();
  arg.init.hi = in["e4m3"][1].number();
  if (!(-448 <= arg.init.lo && arg.init.lo <= arg.init.hi && arg.init.hi <= 448))
    in.fail("e4m3 bounds must be [lo, hi] with -448 <= lo <= hi <= 448 (e4m3's finite range)");
  if (arg.dtype.find("${") == std::string::npos && arg.dtype != "u8" && arg.dtype != "i8")
    in.fail("an e4m3 init fills 8-bit codes: declare '" + arg.name + "' as a \"u8\" or \"i8\" buffer, not \"" +
            arg.dtype + "\"");
}

void detail::read_field_init(const JsonPath& in, SpecArgument& arg, const KernelFamily& f,
                             const std::function<void(const JsonPath&, SpecArgument&)>& read_one) {
  in.for_each_member([&](const std::string& k, const JsonPath& v) {
    if (k != "field" && k != "map") v.fail("unknown key: expected \"field\" and \"map\"");
  });
  if (arg.role != ArgRole::Input || !arg.is_buffer())
    in.fail("only an input buffer's init is chosen by a key field ('" + arg.name + "' is not one)");
  arg.init_field = in["field"].string();
  const KeyField* k = f.field(arg.init_field);
  if (!k || k->numeric) in["field"].fail("'" + arg.init_field + "' is not a text key field");
  if (!in.has("map") || !in["map"].json().is_object() || in["map"].json().empty())
    in.fail("missing \"map\": {\"" + arg.init_field + "\" value: init}");
  in["map"].for_each_member([&](const std::string& value, const JsonPath& v) {
    if (!k->choices.empty() && std::find(k->choices.begin(), k->choices.end(), value) == k->choices.end())
      v.fail("'" + value + "' is not a choice of " + arg.init_field);
    const nlohmann::json& j = v.json();
    const bool drawn = j == "zero" || (j.is_object() && j.size() == 1 && (v.has("uniform") || v.has("e4m3")));
    if (!drawn)
      v.expected("\"zero\", {\"uniform\": [lo, hi]} or {\"e4m3\": [lo, hi]} (a key field chooses among drawn data)");
    SpecArgument one = arg;  // the entry is checked against the argument's name and type
    one.init = ArgInit{};
    read_one(v, one);
    arg.init_by_value[value] = one.init;
  });
  for (const auto& choice : k->choices)
    if (!arg.init_by_value.count(choice)) in["map"].fail("has no entry for " + arg.init_field + "=" + choice);
}

void detail::read_check_scope(const JsonPath& c, SpecCheck& k, const KernelSpec& s) {
  const bool reduced = k.reduce != SpecCheck::Reduce::None;
  if (const auto r = c.find("region")) {
    if (reduced) r->fail("a reduced check compares one number: a region goes with element-by-element checks");
    SpecCheck::Region region;
    for (const auto& [key, list] : {std::pair{"dims", &region.dims}, {"begin", &region.begin}, {"end", &region.end}}) {
      std::vector<std::string>* out = list;  // clang 14 cannot capture a structured binding
      if (!r->has(key) || !(*r)[key].json().is_array() || (*r)[key].size() == 0)
        r->fail(std::string("needs \"") + key + "\": one expression per dim, innermost first");
      (*r)[key].for_each_element([&](const JsonPath& e) { out->push_back(spec_text(e)); });
    }
    if (region.begin.size() != region.dims.size() || region.end.size() != region.dims.size())
      r->fail("\"dims\", \"begin\" and \"end\" must have one entry per dim each");
    k.region = std::move(region);
  }
  k.ignore_unwritten = c.boolean_or("ignore_unwritten", false);
  if (!k.ignore_unwritten) return;
  const JsonPath at = c["ignore_unwritten"];
  if (reduced) at.fail("a reduced check compares one number: unwritten elements go with element-by-element checks");
  const std::string& kind = s.reference().kind;
  if (kind != "config" && kind != "kernel")
    at.fail("needs a reference of kind \"config\" or \"kernel\", whose unwritten elements it skips (this one is \"" +
            kind + "\")");
  if (s.output().init.kind != ArgInit::Kind::Poison)
    at.fail("needs the output poisoned (its default \"init\"): a zeroed output cannot tell unwritten elements");
}

std::vector<std::uint8_t> KernelSpec::region_elements(const Problem& p, std::size_t count,
                                                      const Variables& device) const {
  if (!check_.region) return {};
  const Config& c = family_.default_config;
  const Variables vars = variables(p, c, device);
  const auto& r = *check_.region;
  std::vector<std::uint64_t> dims, begin, end;
  for (const auto& [exprs, out] : {std::pair{&r.dims, &dims}, {&r.begin, &begin}, {&r.end, &end}})
    for (const auto& e : *exprs) {
      const double v = Expression(substitute(e, p, c)).eval(vars);
      if (!(v >= 0) || v != std::floor(v))
        throw InputError(family_.source + ": check.region \"" + e + "\" is " + std::to_string(v) + " for " + p.key() +
                         ", expected a non-negative integer");
      out->push_back(static_cast<std::uint64_t>(v));
    }
  try {
    return region_mask(dims, begin, end, count);
  } catch (const InputError& e) {
    throw InputError(family_.source + ": check.region for " + p.key() + ": " + e.what());
  }
}

}  // namespace ktune
