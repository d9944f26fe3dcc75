#include "space_solver.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <tuple>

#include "ktune/error.h"

namespace ktune::detail {

namespace {

constexpr int kHolds = -1;
constexpr int kCannotEvaluate = -2;

// A space's constraints compiled once (muparser turns each into bytecode on its first
// evaluation), each reading its variables from slots that binding a parameter writes, so a
// check is one bytecode run: no parsing, no lookups by name, no Config built.
struct Compiled {
  std::vector<Expression> exprs;                // declaration order
  std::vector<std::vector<std::size_t>> reads;  // per constraint: the parameters it reads, in space order
  std::vector<std::vector<double*>> slots;      // per parameter: where its value is written
  std::vector<std::vector<double>> numbers;     // per parameter: its candidates as expressions see them
  std::vector<std::uint64_t> stride;            // per parameter: its step in the odometer rank

  Compiled(const SearchSpace& space, const Variables& context);
  // The first of `constraints` that fails for the values in the slots, kHolds or kCannotEvaluate.
  int first_failing(const std::vector<std::size_t>& constraints) const;
};

Compiled::Compiled(const SearchSpace& space, const Variables& context) {
  const auto& params = space.parameters();
  slots.resize(params.size());
  numbers.resize(params.size());
  stride.assign(params.size(), 1);
  for (std::size_t p = params.size(); p-- > 1;) stride[p - 1] = stride[p] * params[p].values.size();
  for (std::size_t p = 0; p < params.size(); ++p)
    for (const auto& v : params[p].values) numbers[p].push_back(v.number());
  exprs.reserve(space.constraints().size());
  for (const auto& c : space.constraints()) {
    Expression& e = exprs.emplace_back(c.expr);
    auto& r = reads.emplace_back();
    for (const auto& name : e.variables()) {
      double* s = e.slot(name);
      // A parameter shadows a context variable of its name, as SearchSpace::bind does.
      const Parameter* p = space.find(name);
      if (p) {
        r.push_back(static_cast<std::size_t>(p - params.data()));
        slots[r.back()].push_back(s);
        continue;
      }
      const auto it = context.find(name);
      if (it == context.end()) throw InputError("unknown variable '" + name + "' in constraint '" + c.expr + "'");
      *s = it->second;
    }
    std::sort(r.begin(), r.end());
  }
}

int Compiled::first_failing(const std::vector<std::size_t>& constraints) const {
  for (const std::size_t c : constraints) {
    double v = 0;
    try {
      v = exprs[c].eval_bound();
    } catch (const InputError&) {
      return kCannotEvaluate;
    }
    if (!std::isfinite(v)) return kCannotEvaluate;
    if (v == 0.0) return static_cast<int>(c);
  }
  return kHolds;
}

// Parameters tied together by constraints, solved apart from the other groups. The order binds
// the parameters of the group's first constraint, then those the second adds, and so on; each
// constraint is checked at the depth where it and every constraint declared before it are bound.
// Checking in declaration order is what keeps the counts of the brute-force walk: the constraint
// that cuts a subtree is the first, in declaration order, that each of its configs fails.
struct Group {
  std::vector<std::size_t> constraints;          // declaration order
  std::vector<std::size_t> order;                // its parameters, in the order they are bound
  std::vector<std::vector<std::size_t>> checks;  // per depth: constraints checked once order[depth] is bound
  std::vector<std::uint64_t> below;              // per depth: configs under one value bound there
};

struct GroupResult {
  std::vector<std::uint64_t> ranks;         // the valid partial configs: their part of the odometer rank
  std::vector<std::uint64_t> first_failed;  // per constraint of the space: partial configs it prunes first
};

void plan(Group& g, const std::vector<std::size_t>& members, const SearchSpace& space, const Compiled& k) {
  const auto& params = space.parameters();
  std::vector<std::size_t> uses(params.size(), 0);
  for (const std::size_t c : g.constraints)
    for (const std::size_t p : k.reads[c]) ++uses[p];
  // Among a constraint's new parameters, the most shared first (later constraints need them too),
  // then the shortest lists.
  const auto first = [&](std::size_t a, std::size_t b) {
    return std::tuple(uses[b], params[a].values.size(), a) < std::tuple(uses[a], params[b].values.size(), b);
  };
  std::vector<bool> placed(params.size(), false);
  for (const std::size_t c : g.constraints) {
    std::vector<std::size_t> fresh;
    for (const std::size_t p : k.reads[c])
      if (!placed[p]) fresh.push_back(p), placed[p] = true;
    std::sort(fresh.begin(), fresh.end(), first);
    g.order.insert(g.order.end(), fresh.begin(), fresh.end());
  }
  for (const std::size_t p : members)
    if (!placed[p]) g.order.push_back(p);  // a parameter no constraint reads
  if (g.order.empty()) return;
  std::vector<std::size_t> depth_of(params.size(), 0);
  for (std::size_t d = 0; d < g.order.size(); ++d) depth_of[g.order[d]] = d;
  g.checks.assign(g.order.size(), {});
  std::size_t depth = 0;
  for (const std::size_t c : g.constraints) {
    for (const std::size_t p : k.reads[c]) depth = std::max(depth, depth_of[p]);
    g.checks[depth].push_back(c);
  }
  g.below.assign(g.order.size(), 1);
  for (std::size_t d = g.order.size() - 1; d-- > 0;) g.below[d] = g.below[d + 1] * params[g.order[d + 1]].values.size();
}

// groups[0] holds the constraints that read no parameter (device or problem limits alone); the
// others follow in the order of their first parameter.
std::vector<Group> partition(const SearchSpace& space, const Compiled& k) {
  const std::size_t n = space.parameters().size();
  std::vector<std::size_t> root(n);
  std::iota(root.begin(), root.end(), 0);
  const auto find = [&](std::size_t p) {
    while (root[p] != p) p = root[p] = root[root[p]];
    return p;
  };
  for (const auto& r : k.reads)
    for (std::size_t i = 1; i < r.size(); ++i) root[find(r[i])] = find(r[0]);
  std::vector<Group> groups(1);
  std::vector<std::vector<std::size_t>> members(1);
  std::vector<std::size_t> group_of(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    if (find(p) == p) group_of[p] = groups.size(), groups.emplace_back(), members.emplace_back();
  }
  for (std::size_t p = 0; p < n; ++p) members[group_of[find(p)]].push_back(p);
  for (std::size_t c = 0; c < k.reads.size(); ++c)
    groups[k.reads[c].empty() ? 0 : group_of[find(k.reads[c][0])]].constraints.push_back(c);
  for (std::size_t g = 0; g < groups.size(); ++g) plan(groups[g], members[g], space, k);
  return groups;
}

// Depth-first over the group's parameters; a failed check prunes the whole subtree under the
// value just bound, counted without visiting it. False when a check cannot be evaluated.
bool search(const Group& g, const Compiled& k, GroupResult& out) {
  const std::size_t depth = g.order.size();
  if (depth == 0) {
    const int failed = k.first_failing(g.constraints);
    if (failed == kCannotEvaluate) return false;
    if (failed == kHolds)
      out.ranks.push_back(0);
    else
      out.first_failed[static_cast<std::size_t>(failed)] = 1;
    return true;
  }
  std::vector<std::size_t> idx(depth, 0);
  std::vector<std::uint64_t> rank(depth + 1, 0);
  std::size_t d = 0;
  while (true) {
    const std::size_t p = g.order[d];
    if (idx[d] == k.numbers[p].size()) {
      if (d == 0) return true;
      ++idx[--d];
      continue;
    }
    const double value = k.numbers[p][idx[d]];
    for (double* s : k.slots[p]) *s = value;
    rank[d + 1] = rank[d] + idx[d] * k.stride[p];
    const int failed = k.first_failing(g.checks[d]);
    if (failed == kCannotEvaluate) return false;
    if (failed >= 0) {
      out.first_failed[static_cast<std::size_t>(failed)] += g.below[d];
    } else if (d + 1 < depth) {
      idx[++d] = 0;
      continue;
    } else {
      out.ranks.push_back(rank[d + 1]);
    }
    ++idx[d];
  }
}

// A config of the product is pruned by the first constraint it fails; in group i that is c when
// its part of group i fails c first and every other group's part fails nothing declared up to c.
PruneReport count(const SearchSpace& space, const std::vector<Group>& groups, const std::vector<GroupResult>& results) {
  const auto passes_up_to = [&](std::size_t j, std::size_t c) {
    std::uint64_t n = results[j].ranks.size();
    for (const std::size_t later : groups[j].constraints)
      if (later > c) n += results[j].first_failed[later];
    return n;
  };
  PruneReport r;
  r.total = space.total_size();
  r.valid = 1;
  for (const auto& res : results) r.valid *= res.ranks.size();
  std::vector<std::uint64_t> counts(space.constraints().size(), 0);
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (const std::size_t c : groups[i].constraints) {
      std::uint64_t n = results[i].first_failed[c];
      for (std::size_t j = 0; j < groups.size() && n; ++j)
        if (j != i) n *= passes_up_to(j, c);
      counts[c] = n;
    }
  for (std::size_t c = 0; c < counts.size(); ++c) r.pruned_by.emplace_back(space.constraints()[c].expr, counts[c]);
  return r;
}

Config decode(std::uint64_t rank, const SearchSpace& space, const Compiled& k) {
  const auto& params = space.parameters();
  std::vector<std::pair<std::string, ParamValue>> values;
  values.reserve(params.size());
  for (std::size_t p = 0; p < params.size(); ++p) {
    values.emplace_back(params[p].name, params[p].values[rank / k.stride[p]]);
    rank %= k.stride[p];
  }
  return Config(std::move(values));
}

// The product of the groups' valid parts, in odometer order: a config's rank is the sum of its
// parts' ranks, and ranks sort as the odometer visits them.
std::vector<Config> product(const SearchSpace& space, const Compiled& k, const std::vector<GroupResult>& results) {
  std::vector<std::uint64_t> ranks{0};
  for (const auto& res : results) {
    std::vector<std::uint64_t> next;
    next.reserve(ranks.size() * res.ranks.size());
    for (const std::uint64_t a : ranks)
      for (const std::uint64_t b : res.ranks) next.push_back(a + b);
    ranks.swap(next);
  }
  std::sort(ranks.begin(), ranks.end());
  std::vector<Config> out;
  out.reserve(ranks.size());
  for (const std::uint64_t r : ranks) out.push_back(decode(r, space, k));
  return out;
}

// An explicit list has no subtrees to cut: each config is checked in its order, compiled.
std::optional<SolvedSpace> solve_list(const SearchSpace& space, const Compiled& k) {
  std::vector<std::size_t> all(space.constraints().size());
  std::iota(all.begin(), all.end(), 0);
  SolvedSpace out;
  std::vector<std::uint64_t> counts(all.size(), 0);
  for (const Config& config : space.configs()) {
    const auto& values = config.values();  // in the space's parameter order
    for (std::size_t p = 0; p < values.size(); ++p)
      for (double* s : k.slots[p]) *s = values[p].second.number();
    const int failed = k.first_failing(all);
    if (failed == kCannotEvaluate) return std::nullopt;
    if (failed == kHolds)
      out.valid.push_back(config);
    else
      ++counts[static_cast<std::size_t>(failed)];
  }
  out.report.total = space.total_size();
  out.report.valid = out.valid.size();
  for (std::size_t c = 0; c < all.size(); ++c)
    out.report.pruned_by.emplace_back(space.constraints()[c].expr, counts[c]);
  return out;
}

}  // namespace

std::optional<SolvedSpace> solve_space(const SearchSpace& space, const Variables& context) {
  const Compiled k(space, context);
  if (space.is_list()) return solve_list(space, k);
  const std::vector<Group> groups = partition(space, k);
  std::vector<GroupResult> results(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    results[g].first_failed.assign(space.constraints().size(), 0);
    if (!search(groups[g], k, results[g])) return std::nullopt;
  }
  SolvedSpace out;
  out.report = count(space, groups, results);
  out.valid = product(space, k, results);
  return out;
}

}  // namespace ktune::detail
