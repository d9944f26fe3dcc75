#pragma once
// KernelFamily: a tunable kernel as one backend implements it. The problem key, FLOP/byte
// counts and lookup rules are shared by every backend's version of a family; the default
// search space is the backend's own (CPU cache blocking vs GPU tiles).
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/problem.h"
#include "ktune/search_space.h"

namespace ktune {

struct KeyField {
  std::string name;                  // "M", "dtype", "batch"
  bool numeric = true;               // sizes are numeric; dtypes are text
  std::string default_value;         // used when a --shape leaves the field out ("" = required)
  std::vector<std::string> choices;  // allowed values for text fields (empty = any)
  std::string help;
};

// A key field that --tp-size divides. A head count that must stay whole on every rank
// (attention's kv heads) is `at_least_one`: divided while there are at least as many as ranks,
// replicated (one per rank) when there are fewer; either count must then divide the other.
struct TpField {
  std::string name;
  bool at_least_one = false;
  // The per-rank value of `global` on `tp_size` ranks; InputError when it does not divide.
  std::int64_t local(std::int64_t global, int tp_size) const;
};

// One way a family shards under tensor parallelism: --tp-split-dim `dim` divides `fields`
// (gemm: out divides N, in divides K; attention: heads divides q heads and kv heads).
struct TpSplit {
  TpSplitDim dim = TpSplitDim::None;
  std::vector<TpField> fields;
};

struct KernelFamily {
  std::string name;     // "gemm", "qmatmul"
  std::string backend;  // "cpu", "cuda", ...
  std::string description;
  std::vector<KeyField> key_fields;
  std::string bucket_field;        // registry lookup rounds this field up to a power of two ("M", "batch")
  std::vector<TpSplit> tp_splits;  // empty: --tp-size does not apply
  // Rules every problem's key must satisfy (expressions over the key fields), checked when a
  // shape is expanded so a shape no kernel can run is an InputError naming the rule, before any
  // space is pruned: attention's "mod(num_q_heads, num_kv_heads) == 0".
  std::vector<Constraint> shape_rules;
  std::string flops_expr;  // over numeric key fields, e.g. "2*M*N*K"
  std::string bytes_expr;  // minimum traffic, for GB/s and the roofline
  SearchSpace default_space;
  // Constraints every space of the family must hold, not only the default one: a spec's launch
  // limits (threads and shared memory per block on the device, thread-block clusters), derived
  // from its launches.
  std::vector<Constraint> launch_limits;
  Config default_config;  // what serving code uses when the registry has no entry
  std::string source;     // where the family came from: "built-in" or a spec file path
  // The version of the workload rules (workload_rules.h) in which the inputs of this family's
  // problems last changed: a run made under older rules measured other inputs, so it is not
  // resumed under this ktune's. 1: unchanged since runs began to record the rules.
  int workload_rules_since = 1;

  const KeyField* field(const std::string& name) const;
  const TpSplit* tp_split(TpSplitDim dim) const;  // nullptr when the family has no such split
  // The split --tp-split-dim `dim` asks for; None picks the family's only split when it has
  // exactly one (attention shards its heads, nothing else). InputError naming the choices else.
  const TpSplit& resolve_tp_split(TpSplitDim dim) const;
  double flops(const Problem& p) const;  // evaluates flops_expr
  double bytes(const Problem& p) const;
  // Throws InputError naming the problem, its fields and the rule's description when it breaks one.
  void check_shape(const Problem& p) const;
  // Variables for expressions: every numeric key field of the problem, and each text key field
  // as the string_code of its value (constraints compare `pass == "dW"` as string parameters).
  Variables variables(const Problem& p) const;
  // Throws InputError when a user's `space` (--space FILE) names a parameter this family does
  // not have, or lacks one it has: every config of such a space would fail to build, so the CLI
  // refuses it before anything is measured (space, tune --dry-run and tune alike).
  void check_space(const SearchSpace& space) const;
  // A user's space checked as check_space does, with the family's launch limits it lacks added:
  // a --space file that copied a spec's constraints still never proposes a config the device
  // cannot launch.
  SearchSpace user_space(const SearchSpace& space) const;
};

}  // namespace ktune
