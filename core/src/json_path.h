#pragma once
// Typed reads from parsed JSON whose errors name the JSON path of the culprit, so a mistake in a
// hand-edited file points at the spot: entries.gemm["M=16,N=8"].stats.latency_median_ns.
// Private to the core's file formats (run store, registry).
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune::detail {

class JsonPath {
 public:
  explicit JsonPath(const nlohmann::json& j, std::string path = {}) : j_(&j), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_.empty() ? what : path_ + ": " + what);
  }

  bool has(const std::string& key) const { return j_->is_object() && j_->contains(key); }

  // A required member.
  JsonPath operator[](const std::string& key) const {
    object();
    const auto it = j_->find(key);
    if (it == j_->end()) fail("missing field \"" + key + "\"");
    return JsonPath(*it, child_path(key));
  }
  JsonPath operator[](std::size_t i) const {
    return JsonPath(array().at(i), path_ + "[" + std::to_string(i) + "]");
  }
  // Calls f(key, JsonPath) for each member of an object.
  template <class F>
  void for_each_member(F&& f) const {
    for (auto it = object().begin(); it != j_->end(); ++it) f(it.key(), JsonPath(it.value(), child_path(it.key())));
  }
  std::string child_path(const std::string& key) const {
    if (is_identifier(key)) return path_.empty() ? key : path_ + "." + key;
    return path_ + "[" + nlohmann::json(key).dump() + "]";
  }

  const nlohmann::json& object() const {
    if (!j_->is_object()) expected("an object");
    return *j_;
  }
  const nlohmann::json& array() const {
    if (!j_->is_array()) expected("an array");
    return *j_;
  }
  std::size_t size() const { return array().size(); }
  double number() const {
    if (!j_->is_number()) expected("a number");
    return j_->get<double>();
  }
  std::int64_t integer() const {
    if (!j_->is_number_integer()) expected("an integer");
    return j_->get<std::int64_t>();
  }
  std::uint64_t unsigned_integer() const {
    if (!j_->is_number_unsigned() && !(j_->is_number_integer() && j_->get<std::int64_t>() >= 0))
      expected("a non-negative integer");
    return j_->get<std::uint64_t>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) expected("true or false");
    return j_->get<bool>();
  }
  std::string string() const {
    if (!j_->is_string()) expected("a string");
    return j_->get<std::string>();
  }
  std::vector<double> numbers() const {
    std::vector<double> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); ++i) out.push_back((*this)[i].number());
    return out;
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

 private:
  [[noreturn]] void expected(const std::string& what) const {
    std::string got = j_->dump();
    if (got.size() > 60) got = got.substr(0, 57) + "...";
    fail("expected " + what + ", got " + got);
  }
  static bool is_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  const nlohmann::json* j_;
  std::string path_;
};

}  // namespace ktune::detail
