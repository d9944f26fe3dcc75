#pragma once
// Reads optional, typed members of a settings object: a missing key keeps the current value, a
// key of the wrong type is an InputError naming "<section>.<key>".
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune::detail {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& j, std::string section) : j_(j), section_(std::move(section)) {
    if (!j_.is_object()) throw InputError(section_ + ": expected an object, got " + json_excerpt(j_));
  }
  template <typename T>
  void operator()(const char* key, T& out) const {
    const auto it = j_.find(key);
    if (it == j_.end()) return;
    const bool ok = std::is_same_v<T, bool>            ? it->is_boolean()
                    : std::is_same_v<T, std::string>   ? it->is_string()
                    : std::is_floating_point_v<T>      ? it->is_number()
                    : std::is_unsigned_v<T>            ? it->is_number_unsigned()
                                                       : it->is_number_integer();
    if (!ok)
      throw InputError(section_ + "." + key + ": expected " + (std::is_same_v<T, bool> ? "true or false"
                                                              : std::is_same_v<T, std::string> ? "a string"
                                                              : std::is_floating_point_v<T>    ? "a number"
                                                              : std::is_unsigned_v<T> ? "a non-negative integer"
                                                                                      : "an integer") +
                       ", got " + json_excerpt(*it));
    out = it->get<T>();
  }

 private:
  const nlohmann::json& j_;
  std::string section_;
};

}  // namespace ktune::detail
