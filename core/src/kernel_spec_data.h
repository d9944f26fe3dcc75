#pragma once
// The parser's reading of data a user supplies and of what a check covers: an input's
// "init": {"file": ...}, {"e4m3": ...} or {"field": ...} (format in kernel_spec.h) and "check"'s
// "region" and "ignore_unwritten". Internal to the parser.
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "json_path.h"
#include "ktune/kernel_spec.h"

namespace ktune::detail {

// `at` (a path relative to the spec's folder `base_dir`) resolved, symlinks and ".." followed;
// refused outside that folder unless source_outside_spec_allowed(), before anything reads it.
std::filesystem::path spec_file(const JsonPath& at, const std::filesystem::path& base_dir);
// The same for `path`, named `what` in the refusal; errors go through `at`.
std::filesystem::path spec_file(const JsonPath& at, const std::string& path, const std::string& what,
                                const std::filesystem::path& base_dir);

// The headers `source` (the text of `src`'s file) includes by a quoted name, as
// KernelSpec::headers() says: read from `base_dir`, or looked up in `files` (a built-in spec's
// embedded files) when given. Errors go through `src`.
std::map<std::string, std::string> read_headers(const JsonPath& src, const std::string& source,
                                                const std::filesystem::path& base_dir,
                                                const std::map<std::string, std::string>* files);

// {"file": "x.npy"} or {"file": "x.bin", "dtype": "f32"}; `embedded`: the spec's files are built
// in, so it has no folder to read from. A .npy header is read now, so a wrong dtype or order fails
// at load; its count is checked per problem.
void read_file_init(const JsonPath& in, SpecArgument& arg, const std::filesystem::path& base_dir, bool embedded);

// {"e4m3": [lo, hi]}: bounds within e4m3's finite range, an 8-bit buffer (a "${...}" type is
// checked when generated).
void read_e4m3_init(const JsonPath& in, SpecArgument& arg);

// {"field": F, "map": {value: init}}: F a text key field of `f`, an entry for each of its choices
// and none for other values, each "zero", {"uniform"} or {"e4m3"} read by `read_one` (the
// parser's own init reader) with `arg`'s name and type. Into arg.init_field and init_by_value.
void read_field_init(const JsonPath& in, SpecArgument& arg, const KernelFamily& f,
                     const std::function<void(const JsonPath&, SpecArgument&)>& read_one);

// "region" and "ignore_unwritten" of `c` into `k`; `s` holds the arguments and the reference.
void read_check_scope(const JsonPath& c, SpecCheck& k, const KernelSpec& s);

}  // namespace ktune::detail
