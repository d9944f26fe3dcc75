#include "kernel_spec_checks.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "kernel_spec_data.h"
#include "kernel_spec_index.h"
#include "ktune/error.h"
#include "ktune/expression.h"

namespace ktune {

// A friend of KernelSpec, as KernelSpecReader is: the checks read (and the limits write) the
// spec's parts directly.
struct KernelSpecChecks {
  KernelSpec& s;
  const SpecDialect& dialect;
  KernelFamily& f = s.family_;

  // Limits every launch must respect on the device, as constraints of the default space so that
  // pruning (and its counts) sees them without the spec writing them by hand.
  void derived_limits() {
    const auto& props = dialect.device_properties;
    std::vector<Constraint> derived;
    for (std::size_t i = 0; i < s.launches_.size(); ++i) {
      const SpecLaunch& l = s.launches_[i];
      const std::string inactive = l.when.empty() ? "" : "!(" + l.when + ") || ";
      const std::string what = "launches[" + std::to_string(i) + "] (" + l.entry + ")";
      const std::string threads = product(l.block);
      if (props.count("max_threads_per_block") && !threads.empty())
        derived.push_back({inactive + threads + " <= max_threads_per_block",
                           "derived: " + what + " threads per block within the device's max_threads_per_block"});
      const std::string& smem = dialect.shared_memory_limit;
      if (props.count(smem) && l.shared_bytes != "0")
        derived.push_back({inactive + "(" + l.shared_bytes + ") <= " + smem,
                           "derived: " + what + " dynamic shared memory within the device's " + smem});
      cluster_limits(l, inactive, what, derived);
    }
    if (derived.empty()) return;
    f.launch_limits = derived;
    auto all = f.default_space.constraints();
    all.insert(all.end(), derived.begin(), derived.end());
    f.default_space = f.default_space.is_list()
                          ? SearchSpace(f.default_space.parameters(), f.default_space.configs(), all)
                          : SearchSpace(f.default_space.parameters(), all);
  }

  // An expression as an operand: in parentheses unless a plain name or number.
  static std::string operand(const std::string& e) {
    return e.find_first_of("+-*/%^?:<>=!&|, ") == std::string::npos ? e : "(" + e + ")";
  }

  // The product of the dimensions that are not "1"; empty when all are "1".
  static std::string product(const std::array<std::string, 3>& dims) {
    std::string out;
    for (const auto& d : dims)
      if (d != "1") out += (out.empty() ? "" : "*") + operand(d);
    return out;
  }

  // What a cluster launch needs: a device with clusters, at most the portable 8 blocks (a larger
  // cluster fits only where the driver says so, per kernel and device), and a grid of whole
  // clusters. A cluster of one block is no cluster, so each constraint lets it through. A grid
  // reading generated data cannot join the space (it is the same for every input): plan_build
  // checks that one. mod is guarded because || and && evaluate both sides.
  void cluster_limits(const SpecLaunch& l, const std::string& inactive, const std::string& what,
                      std::vector<Constraint>& derived) const {
    const std::string blocks = product(l.cluster);
    if (blocks.empty()) return;
    if (dialect.device_properties.count("cc_major"))
      derived.push_back({inactive + blocks + " == 1 || cc_major >= 9",
                         "derived: " + what + " thread-block cluster needs compute capability 9.0 (cc_major)"});
    derived.push_back(
        {inactive + blocks + " <= 8", "derived: " + what + " cluster of at most 8 blocks (the portable cluster size)"});
    std::string whole;
    for (int k = 0; k < 3; ++k) {
      if (l.cluster[k] == "1") continue;
      if (reads_generated(l.grid[k])) return;
      const std::string c = operand(l.cluster[k]);
      whole +=
          (whole.empty() ? "" : " && ") + ("(" + c + " >= 1 ? mod(" + operand(l.grid[k]) + ", " + c + ") == 0 : 0)");
    }
    derived.push_back({inactive + whole, "derived: " + what + " grid divisible by its cluster in every dimension"});
  }

  bool reads_generated(const std::string& expr) const {
    const auto vars = Expression(expr).variables();
    return std::any_of(s.args_.begin(), s.args_.end(), [&](const SpecArgument& a) {
      const std::string v = a.published();
      return !v.empty() && std::find(vars.begin(), vars.end(), v) != vars.end();
    });
  }

  // Every expression must parse and read only known names, so a typo fails at load, not mid-run.
  // A variable that generated data publishes is known to later arguments and to what a session
  // evaluates once the inputs exist; never to what shapes the search space.
  void check_expressions() const {
    std::set<std::string> known = dialect.device_properties;
    // A text key field reads as its string's code, compared with "..." literals (pass == "dW").
    for (const auto& k : f.key_fields) known.insert(k.name);
    for (const auto& p : f.default_space.parameters()) known.insert(p.name);
    std::map<std::string, std::size_t> publisher;  // published variable -> its argument's index
    for (std::size_t i = 0; i < s.args_.size(); ++i)
      if (const std::string v = s.args_[i].published(); !v.empty()) {
        if (known.count(v))
          throw InputError("arguments." + s.args_[i].name + ": its generated data publishes '" + v +
                           "', which is already a key field, parameter or device property: rename the argument");
        publisher[v] = i;
      }
    constexpr std::size_t kNowhere = static_cast<std::size_t>(-1);
    // `visible`: how many arguments, from the first, have published their variables at this place.
    auto check = [&](const std::string& expr, const std::string& where, std::size_t visible) {
      if (expr.empty()) return;
      try {
        for (const auto& v : Expression(expr).variables()) {
          if (known.count(v)) continue;
          const auto p = publisher.find(v);
          if (p == publisher.end())
            throw InputError("'" + v + "' in \"" + expr +
                             "\" is not a key field, parameter, device property or generated variable");
          const std::string& by = s.args_[p->second].name;
          if (visible == kNowhere)
            throw InputError("'" + v + "' in \"" + expr + "\" is generated data (published by argument '" + by +
                             "'), which this field cannot read: the search space, flops, bytes, defines and a "
                             "launch's block, cluster, shared_bytes and when do not depend on generated inputs; later "
                             "arguments, launch grids, check.count and the reference's expressions may read it");
          if (p->second >= visible)
            throw InputError("'" + v + "' in \"" + expr + "\" is published by argument '" + by +
                             "', which is not declared before this one: declare '" + by + "' earlier");
        }
      } catch (const InputError& e) {
        throw InputError(where + ": " + e.what());
      }
    };
    check(f.flops_expr, "flops", kNowhere);
    check(f.bytes_expr, "bytes", kNowhere);
    for (const auto& c : f.default_space.constraints()) detail::check_no_generated(c.expr, publisher);
    for (const auto& d : s.defines_) check(d.expr, "compile.defines." + d.name, kNowhere);
    for (std::size_t i = 0; i < s.args_.size(); ++i) {
      const SpecArgument& a = s.args_[i];
      const std::string where = "arguments." + a.name;
      check(a.is_buffer() ? a.count : a.value, where, i);
      for (const auto& e : a.dims) check(e, where + ".dims", i);
      for (const auto& e : a.box) check(e, where + ".box", i);
      // "${...}" is substituted per problem: such an init is checked when generated.
      for (const auto& [e, key] : {std::pair{&a.init.min, "min"},
                                   {&a.init.max, "max"},
                                   {&a.init.page_size, "page_size"},
                                   {&a.init.experts, "experts"},
                                   {&a.init.topk, "topk"}})
        if (e->find("${") == std::string::npos) check(*e, where + ".init." + key, i);
    }
    const std::size_t all = s.args_.size();
    auto check_launch = [&](const SpecLaunch& l, const std::string& where) {
      for (int k = 0; k < 3; ++k) {
        check(l.grid[k], where + ".grid", all);
        check(l.block[k], where + ".block", kNowhere);
        check(l.cluster[k], where + ".cluster", kNowhere);
      }
      check(l.shared_bytes, where + ".shared_bytes", kNowhere);
      check(l.when, where + ".when", kNowhere);
      for (const auto& [name, expr] : l.defines) check(expr, where + ".defines." + name, kNowhere);
    };
    for (std::size_t i = 0; i < s.launches_.size(); ++i)
      check_launch(s.launches_[i], "launches[" + std::to_string(i) + "]");
    if (s.reference_.kind == "kernel") check_launch(s.reference_.launch, "reference");
    check(s.check_.count, "check.count", all);
    if (const auto& r = s.check_.region)
      for (const auto* list : {&r->dims, &r->begin, &r->end})
        for (const auto& e : *list) check(e, "check.region", all);
    // A library call's expression fields (a reference's or the baseline's, of the dialect's kinds).
    const auto call_fields = [&](const std::map<std::string, SpecDialect::ReferenceKind>& kinds,
                                 const std::string& kind, const std::map<std::string, std::string>& fields,
                                 const std::string& where) {
      const auto k = kinds.find(kind);
      if (k == kinds.end()) return;
      for (const auto& key : k->second.expressions)
        if (const auto it = fields.find(key); it != fields.end()) check(it->second, where + "." + key, all);
    };
    call_fields(dialect.references, s.reference_.kind, s.reference_.fields, "reference");
    call_fields(dialect.baselines, s.baseline_.kind, s.baseline_.fields, "baseline");
    check(s.baseline_.when, "baseline.when", kNowhere);
  }
};

void detail::check_spec_expressions(KernelSpec& spec, const SpecDialect& dialect) {
  KernelSpecChecks{spec, dialect}.check_expressions();
}

void detail::add_derived_limits(KernelSpec& spec, const SpecDialect& dialect) {
  KernelSpecChecks{spec, dialect}.derived_limits();
}

}  // namespace ktune
