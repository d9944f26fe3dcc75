#pragma once
// The "conditions" object beside a time (ktune/conditions.h) as results.json and the registry keep
// it: one reading for both, so that what apply copies from a run into the registry reads back.
#include "json_path.h"
#include "ktune/conditions.h"

namespace ktune::detail {

// The "conditions" of `p`, when it has one: finite, non-negative numbers by name, a share at most
// 1; errors name the path. Files from before conditions were read have none.
template <class J>
Conditions conditions_from(const BasicJsonPath<J>& p) {
  Conditions c;
  if (const auto conditions = p.find("conditions"))
    conditions->for_each_member([&](const std::string& name, const BasicJsonPath<J>& v) {
      const double x = v.non_negative_number();
      if (name == kClockLimited && x > 1) v.expected("a share of readings, at most 1");
      c[name] = x;
    });
  return c;
}

}  // namespace ktune::detail
