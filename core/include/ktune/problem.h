#pragma once
// A Problem is one concrete key of a kernel family: gemm M=16 N=4096 K=4096 dtype=f32.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

struct KernelFamily;

// Tensor-parallel sharding: tuning happens on the local (per-device) shape.
// Out: column parallel (output features), In: row parallel (input features), Heads: attention
// heads (q heads divided, kv heads divided or replicated).
enum class TpSplitDim { None, Out, In, Heads };
std::string to_string(TpSplitDim d);
TpSplitDim tp_split_dim_from_string(const std::string& s);  // "out" | "in" | "heads" | "none"; throws InputError

struct Problem {
  std::string family;
  // Key fields in the family's order; values are text so dtypes fit beside sizes.
  std::vector<std::pair<std::string, std::string>> fields;
  int tp_size = 1;
  TpSplitDim tp_split_dim = TpSplitDim::None;

  const std::string& field(const std::string& name) const;  // throws InputError
  std::int64_t num(const std::string& name) const;          // throws InputError if not an integer
  void set(const std::string& name, std::string value);

  // Run / results key: "M=16,N=4096,K=4096,dtype=f32" plus ",tp=8/out" when sharded.
  std::string key() const;
  // Registry key: the local shape alone, "M=16,N=512,K=4096,dtype=f32" whatever the sharding
  // (tensor-parallel settings are the entry's metadata), so a shape tuned with --tp-size and
  // the same local shape given by hand find each other.
  std::string local_key() const;
  // Parses key() back (family supplied separately). Throws InputError.
  static Problem from_key(const std::string& family, const std::string& key);

  nlohmann::json to_json() const;
  static Problem from_json(const nlohmann::json& j);

  friend bool operator==(const Problem&, const Problem&) = default;
};

// Orders problem keys field by field with numbers as numbers, so M=64 comes before M=256 (as
// text, "256" < "64"); a value's leading integer decides first ("8/out" before "16/in"), then
// the rest as text. Every listing of keys (results, diff, shape pickers) uses this order.
int compare_keys(std::string_view a, std::string_view b);
struct KeyLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return compare_keys(a, b) < 0; }
};

// Most problems one --shape (and one run) may hold: beyond it a plan takes minutes to build.
inline constexpr std::size_t kMaxProblems = 10'000;

// Parses a --shape argument such as "M=1,16,64 N=4096 K=4096" into the product of its lists,
// fills fields the shape leaves out with the family's defaults, rejects unknown fields, and
// applies tp_size / tp_split_dim to turn the global shape into the local one (the family's
// TpSplit for that dim, or its only one when `split` is None; a field that does not divide is an
// InputError). More than kMaxProblems is an InputError, found before
// any problem is built.
std::vector<Problem> expand_shape(const KernelFamily& family, const std::string& shape, int tp_size = 1,
                                  TpSplitDim split = TpSplitDim::None);
// Every --shape of a command, in order.
std::vector<Problem> expand_shapes(const KernelFamily& family, const std::vector<std::string>& shapes, int tp_size = 1,
                                   TpSplitDim split = TpSplitDim::None);

}  // namespace ktune
