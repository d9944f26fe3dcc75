#pragma once
// KernelFamily: a tunable kernel as one backend implements it. The problem key, FLOP/byte
// counts and lookup rules are shared by every backend's version of a family; the default
// search space is the backend's own (CPU cache blocking vs GPU tiles).
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/search_space.h"

namespace ktune {

struct Problem;

struct KeyField {
  std::string name;                  // "M", "dtype", "batch"
  bool numeric = true;               // sizes are numeric; dtypes are text
  std::string default_value;         // used when a --shape leaves the field out ("" = required)
  std::vector<std::string> choices;  // allowed values for text fields (empty = any)
  std::string help;
};

struct KernelFamily {
  std::string name;          // "gemm", "qmatmul"
  std::string backend;       // "cpu", "cuda", ...
  std::string description;
  std::vector<KeyField> key_fields;
  std::string bucket_field;  // registry lookup rounds this field up to a power of two ("M", "batch")
  std::string tp_out_field;  // divided by tp_size when --tp-split-dim out (column parallel)
  std::string tp_in_field;   // divided by tp_size when --tp-split-dim in (row parallel)
  std::string flops_expr;    // over numeric key fields, e.g. "2*M*N*K"
  std::string bytes_expr;    // minimum traffic, for GB/s and the roofline
  SearchSpace default_space;
  Config default_config;     // what serving code uses when the registry has no entry
  std::string source;        // where the family came from: "built-in" or a spec file path

  const KeyField* field(const std::string& name) const;
  double flops(const Problem& p) const;  // evaluates flops_expr
  double bytes(const Problem& p) const;
  // Variables for expressions: every numeric key field of the problem, and each text key field
  // as the string_code of its value (constraints compare `pass == "dW"` as string parameters).
  Variables variables(const Problem& p) const;
  // Throws InputError when a user's `space` (--space FILE) names a parameter this family does
  // not have, or lacks one it has: every config of such a space would fail to build, so the CLI
  // refuses it before anything is measured (space, tune --dry-run and tune alike).
  void check_space(const SearchSpace& space) const;
};

}  // namespace ktune
