#pragma once
// Equality of two JSON values strict enough to hold two readers to the same result: the same
// types (nlohmann's == takes 0, 0u and -0.0 for equal), doubles bit for bit, members in order.
#include <bit>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace ktune::fuzz {

inline bool identical(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
      if (x.key() != y.key() || !identical(x.value(), y.value())) return false;
    return true;
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!identical(a[i], b[i])) return false;
    return true;
  }
  if (a.is_number_float())
    return std::bit_cast<std::uint64_t>(a.get<double>()) == std::bit_cast<std::uint64_t>(b.get<double>());
  return a == b;
}

}  // namespace ktune::fuzz
