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
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_flat.h"
#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune::detail {

template <class J>
class BasicJsonPath {
  static constexpr bool kFlat = std::is_same_v<J, FlatNode>;

 public:
  // `label` names `j` in errors; the path below it is rendered only for an error, by finding
  // the value in `j` again: a path string per member read cost more than the values (a registry of
  // 100,000 entries reads millions of them).
  explicit BasicJsonPath(const J& j, std::string label = {}) : root_(&j), j_(&j), label_(std::move(label)) {}

  const J& json() const { return *j_; }
  std::string path() const {
    std::string p = label_;
    if (j_ != root_) locate(*root_, p);
    return p;
  }

  [[noreturn]] void fail(const std::string& what) const {
    const std::string p = path();
    throw InputError(p.empty() ? what : p + ": " + what);
  }

  bool has(const std::string& key) const { return j_->is_object() && member(key); }

  // A required member.
  BasicJsonPath operator[](const std::string& key) const {
    object();
    const J* m = member(key);
    if (!m) fail("missing field \"" + key + "\"");
    return child(*m);
  }
  // An optional member of an object.
  std::optional<BasicJsonPath> find(const std::string& key) const {
    if (!j_->is_object()) return std::nullopt;
    const J* m = member(key);
    if (!m) return std::nullopt;
    return child(*m);
  }
  BasicJsonPath operator[](std::size_t i) const {
    if constexpr (kFlat) {
      const J* at = nullptr;
      std::size_t n = 0;
      array().each_child([&](const J& x) {
        if (n++ == i) at = &x;
      });
      if (!at) throw std::out_of_range("array index " + std::to_string(i) + " is out of range");
      return child(*at);
    } else {
      return child(array().at(i));
    }
  }
  // Calls f(key, BasicJsonPath) for each member of an object.
  template <class F>
  void for_each_member(F&& f) const {
    each_member(object(), [&](std::string_view k, const J& v) { f(std::string(k), child(v)); });
  }
  // Calls f(BasicJsonPath) for each element of an array.
  template <class F>
  void for_each_element(F&& f) const {
    if constexpr (kFlat)
      array().each_child([&](const J& x) { f(child(x)); });
    else
      for (const auto& x : array()) f(child(x));
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
    for_each_element([&](const BasicJsonPath& x) { out.push_back(x.number()); });
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

  // `path` and the step to a member `key` below it, as errors write it: stats.latency_median_ns,
  // entries.gemm["M=16,N=8"].
  static void append_key(std::string& path, std::string_view key) {
    if (is_identifier(key)) {
      if (!path.empty()) path += '.';
      path += key;
    } else {
      path += "[" + json_excerpt(nlohmann::json(key)) + "]";
    }
  }

 private:
  BasicJsonPath(const BasicJsonPath& parent, const J& j) : root_(parent.root_), j_(&j), label_(parent.label_) {}
  BasicJsonPath child(const J& j) const { return BasicJsonPath(*this, j); }

  const J* member(const std::string& key) const {
    if constexpr (kFlat) {
      return j_->member(key);
    } else {
      const auto it = j_->find(key);
      return it == j_->end() ? nullptr : &*it;
    }
  }

  // Appends to `p` the steps from `at` down to this value; false if it is not below `at`.
  bool locate(const J& at, std::string& p) const {
    if (&at == j_) return true;
    const std::size_t mark = p.size();
    const auto below = [&](const J& x, std::string_view key, std::size_t i) {
      if (at.is_object())
        append_key(p, key);
      else
        p += "[" + std::to_string(i) + "]";
      if (locate(x, p)) return true;
      p.resize(mark);
      return false;
    };
    bool found = false;
    std::size_t i = 0;
    if constexpr (kFlat) {
      at.each_child([&](const J& x) { found = found || below(x, x.key(), i++); });
    } else if (at.is_object()) {
      for (auto it = at.begin(); it != at.end() && !found; ++it) found = below(it.value(), it.key(), 0);
    } else if (at.is_array()) {
      for (; i < at.size() && !found; ++i) found = below(at[i], {}, i);
    }
    return found;
  }

  static bool is_identifier(std::string_view s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  const J* root_;  // where the path starts: named by label_
  const J* j_;
  std::string label_;
};

using JsonPath = BasicJsonPath<nlohmann::json>;

}  // namespace ktune::detail
