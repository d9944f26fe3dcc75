#pragma once
// Config::from_json and ParamValue::from_json for nlohmann's values and flat ones (json_flat.h,
// a registry's entries): one reading of a config, whichever value holds it. The parameter is
// named only in an error.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json_flat.h"
#include "ktune/config.h"
#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/param_value.h"

namespace ktune::detail {

// `what()` names the value in an error ("config parameter 'BM'").
template <class J, class What>
ParamValue param_value_from_json(const J& j, What&& what) {
  if (j.is_number_integer()) return ParamValue(j.template get<std::int64_t>());
  if (j.is_boolean()) return ParamValue(j.template get<bool>());
  if (j.is_string()) {
    std::string s = j.template get<std::string>();
    if (const std::string why = string_value_problem(s); !why.empty()) throw InputError(what() + ": " + why);
    return ParamValue(std::move(s));
  }
  throw InputError(what() + " must be an integer, a boolean or a string, got " + json_excerpt(j));
}

template <class J>
Config config_from_json(const J& j) {
  if (!j.is_object())
    throw InputError("a config must be a JSON object of parameter: value (integer, boolean or string), got " +
                     json_excerpt(j));
  std::vector<std::pair<std::string, ParamValue>> values;
  values.reserve(j.size());
  each_member(j, [&](std::string_view k, const J& v) {
    values.emplace_back(std::string(k),
                        param_value_from_json(v, [&] { return "config parameter '" + std::string(k) + "'"; }));
  });
  return Config(std::move(values));
}

}  // namespace ktune::detail
