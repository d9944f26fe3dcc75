#pragma once
// Typed reads from parsed JSON whose errors name the JSON path of the culprit, so a mistake in a
// hand-edited file points at the spot: entries.gemm["M=16,N=8"].stats.latency_median_ns.
// Private to the core's file formats (run store, registry, search space, kernel spec). Values
// are quoted in errors by a short excerpt, never dumped whole.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune::detail {

template <class J>
class BasicJsonPath {
 public:
  explicit BasicJsonPath(const J& j, std::string path = {}) : j_(&j), path_(std::move(path)) {}

  const J& json() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_.empty() ? what : path_ + ": " + what);
  }

  bool has(const std::string& key) const { return j_->is_object() && j_->contains(key); }

  // A required member.
  BasicJsonPath operator[](const std::string& key) const {
    object();
    const auto it = j_->find(key);
    if (it == j_->end()) fail("missing field \"" + key + "\"");
    return BasicJsonPath(*it, child_path(key));
  }
  // An optional member of an object.
  std::optional<BasicJsonPath> find(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return (*this)[key];
  }
  BasicJsonPath operator[](std::size_t i) const {
    return BasicJsonPath(array().at(i), path_ + "[" + std::to_string(i) + "]");
  }
  // Calls f(key, BasicJsonPath) for each member of an object.
  template <class F>
  void for_each_member(F&& f) const {
    for (auto it = object().begin(); it != j_->end(); ++it)
      f(it.key(), BasicJsonPath(it.value(), child_path(it.key())));
  }
  // Calls f(BasicJsonPath) for each element of an array.
  template <class F>
  void for_each_element(F&& f) const {
    for (std::size_t i = 0; i < size(); ++i) f((*this)[i]);
  }
  std::string child_path(const std::string& key) const {
    if (is_identifier(key)) return path_.empty() ? key : path_ + "." + key;
    return path_ + "[" + json_excerpt(nlohmann::json(key)) + "]";
  }

  const J& object() const {
    if (!j_->is_object()) expected("an object");
    return *j_;
  }
  const J& array() const {
    if (!j_->is_array()) expected("an array");
    return *j_;
  }
  std::size_t size() const { return array().size(); }
  double number() const {
    if (!j_->is_number()) expected("a number");
    return j_->template get<double>();
  }
  double positive_number() const {
    const double v = number();
    if (!(v > 0) || !std::isfinite(v)) expected("a positive number");
    return v;
  }
  double non_negative_number() const {
    const double v = number();
    if (!(v >= 0) || !std::isfinite(v)) expected("a non-negative number");
    return v;
  }
  std::int64_t integer() const {
    if (!j_->is_number_integer() ||
        (j_->is_number_unsigned() &&
         j_->template get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
      expected("an integer");
    return j_->template get<std::int64_t>();
  }
  std::uint64_t unsigned_integer() const {
    if (!j_->is_number_unsigned() && !(j_->is_number_integer() && j_->template get<std::int64_t>() >= 0))
      expected("a non-negative integer");
    return j_->template get<std::uint64_t>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) expected("true or false");
    return j_->template get<bool>();
  }
  std::string string() const {
    if (!j_->is_string()) expected("a string");
    return j_->template get<std::string>();
  }
  std::vector<double> numbers() const {
    std::vector<double> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); ++i) out.push_back((*this)[i].number());
    return out;
  }
  std::string string_or(const std::string& key, std::string fallback) const {
    const auto m = find(key);
    return m ? m->string() : std::move(fallback);
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    const auto m = find(key);
    return m ? m->boolean() : fallback;
  }

  // Runs a parser of another core type (Config::from_json, ...), naming this path in its errors.
  template <class F>
  auto parse(F&& parser) const {
    try {
      return parser(*j_);
    } catch (const InputError& e) {
      fail(e.what());
    } catch (const nlohmann::json::exception& e) {
      fail(e.what());
    }
  }

  [[noreturn]] void expected(const std::string& what) const { fail("expected " + what + ", got " + json_excerpt(*j_)); }

 private:
  static bool is_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  const J* j_;
  std::string path_;
};

using JsonPath = BasicJsonPath<nlohmann::json>;

}  // namespace ktune::detail
