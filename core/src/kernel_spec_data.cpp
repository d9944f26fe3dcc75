#include "kernel_spec_data.h"

#include <cmath>

#include "kernel_spec_index.h"
#include "ktune/array_file.h"
#include "ktune/error.h"
#include "ktune/host_data.h"

namespace ktune {

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
