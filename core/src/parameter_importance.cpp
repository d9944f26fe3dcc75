#include "ktune/parameter_importance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "fanova_forest.h"

namespace ktune {

namespace {

// The ok trials of one shape as the forest and the correlations see them: each parameter's
// values (sorted, distinct), each trial's value indices and log latency.
struct Observations {
  std::vector<std::vector<ParamValue>> values;  // per parameter
  std::vector<bool> ordered;                    // per parameter
  std::vector<std::uint32_t> x;                 // trial i's index of parameter j at i * parameters + j
  std::vector<double> y;                        // per trial: log of the search median
  std::uint32_t at(std::size_t trial, std::size_t parameter) const { return x[trial * values.size() + parameter]; }
};

Observations observe(const std::vector<Trial>& trials, const std::string& key,
                     const std::vector<std::string>& parameters) {
  Observations o;
  const std::size_t p = parameters.size();
  // Values get an index as they are first seen; the indices follow the values' order after.
  std::vector<std::map<ParamValue, std::uint32_t>> seen(p);
  std::vector<const ParamValue*> row(p);
  for (const Trial& t : trials) {
    if (t.problem_key != key || t.status != TrialStatus::Ok || t.stats.count == 0 || !(t.stats.median_ns > 0)) continue;
    bool complete = true;
    for (std::size_t j = 0; j < p && complete; ++j) {
      complete = t.config.has(parameters[j]);
      if (complete) row[j] = &t.config.value(parameters[j]);
    }
    if (!complete) continue;
    for (std::size_t j = 0; j < p; ++j)
      o.x.push_back(seen[j].try_emplace(*row[j], static_cast<std::uint32_t>(seen[j].size())).first->second);
    o.y.push_back(std::log(t.stats.median_ns));
  }
  for (std::size_t j = 0; j < p; ++j) {
    std::vector<std::uint32_t> sorted(seen[j].size());
    std::vector<ParamValue>& v = o.values.emplace_back();
    for (const auto& [value, first] : seen[j]) {  // in the values' order
      sorted[first] = static_cast<std::uint32_t>(v.size());
      v.push_back(value);
    }
    for (std::size_t i = j; i < o.x.size(); i += p) o.x[i] = sorted[o.x[i]];
    const bool ints = std::all_of(v.begin(), v.end(), [](const ParamValue& a) { return a.is_int(); });
    const bool bools = std::all_of(v.begin(), v.end(), [](const ParamValue& a) { return a.is_bool(); });
    o.ordered.push_back(ints || bools);
  }
  return o;
}

// Ranks from 1, ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t k = i;
    while (k + 1 < order.size() && v[order[k + 1]] == v[order[i]]) ++k;
    const double mean = (static_cast<double>(i + k) / 2) + 1;
    for (std::size_t m = i; m <= k; ++m) out[order[m]] = mean;
    i = k + 1;
  }
  return out;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

// Spearman's ρ of an ordered parameter's values with log latency; the correlation ratio η for
// categories, whose order means nothing.
double correlation(const Observations& o, std::size_t j) {
  if (o.values[j].size() < 2) return 0;
  if (o.ordered[j]) {
    std::vector<double> v;
    for (std::size_t i = 0; i < o.y.size(); ++i) v.push_back(o.values[j][o.at(i, j)].number());
    return pearson(ranks(v), ranks(o.y));
  }
  const double mean = std::accumulate(o.y.begin(), o.y.end(), 0.0) / static_cast<double>(o.y.size());
  std::vector<double> sums(o.values[j].size(), 0.0), counts(o.values[j].size(), 0.0);
  double total = 0;
  for (std::size_t i = 0; i < o.y.size(); ++i) {
    sums[o.at(i, j)] += o.y[i];
    counts[o.at(i, j)] += 1;
    total += (o.y[i] - mean) * (o.y[i] - mean);
  }
  double between = 0;
  for (std::size_t a = 0; a < sums.size(); ++a)
    if (counts[a] > 0) between += counts[a] * std::pow(sums[a] / counts[a] - mean, 2);
  return total > 0 ? std::sqrt(std::min(1.0, between / total)) : 0.0;
}

// One row per distinct config, at the mean of its log latencies, centred; a seeded sample of
// `limit` of them when there are more.
fanova::Grid gridOf(const Observations& o, std::size_t limit, std::uint64_t seed, std::size_t* configs) {
  const std::size_t p = o.values.size();
  std::map<std::vector<std::uint32_t>, std::pair<double, double>> byConfig;
  std::vector<std::uint32_t> config(p);
  for (std::size_t i = 0; i < o.y.size(); ++i) {
    std::copy_n(o.x.begin() + static_cast<std::ptrdiff_t>(i * p), p, config.begin());
    auto it = byConfig.find(config);
    if (it == byConfig.end()) it = byConfig.emplace(config, std::pair<double, double>{0, 0}).first;
    it->second.first += o.y[i];
    it->second.second += 1;
  }
  *configs = byConfig.size();
  std::vector<const std::pair<const std::vector<std::uint32_t>, std::pair<double, double>>*> rows;
  for (const auto& entry : byConfig) rows.push_back(&entry);
  if (rows.size() > limit) {
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    for (std::size_t i = 0; i < limit; ++i) std::swap(rows[i], rows[i + rng() % (rows.size() - i)]);
    rows.resize(limit);
  }
  fanova::Grid g;
  for (std::size_t j = 0; j < o.values.size(); ++j) g.features.push_back({o.values[j].size(), o.ordered[j]});
  for (const auto* row : rows) {
    g.x.insert(g.x.end(), row->first.begin(), row->first.end());
    g.y.push_back(row->second.first / row->second.second);
  }
  const double mean = std::accumulate(g.y.begin(), g.y.end(), 0.0) / static_cast<double>(g.y.size());
  for (double& y : g.y) y -= mean;
  return g;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", fraction * 100);
  return buf;
}

}  // namespace

ImportanceReport parameter_importance(const std::vector<Trial>& trials, const std::string& problem_key,
                                      const std::vector<std::string>& parameters, const ImportanceOptions& options) {
  ImportanceReport r;
  const Observations o = observe(trials, problem_key, parameters);
  r.trials = o.y.size();
  for (std::size_t j = 0; j < parameters.size(); ++j) {
    ParameterImportance p;
    p.name = parameters[j];
    p.values = o.values[j].size();
    p.ordered = o.ordered[j];
    r.parameters.push_back(std::move(p));
  }
  if (r.trials < kMinImportanceTrials) {
    r.status = ImportanceReport::Status::NotEnoughTrials;
    return r;
  }
  for (std::size_t j = 0; j < parameters.size(); ++j) r.parameters[j].correlation = correlation(o, j);
  const fanova::Grid grid = gridOf(o, std::max<std::size_t>(options.max_configs, 2), options.seed, &r.configs);
  r.learned = grid.rows();

  std::vector<double> sum(parameters.size(), 0.0), squares(parameters.size(), 0.0);
  int used = 0;
  std::mt19937_64 rng(options.seed);
  for (int t = 0; t < options.trees; ++t) {
    const std::vector<double> effects = fanova::tree_main_effects(grid, options.max_depth, rng);
    if (effects.empty()) continue;  // constant over the grid: it says nothing of any parameter
    ++used;
    for (std::size_t j = 0; j < effects.size(); ++j) {
      sum[j] += effects[j];
      squares[j] += effects[j] * effects[j];
    }
  }
  if (used == 0) {
    r.status = ImportanceReport::Status::NoVariation;
    return r;
  }
  r.status = ImportanceReport::Status::Ok;
  for (std::size_t j = 0; j < parameters.size(); ++j) {
    ParameterImportance& p = r.parameters[j];
    p.variance = sum[j] / used;
    p.variance_std = std::sqrt(std::max(0.0, squares[j] / used - p.variance * p.variance));
    r.main_effects += p.variance;
  }
  for (ParameterImportance& p : r.parameters) p.importance = r.main_effects > 0 ? p.variance / r.main_effects : 0;
  return r;
}

std::string ImportanceReport::message() const {
  const std::string ok = std::to_string(trials) + (trials == 1 ? " ok trial" : " ok trials");
  switch (status) {
    case Status::NotEnoughTrials:
      return "not enough trials: " + ok + " with a time, at least " + std::to_string(kMinImportanceTrials) + " needed";
    case Status::NoVariation:
      if (std::all_of(parameters.begin(), parameters.end(), [](const ParameterImportance& p) { return p.fixed(); }))
        return "no parameter took more than one value among the " + ok + ": nothing to compare";
      return "every one of the " + ok + " took the same time: no parameter moved it";
    case Status::Ok:
      break;
  }
  std::string learnedFrom = std::to_string(configs) + " distinct configs";
  if (learned < configs) learnedFrom += ", a sample of " + std::to_string(learned);
  return "fANOVA over " + ok + " (" + learnedFrom + "): parameters alone explain " + percent(main_effects) +
         " of the variance of log latency; the rest is interactions between them";
}

}  // namespace ktune
