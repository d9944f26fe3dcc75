#pragma once
// The parser's reading of data a user supplies and of what a check covers: an input's
// "init": {"file": ...} (format in kernel_spec.h) and "check"'s "region" and
// "ignore_unwritten". Internal to the parser.
#include <filesystem>

#include "json_path.h"
#include "ktune/kernel_spec.h"

namespace ktune::detail {

// `at` (a path relative to the spec's folder `base_dir`) resolved, symlinks and ".." followed;
// refused outside that folder unless source_outside_spec_allowed(), before anything reads it.
std::filesystem::path spec_file(const JsonPath& at, const std::filesystem::path& base_dir);

// {"file": "x.npy"} or {"file": "x.bin", "dtype": "f32"}; `embedded`: the spec's files are built
// in, so it has no folder to read from. A .npy header is read now, so a wrong dtype or order fails
// at load; its count is checked per problem.
void read_file_init(const JsonPath& in, SpecArgument& arg, const std::filesystem::path& base_dir, bool embedded);

// "region" and "ignore_unwritten" of `c` into `k`; `s` holds the arguments and the reference.
void read_check_scope(const JsonPath& c, SpecCheck& k, const KernelSpec& s);

}  // namespace ktune::detail
