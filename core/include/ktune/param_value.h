#pragma once
// ParamValue: one value of a search-space parameter: an integer (tile sizes, stages), a boolean
// (permute_x) or a string (cache_modifier ".cg"). Users see the value itself everywhere (space
// files, trials.csv, results, the registry, CLI output); expressions see a number: integers as
// themselves, booleans as 1/0, strings as a code that only == and != compare meaningfully.
#include <compare>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

class ParamValue {
 public:
  enum class Kind { Int, Bool, String };

  ParamValue() = default;
  template <std::integral T>
  requires(!std::same_as<T, bool>) ParamValue(T v) : v_(static_cast<std::int64_t>(v)) {}
  ParamValue(bool b) : v_(b) {}
  ParamValue(std::string s) : v_(std::move(s)) {}
  ParamValue(const char* s) : v_(std::string(s)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_string() const { return kind() == Kind::String; }

  // Integers as themselves, booleans as 0/1; a string is an InputError naming `what` (the
  // parameter), since no size or count can be read from it.
  std::int64_t as_int(std::string_view what = "a parameter") const;
  const std::string& as_string() const;  // only for strings (throws InputError otherwise)
  // The number expressions see: integers, booleans 1/0, strings string_code(text).
  double number() const;

  // As written in keys, trials.csv and CLI output: "64", "true", ".cg"; the empty string is `""`.
  std::string text() const;
  // The inverse of text(): an integer, true/false, `""`, else the string itself.
  static ParamValue parse(std::string_view text);

  nlohmann::json to_json() const;
  // An integer, a boolean or a string; anything else is an InputError naming `what`.
  static ParamValue from_json(const nlohmann::json& j, const std::string& what);

  friend bool operator==(const ParamValue&, const ParamValue&) = default;
  friend std::strong_ordering operator<=>(const ParamValue& a, const ParamValue& b) { return a.v_ <=> b.v_; }

 private:
  std::variant<std::int64_t, bool, std::string> v_;
};

const char* to_string(ParamValue::Kind k);  // "integer", "boolean", "string"

// Why `s` cannot be a string candidate (it would read back as another value or break a key), or
// empty when it can: no ',', '=', quotes, backslashes or control characters, and not spelled
// like an integer or a boolean.
std::string string_value_problem(const std::string& s);

// The number a string stands for in expressions: equal strings give equal codes, different ones
// different codes, far outside the sizes parameters hold (large negative numbers).
double string_code(const std::string& s);

}  // namespace ktune
