#include "kernel_spec_index.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>

#include "ktune/error.h"
#include "ktune/expression.h"

namespace ktune::detail {

namespace {

// A misspelt key ("shufle") would otherwise be ignored and its default run unnoticed.
void only_keys(const JsonPath& o, std::initializer_list<const char*> keys) {
  o.object();
  o.for_each_member([&](const std::string& k, const JsonPath& v) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* known) { return k == known; })) {
      std::string list;
      for (const char* known : keys) list += (list.empty() ? "\"" : ", \"") + std::string(known) + "\"";
      v.fail("unknown key: expected " + list);
    }
  });
}

// The value of an expression that reads nothing; nullopt otherwise (and for a malformed one,
// which the parser's check of every expression reports with its place).
std::optional<double> constant(const std::string& e) {
  if (e.find("${") != std::string::npos) return std::nullopt;
  try {
    const Expression x(e);
    if (x.variables().empty()) return x.eval({});
  } catch (const InputError&) {
  }
  return std::nullopt;
}

}  // namespace

void read_lengths_init(const JsonPath& l, ArgInit& init) {
  only_keys(l, {"min", "max"});
  for (const char* key : {"min", "max"})
    if (!l.has(key)) l.fail(std::string("missing \"") + key + "\": an expression of the " + key + "imum length");
  init.kind = ArgInit::Kind::Lengths;
  init.min = spec_text(l["min"]);
  init.max = spec_text(l["max"]);
  // Constant bounds are checked now; the others once a problem gives them values.
  const auto lo = constant(init.min), hi = constant(init.max);
  if (lo && *lo < 1) l["min"].fail("is " + init.min + ": every length must be at least 1");
  if (lo && hi && *lo > *hi)
    l.fail("min (" + init.min + ") exceeds max (" + init.max + "): lengths are drawn from [min, max]");
}

void read_page_table_init(const JsonPath& t, SpecArgument& arg, const KernelSpec& spec) {
  ArgInit& init = arg.init;
  only_keys(t, {"lengths", "page_size", "shuffle"});
  if (!t.has("lengths")) t.fail("missing \"lengths\": the argument holding the sequence lengths");
  if (!t.has("page_size")) t.fail("missing \"page_size\": tokens per page, an expression");
  init.kind = ArgInit::Kind::PageTable;
  init.lengths = t["lengths"].string();
  init.page_size = spec_text(t["page_size"]);
  init.shuffle = t.boolean_or("shuffle", true);
  const SpecArgument* of = spec.argument(init.lengths);
  if (!of)
    t["lengths"].fail("'" + init.lengths +
                      "' is not an argument declared before this one: declare the lengths argument first");
  if (of->init.kind != ArgInit::Kind::Lengths)
    t["lengths"].fail("'" + init.lengths + "' is not generated with \"init\": {\"lengths\": {\"min\", \"max\"}}");
  const auto rows = constant(of->count), count = constant(arg.count);
  if (rows && count && *rows > 0 && std::fmod(*count, *rows) != 0)
    t.fail("count " + arg.count + " is not a multiple of the " + of->count + " sequences of '" + of->name +
           "': the table holds one row of pages per sequence");
}

void read_routing_init(const JsonPath& in, SpecArgument& arg, const KernelSpec& spec) {
  ArgInit& init = arg.init;
  if (in.has("routing")) {
    const JsonPath r = in["routing"];
    only_keys(r, {"experts", "topk"});
    for (const char* key : {"experts", "topk"})
      if (!r.has(key)) r.fail(std::string("missing \"") + key + "\": an expression of the " + key);
    init.kind = ArgInit::Kind::Routing;
    init.experts = spec_text(r["experts"]);
    init.topk = spec_text(r["topk"]);
    const auto e = constant(init.experts), k = constant(init.topk);
    if (k && *k < 1) r["topk"].fail("is " + init.topk + ": every token picks at least one expert");
    if (e && k && *k > *e)
      r.fail("topk (" + init.topk + ") exceeds experts (" + init.experts + "): each token picks topk distinct experts");
    return;
  }
  const bool offsets = in.has("expert_offsets");
  const JsonPath v = in[offsets ? "expert_offsets" : "expert_order"];
  if (offsets) {
    init.kind = ArgInit::Kind::ExpertOffsets;
    init.routing = v.string();
  } else {
    only_keys(v, {"routing", "index"});
    if (!v.has("routing")) v.fail("missing \"routing\": the argument holding the routing");
    init.kind = ArgInit::Kind::ExpertOrder;
    init.routing = v["routing"].string();
    const std::string index = v.has("index") ? v["index"].string() : "row";
    if (index != "row" && index != "token")
      v["index"].fail("'" + index + "': expected \"row\" (routed-row indices) or \"token\" (token indices)");
    init.order_tokens = index == "token";
  }
  const SpecArgument* of = spec.argument(init.routing);
  const JsonPath where = offsets ? v : v["routing"];
  if (!of)
    where.fail("'" + init.routing +
               "' is not an argument declared before this one: declare the routing argument first");
  if (of->init.kind != ArgInit::Kind::Routing)
    where.fail("'" + init.routing + "' is not generated with \"init\": {\"routing\": {\"experts\", \"topk\"}}");
}

void check_index_buffer(const JsonPath& a, const SpecArgument& arg) {
  const ArgInit::Kind k = arg.init.kind;
  const char* what = k == ArgInit::Kind::PageTable       ? "page_table"
                     : k == ArgInit::Kind::Routing       ? "routing"
                     : k == ArgInit::Kind::ExpertOffsets ? "expert_offsets"
                     : k == ArgInit::Kind::ExpertOrder   ? "expert_order"
                                                         : "lengths";
  const bool i32_only = k != ArgInit::Kind::Lengths;
  if (!arg.is_buffer() || arg.role != ArgRole::Input)
    a["init"].fail(std::string("\"") + what + "\" generates an input buffer; '" + arg.name + "' is not one");
  if (arg.dtype.find("${") != std::string::npos) return;  // checked per problem, when generated
  const ElemType t = elem_type_from_string(arg.dtype);
  if (t != ElemType::I32 && (i32_only || t != ElemType::I64))
    a["buffer"].fail("'" + arg.dtype + "': \"" + what + "\" generates " + (i32_only ? "i32" : "i32 or i64") +
                     " values (indices)");
}

void check_no_generated(const std::string& constraint, const std::map<std::string, std::size_t>& publisher) {
  std::vector<std::string> vars;
  try {
    vars = Expression(constraint).variables();
  } catch (const InputError&) {
    return;  // SearchSpace reports it
  }
  for (const auto& v : vars)
    if (publisher.count(v))
      throw InputError("space.constraints: '" + v + "' in \"" + constraint +
                       "\" is generated data: the search space is the same for every input, so a constraint "
                       "cannot read it");
}

}  // namespace ktune::detail
