#include "family_sharding.h"

#include "ktune/error.h"
#include "ktune/expression.h"

namespace ktune::detail {

namespace {

// One element of "tp_head_fields": a key field's name, or {"name", "at_least_one"}.
TpField head_field(const JsonPath& h, const KernelFamily& f) {
  TpField tf;
  if (h.json().is_string()) {
    tf.name = h.string();
  } else if (h.json().is_object()) {
    tf.name = h["name"].string();
    tf.at_least_one = h.boolean_or("at_least_one", false);
  } else {
    h.expected("a key field's name or {\"name\": ..., \"at_least_one\": true}");
  }
  const KeyField* k = f.field(tf.name);
  if (!k || !k->numeric) h.fail("'" + tf.name + "' must be a numeric key field");
  return tf;
}

Constraint shape_rule(const JsonPath& r, const KernelFamily& f) {
  Constraint c{r["expr"].string(), r.string_or("description", "")};
  std::vector<std::string> vars;
  try {
    vars = Expression(c.expr).variables();
  } catch (const InputError& e) {
    r["expr"].fail(e.what());
  }
  for (const auto& v : vars)
    if (!f.field(v)) r["expr"].fail("'" + v + "' is not a key field");
  return c;
}

}  // namespace

std::string key_field_of(const JsonPath& root, const char* key, const KernelFamily& f, bool numeric) {
  const std::string v = root.string_or(key, "");
  if (!v.empty()) {
    const KeyField* k = f.field(v);
    if (!k) root[key].fail("'" + v + "' is not one of the key fields");
    if (numeric && !k->numeric) root[key].fail("'" + v + "' must be a numeric key field");
  }
  return v;
}

void read_sharding(const JsonPath& root, KernelFamily& f) {
  if (const std::string out = key_field_of(root, "tp_out_field", f, true); !out.empty())
    f.tp_splits.push_back({TpSplitDim::Out, {{out}}});
  if (const std::string in = key_field_of(root, "tp_in_field", f, true); !in.empty())
    f.tp_splits.push_back({TpSplitDim::In, {{in}}});
  if (const auto heads = root.find("tp_head_fields")) {
    TpSplit split{TpSplitDim::Heads, {}};
    heads->for_each_element([&](const JsonPath& h) { split.fields.push_back(head_field(h, f)); });
    if (!split.fields.empty()) f.tp_splits.push_back(std::move(split));
  }
  if (const auto rules = root.find("shape_rules"))
    rules->for_each_element([&](const JsonPath& r) { f.shape_rules.push_back(shape_rule(r, f)); });
}

void write_sharding(const KernelFamily& f, nlohmann::json& out) {
  for (const auto& split : f.tp_splits) {
    if (split.fields.empty()) continue;
    // out and in divide one field each: the format has no list for them.
    if (split.dim == TpSplitDim::Out) out["tp_out_field"] = split.fields.front().name;
    if (split.dim == TpSplitDim::In) out["tp_in_field"] = split.fields.front().name;
    if (split.dim != TpSplitDim::Heads) continue;
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& h : split.fields)
      heads.push_back(h.at_least_one ? nlohmann::json{{"name", h.name}, {"at_least_one", true}}
                                     : nlohmann::json(h.name));
    out["tp_head_fields"] = std::move(heads);
  }
  if (f.shape_rules.empty()) return;
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : f.shape_rules) rules.push_back({{"expr", r.expr}, {"description", r.description}});
  out["shape_rules"] = std::move(rules);
}

}  // namespace ktune::detail
