// Genetic algorithm over the valid configs: a population evolves by tournament selection,
// uniform crossover (each parameter from either parent), mutation to a neighbouring candidate
// value, and elitism (the best survive unchanged). Fitness is the measured median; a config
// that failed is the least fit and can never be chosen over one that ran. A child already
// measured keeps its fitness without a second measurement; a generation that breeds nothing new
// takes a random unmeasured config, so the search always moves on within its budget.
#include <algorithm>
#include <limits>

#include "discrete_space.h"
#include "strategy_factories.h"

namespace ktune::detail {

namespace {

class GeneticStrategy : public Strategy {
 public:
  GeneticStrategy(std::size_t budget, std::uint64_t seed) : budget_(budget), seed_(seed) {}
  std::string name() const override { return "genetic"; }

  void reset(std::vector<Config> valid) override {
    space_.reset(std::move(valid));
    evals_.reset(space_.size());
    rng_.seed(seed_);
    population_.clear();
    pending_.clear();
    // Small populations: a budget of a few dozen evaluations must still see several generations.
    population_size_ = std::clamp<std::size_t>(planned() / 5, 4, 16);
    generation_ = 0;
    handed_ = 0;
  }

  std::vector<Config> next(std::size_t max) override {
    std::vector<Config> out;
    while (out.size() < max && handed_ < planned()) {
      // A generation is bred from measured parents: the tuner reports a batch before it asks
      // again, so breed only at the start of a call.
      if (pending_.empty() && (!out.empty() || !breed())) break;
      const std::size_t i = pending_.front();
      pending_.erase(pending_.begin());
      ++handed_;
      out.push_back(space_.config(i));
    }
    return out;
  }

  void report(const Trial& t) override {
    if (const auto i = space_.find(t.config)) evals_.record(*i, t);
  }

  std::size_t planned() const override { return budget_ > 0 ? std::min(budget_, space_.size()) : space_.size(); }

 private:
  double fitness(std::size_t i) const {
    const auto t = evals_.time(i);
    return t ? *t : std::numeric_limits<double>::infinity();
  }

  // The next generation: the first is random; later ones keep the elite and breed the rest.
  // Only children never proposed are queued for measurement. False when nothing is left.
  bool breed() {
    std::vector<std::size_t> next_gen;
    if (generation_++ == 0) {
      while (next_gen.size() < population_size_)
        if (const auto i = evals_.random_unproposed(rng_))
          next_gen.push_back(*i), queue(*i);
        else
          break;
    } else {
      std::sort(population_.begin(), population_.end(), [&](std::size_t a, std::size_t b) {
        return fitness(a) < fitness(b) || (fitness(a) == fitness(b) && a < b);
      });
      population_.erase(std::unique(population_.begin(), population_.end()), population_.end());
      const std::size_t elite = std::min<std::size_t>(2, population_.size());
      next_gen.assign(population_.begin(), population_.begin() + static_cast<std::ptrdiff_t>(elite));
      for (std::size_t tries = 0; next_gen.size() < population_size_ && tries < 8 * population_size_; ++tries) {
        const auto child = offspring();
        if (!child) continue;
        if (!evals_.proposed(*child)) queue(*child);
        next_gen.push_back(*child);
      }
      // Converged (every child already measured): fresh blood keeps the budget working.
      if (pending_.empty())
        if (const auto i = evals_.random_unproposed(rng_)) next_gen.push_back(*i), queue(*i);
    }
    population_ = std::move(next_gen);
    return !pending_.empty();
  }

  // Queued counts as proposed: no later draw or child queues it again.
  void queue(std::size_t i) {
    evals_.propose(i);
    pending_.push_back(i);
  }

  std::size_t tournament() {
    std::uniform_int_distribution<std::size_t> pick(0, population_.size() - 1);
    std::size_t best = population_[pick(rng_)];
    for (int k = 1; k < 3; ++k) {
      const std::size_t other = population_[pick(rng_)];
      if (fitness(other) < fitness(best)) best = other;
    }
    return best;
  }

  // Crossover of two tournament winners, then mutation; a child outside the valid configs is
  // bred again (a few times), since constraints cut holes in the grid.
  std::optional<std::size_t> offspring() {
    if (population_.empty()) return std::nullopt;
    std::uniform_real_distribution<double> u(0, 1);
    const double mutation = 1.0 / static_cast<double>(std::max<std::size_t>(1, space_.dimensions()));
    for (int attempt = 0; attempt < 10; ++attempt) {
      const Point& a = space_.point(tournament());
      const Point& b = space_.point(tournament());
      Point child(a.size());
      for (std::size_t d = 0; d < child.size(); ++d) child[d] = u(rng_) < 0.5 ? a[d] : b[d];
      bool mutated = false;
      for (std::size_t d = 0; d < child.size(); ++d)
        if (space_.levels(d) > 1 && u(rng_) < mutation) mutated = step(child, d);
      // Identical parents and no mutation reproduce a parent: force one step so the child is new.
      if (!mutated && (child == a || child == b)) {
        const std::size_t d = std::uniform_int_distribution<std::size_t>(0, child.size() - 1)(rng_);
        if (space_.levels(d) > 1) step(child, d);
      }
      if (const auto i = space_.find(child)) return i;
    }
    return std::nullopt;
  }

  // One candidate value up or down (the only way at an end of the list).
  bool step(Point& p, std::size_t d) {
    const int top = static_cast<int>(space_.levels(d)) - 1;
    const bool up = p[d] == 0 || (p[d] < top && std::uniform_int_distribution<int>(0, 1)(rng_) == 1);
    p[d] += up ? 1 : -1;
    return true;
  }

  std::size_t budget_;
  std::uint64_t seed_;
  DiscreteSpace space_;
  Evaluations evals_;
  std::mt19937_64 rng_;
  std::vector<std::size_t> population_;
  std::vector<std::size_t> pending_;
  std::size_t population_size_ = 8;
  std::size_t generation_ = 0;
  std::size_t handed_ = 0;  // configs given to the tuner (the budget counts these)
};

}  // namespace

std::unique_ptr<Strategy> make_genetic_strategy(std::size_t budget, std::uint64_t seed) {
  return std::make_unique<GeneticStrategy>(budget, seed);
}

}  // namespace ktune::detail
