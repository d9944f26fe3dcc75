// Model-based search (Bayesian optimization). A spread-out start (a seeded maximin design), then
// a Gaussian process models log(median) over the configs' normalized candidate-value indices and
// each next config is the unmeasured valid one of highest expected improvement over the best so
// far, times its chance to run at all.
//
// - Interactions: kernel speed often follows a product of parameters (threads per block =
//   block_x * block_y, work per thread = tile_x * tile_y), a diagonal ridge an axis-aligned
//   kernel fits poorly. A second model adds each pair's mean coordinate as a feature (on
//   power-of-two lists, the log of the product); the model with the higher marginal likelihood
//   is used, so the data decides.
// - Failed configs stay out of the regression (their time is unknown, not large); a separate
//   estimate of the chance to run keeps the search out of regions that fail to compile or launch.
// - A batch of a few configs is chosen at once (a "kriging believer": each pick joins the model
//   at its predicted value before the next), so a device backend can compile ahead.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "discrete_space.h"
#include "gaussian_process.h"
#include "strategy_factories.h"

namespace ktune::detail {

namespace {

constexpr std::size_t kBatch = 4;
constexpr int kMaximinDraws = 10;
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
    searched_at_ = 0;
    hyper_[0].reset();
    hyper_[1].reset();
  }

  std::vector<Config> next(std::size_t max) override {
    std::vector<Config> out;
    const std::size_t left = planned() - std::min(planned(), evals_.handed());
    if (left == 0) return out;
    std::vector<std::size_t> picks;
    if (evals_.handed() < initial_ || !any_ran()) {
      // The start, or, while every config so far failed, one more spread-out config at a time.
      const std::size_t n =
          std::min({max, left, std::max<std::size_t>(1, initial_ - std::min(initial_, evals_.handed()))});
      for (std::size_t k = 0; k < n; ++k)
        if (const auto i = spread_out_pick()) picks.push_back(*i), evals_.propose(*i);
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
    return std::any_of(evals_.order().begin(), evals_.order().end(),
                       [&](std::size_t i) { return evals_.time(i).has_value(); });
  }

  // Of a few random unproposed configs, the one farthest from every config proposed so far.
  std::optional<std::size_t> spread_out_pick() {
    std::optional<std::size_t> best;
    double best_distance = -1;
    for (int k = 0; k < kMaximinDraws; ++k) {
      const auto c = evals_.random_unproposed(rng_);
      if (!c) break;
      double nearest = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < space_.size(); ++i) {
        if (!evals_.proposed(i)) continue;
        double d2 = 0;
        for (std::size_t d = 0; d < space_.dimensions(); ++d) {
          const double z = space_.normalized(i, d) - space_.normalized(*c, d);
          d2 += z * z;
        }
        nearest = std::min(nearest, d2);
      }
      if (nearest > best_distance) best_distance = nearest, best = c;
    }
    return best;
  }

  // Normalized coordinates, with each pair's mean appended when `pairs`.
  GaussianProcess::Point coords(std::size_t i, bool pairs) const {
    const std::size_t dims = space_.dimensions();
    GaussianProcess::Point p(dims);
    for (std::size_t d = 0; d < dims; ++d) p[d] = space_.normalized(i, d);
    if (pairs)
      for (std::size_t a = 0; a < dims; ++a)
        for (std::size_t b = a + 1; b < dims; ++b) p.push_back((p[a] + p[b]) / 2);
    return p;
  }

  std::vector<std::size_t> model_picks(std::size_t n) {
    // Training set: the configs that ran, fastest first, at most kMaxTraining.
    std::vector<std::size_t> ran;
    for (std::size_t i : evals_.order())
      if (evals_.time(i)) ran.push_back(i);
    const double overall = (static_cast<double>(ran.size()) + 1) / (static_cast<double>(evals_.order().size()) + 2);
    std::sort(ran.begin(), ran.end(), [&](std::size_t a, std::size_t b) {
      return *evals_.time(a) < *evals_.time(b) || (*evals_.time(a) == *evals_.time(b) && a < b);
    });
    if (ran.size() > kMaxTraining) ran.resize(kMaxTraining);
    std::vector<double> y;
    for (std::size_t i : ran) y.push_back(std::log(*evals_.time(i)));

    // Hyperparameters are searched again once the data grew by a fifth since the last search
    // (the search is most of a large model's cost; a few more points barely move them).
    const bool search = y.size() >= searched_at_ + std::max<std::size_t>(1, searched_at_ / 5);
    if (search) searched_at_ = y.size();
    GaussianProcess gp;
    bool pairs = false;
    for (bool with_pairs : {false, true}) {
      if (with_pairs && space_.dimensions() < 2) break;
      std::vector<GaussianProcess::Point> x;
      for (std::size_t i : ran) x.push_back(coords(i, with_pairs));
      GaussianProcess fitted;
      auto& hyper = hyper_[with_pairs ? 1 : 0];
      fitted.fit(std::move(x), y, search || !hyper ? nullptr : &*hyper);
      hyper = fitted.hyper();
      if (!with_pairs || fitted.evidence() > gp.evidence()) gp = std::move(fitted), pairs = with_pairs;
    }
    const double best = y.front();

    count_pairs();
    std::vector<std::size_t> candidates = unproposed_sample();
    std::vector<GaussianProcess::Point> cand_x;
    std::vector<double> ok_chance;
    for (std::size_t c : candidates) {
      cand_x.push_back(coords(c, pairs));
      ok_chance.push_back(chance_to_run(c, overall));
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

  // The chance that config `c` runs. Limits that make configs fail (shared memory, registers,
  // threads per block) mostly involve two or three parameters, so the chance is the lowest, over
  // every pair of parameters, of the share of measured configs with `c`'s two values that ran,
  // shrunk towards the share over the whole search (one pseudo-observation): a pair never seen
  // gets the overall rate, a pair that always failed soon gets little.
  double chance_to_run(std::size_t c, double overall) const {
    double chance = 1.0;
    const Point& p = space_.point(c);
    for (std::size_t a = 0; a < pairs_.size(); ++a)
      for (std::size_t b = a + 1; b < pairs_.size(); ++b) {
        const PairCount& cell = pairs_[a][b][cell_index(p, a, b)];
        chance = std::min(chance, (cell.ran + overall) / (cell.measured + 1));
      }
    return chance;
  }

  struct PairCount {
    double ran = 0, measured = 0;
  };

  std::size_t cell_index(const Point& p, std::size_t a, std::size_t b) const {
    return static_cast<std::size_t>(p[a]) * space_.levels(b) + static_cast<std::size_t>(p[b]);
  }

  void count_pairs() {
    const std::size_t dims = space_.dimensions();
    pairs_.assign(dims, std::vector<std::vector<PairCount>>(dims));
    for (std::size_t a = 0; a < dims; ++a)
      for (std::size_t b = a + 1; b < dims; ++b) pairs_[a][b].assign(space_.levels(a) * space_.levels(b), {});
    for (std::size_t i : evals_.order()) {
      const Point& p = space_.point(i);
      for (std::size_t a = 0; a < dims; ++a)
        for (std::size_t b = a + 1; b < dims; ++b) {
          PairCount& cell = pairs_[a][b][cell_index(p, a, b)];
          cell.measured += 1;
          cell.ran += evals_.time(i) ? 1 : 0;
        }
    }
  }

  std::size_t budget_;
  std::uint64_t seed_;
  DiscreteSpace space_;
  Evaluations evals_;
  std::mt19937_64 rng_;
  std::size_t initial_ = 4;
  std::size_t searched_at_ = 0;                     // training points at the last hyperparameter search
  std::optional<GaussianProcess::Hyper> hyper_[2];  // the models' hyperparameters: plain, with pairs
  // pairs_[a][b][cell_index(p, a, b)] for a < b: how configs with those two values fared.
  std::vector<std::vector<std::vector<PairCount>>> pairs_;
};

}  // namespace

std::unique_ptr<Strategy> make_bayes_strategy(std::size_t budget, std::uint64_t seed) {
  return std::make_unique<BayesStrategy>(budget, seed);
}

}  // namespace ktune::detail
