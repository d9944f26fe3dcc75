// Model-based search (Bayesian optimization): a few random configs, then a Gaussian process on
// the configs' normalized candidate-value indices models log(median), and each next config is
// the unmeasured valid one of highest expected improvement over the best so far, weighted by
// how likely it is to run at all. Failed configs stay out of the regression (their time is
// unknown, not large): a kernel-weighted share of failures near a candidate estimates its chance
// of failing, so a region where configs do not compile or launch is avoided without bending the
// model of the configs that do. A batch of a few configs is chosen at once (a "kriging
// believer": each pick is added to the model at its predicted value before the next), so a
// device backend can compile ahead while it measures.
#include <algorithm>
#include <cmath>
#include <limits>

#include "discrete_space.h"
#include "gaussian_process.h"
#include "strategy_factories.h"

namespace ktune::detail {

namespace {

constexpr std::size_t kBatch = 4;
// Bounds on the model's cost, whatever the space: the fastest configs measured so far and a
// seeded sample of the unmeasured ones.
constexpr std::size_t kMaxTraining = 250;
constexpr std::size_t kMaxCandidates = 4000;

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

class BayesStrategy : public Strategy {
 public:
  BayesStrategy(std::size_t budget, std::uint64_t seed) : budget_(budget), seed_(seed) {}
  std::string name() const override { return "bayes"; }

  void reset(std::vector<Config> valid) override {
    space_.reset(std::move(valid));
    evals_.reset(space_.size());
    rng_.seed(seed_);
    initial_ = std::min(planned(), std::clamp<std::size_t>(space_.dimensions() + 1, 4, 10));
  }

  std::vector<Config> next(std::size_t max) override {
    std::vector<Config> out;
    const std::size_t left = planned() - std::min(planned(), evals_.handed());
    if (left == 0) return out;
    std::vector<std::size_t> picks;
    if (evals_.handed() < initial_ || !any_ran()) {
      const std::size_t n = std::min({max, left, std::max<std::size_t>(1, initial_ - std::min(initial_, evals_.handed()))});
      for (std::size_t k = 0; k < n; ++k)
        if (const auto i = evals_.random_unproposed(rng_)) picks.push_back(*i), evals_.propose(*i);
    } else {
      picks = model_picks(std::min({max, left, kBatch}));
    }
    for (std::size_t i : picks) out.push_back(space_.config(i));
    return out;
  }

  void report(const Trial& t) override {
    if (const auto i = space_.find(t.config)) evals_.record(*i, t);
  }

  std::size_t planned() const override { return budget_ > 0 ? std::min(budget_, space_.size()) : space_.size(); }

 private:
  bool any_ran() const {
    return std::any_of(evals_.order().begin(), evals_.order().end(), [&](std::size_t i) { return evals_.time(i).has_value(); });
  }

  GaussianProcess::Point coords(std::size_t i) const {
    GaussianProcess::Point p(space_.dimensions());
    for (std::size_t d = 0; d < p.size(); ++d) p[d] = space_.normalized(i, d);
    return p;
  }

  std::vector<std::size_t> model_picks(std::size_t n) {
    // Training set: the configs that ran, fastest first, at most kMaxTraining.
    std::vector<std::size_t> ran;
    for (std::size_t i : evals_.order())
      if (evals_.time(i)) ran.push_back(i);
    std::sort(ran.begin(), ran.end(), [&](std::size_t a, std::size_t b) {
      return *evals_.time(a) < *evals_.time(b) || (*evals_.time(a) == *evals_.time(b) && a < b);
    });
    if (ran.size() > kMaxTraining) ran.resize(kMaxTraining);
    std::vector<GaussianProcess::Point> x;
    std::vector<double> y;
    for (std::size_t i : ran) {
      x.push_back(coords(i));
      y.push_back(std::log(*evals_.time(i)));
    }
    GaussianProcess gp;
    gp.fit(x, y);
    const double best = y.front();

    std::vector<GaussianProcess::Point> ran_x, failed_x;
    for (std::size_t i : evals_.order()) (evals_.time(i) ? ran_x : failed_x).push_back(coords(i));
    std::vector<std::size_t> candidates = unproposed_sample();
    std::vector<GaussianProcess::Point> cand_x;
    std::vector<double> ok_chance;
    for (std::size_t c : candidates) {
      cand_x.push_back(coords(c));
      ok_chance.push_back(chance_to_run(gp, cand_x.back(), ran_x, failed_x));
    }

    std::vector<std::size_t> picks;
    std::vector<bool> taken(candidates.size(), false);
    while (picks.size() < n) {
      std::optional<std::size_t> arg;
      double top = -1;
      for (std::size_t k = 0; k < candidates.size(); ++k) {
        if (taken[k]) continue;
        const auto p = gp.predict(cand_x[k]);
        const double improvement = best - p.mean;
        const double z = improvement / p.sd;
        const double ei = (improvement * normal_cdf(z) + p.sd * normal_pdf(z)) * ok_chance[k];
        if (ei > top) top = ei, arg = k;  // ties keep the first: deterministic
      }
      if (!arg) break;
      taken[*arg] = true;
      picks.push_back(candidates[*arg]);
      evals_.propose(candidates[*arg]);
      if (picks.size() < n) gp.add(cand_x[*arg], gp.predict(cand_x[*arg]).mean);
    }
    return picks;
  }

  // The unproposed configs, or a seeded sample of kMaxCandidates of them.
  std::vector<std::size_t> unproposed_sample() {
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < space_.size(); ++i)
      if (!evals_.proposed(i)) all.push_back(i);
    if (all.size() <= kMaxCandidates) return all;
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(kMaxCandidates);
    std::sort(all.begin(), all.end());
    return all;
  }

  // The chance that a config at `x` runs: the kernel-weighted share of measured configs near
  // it that ran, shrunk towards the share over the whole search (one pseudo-observation), so a
  // candidate far from every measurement gets the overall rate.
  static double chance_to_run(const GaussianProcess& gp, const GaussianProcess::Point& x,
                              const std::vector<GaussianProcess::Point>& ran, const std::vector<GaussianProcess::Point>& failed) {
    if (failed.empty()) return 1.0;
    const double overall = (static_cast<double>(ran.size()) + 1) / (static_cast<double>(ran.size() + failed.size()) + 2);
    double near_ran = 0, near_failed = 0;
    for (const auto& p : ran) near_ran += gp.similarity(x, p);
    for (const auto& p : failed) near_failed += gp.similarity(x, p);
    return (overall + near_ran) / (1 + near_ran + near_failed);
  }

  std::size_t budget_;
  std::uint64_t seed_;
  DiscreteSpace space_;
  Evaluations evals_;
  std::mt19937_64 rng_;
  std::size_t initial_ = 4;
};

}  // namespace

std::unique_ptr<Strategy> make_bayes_strategy(std::size_t budget, std::uint64_t seed) {
  return std::make_unique<BayesStrategy>(budget, seed);
}

}  // namespace ktune::detail
