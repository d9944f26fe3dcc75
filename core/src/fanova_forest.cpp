#include "fanova_forest.h"

#include <algorithm>
#include <numeric>

namespace ktune::fanova {

namespace {

// An index below n from the engine alone: std:: distributions differ between standard
// libraries, and the importance of a run must read the same everywhere.
std::size_t below(std::mt19937_64& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }

// One tree grown on a bootstrap sample of the grid's rows, as a random forest's trees are (every
// feature considered at each node, in a random order so that equal splits are chosen by chance),
// with its fANOVA sums gathered leaf by leaf while it grows: a leaf covers a box of the grid (a
// set of values per feature), and that box's share of the grid weighs its value.
class Tree {
 public:
  Tree(const Grid& grid, int maxDepth, std::mt19937_64& rng) : g_(grid), maxDepth_(maxDepth), rng_(rng) {
    const std::size_t n = g_.rows();
    rows_.resize(n);
    for (std::size_t& r : rows_) r = below(rng_, n);
    std::size_t widest = 0;
    for (const Feature& f : g_.features) {
      domain_.emplace_back(f.size, 1);
      domainSize_.push_back(f.size);
      marginal_.emplace_back(f.size, 0.0);
      widest = std::max(widest, f.size);
    }
    sums_.resize(widest);
    counts_.resize(widest);
    featureOrder_.resize(g_.features.size());
    share_.resize(g_.features.size());
    grow(0, n, 0);
  }

  std::vector<double> mainEffects() const {
    const double mean = weighted_, variance = weightedSquares_ - mean * mean;
    if (!(variance > 1e-14 * std::max(1.0, weightedSquares_))) return {};
    std::vector<double> out;
    for (std::size_t j = 0; j < g_.features.size(); ++j) {
      double squares = 0;
      for (double m : marginal_[j]) squares += m * m;
      const double vj = squares / static_cast<double>(g_.features[j].size) - mean * mean;
      out.push_back(std::clamp(vj / variance, 0.0, 1.0));
    }
    return out;
  }

 private:
  struct Split {
    std::size_t feature = 0;
    std::vector<std::uint32_t> order;  // the feature's values present in the node, in split order
    std::size_t cut = 0;               // order[0..cut] go left
    double gain = 0;                   // reduction of the squared error
  };

  std::uint32_t value(std::size_t row, std::size_t feature) const { return g_.x[row * g_.features.size() + feature]; }

  void grow(std::size_t begin, std::size_t end, int depth) {
    double sum = 0, squares = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const double y = g_.y[rows_[i]];
      sum += y;
      squares += y * y;
    }
    const double n = static_cast<double>(end - begin);
    Split split;
    if (depth < maxDepth_ && end - begin >= 2 && best(begin, end, sum, squares - sum * sum / n, &split)) {
      const std::vector<char> left = sides(split, begin, end);
      const std::size_t j = split.feature, cut = partition(begin, end, j, left);
      const std::vector<char> saved = domain_[j];
      const std::size_t savedSize = domainSize_[j];
      for (bool goesLeft : {true, false}) {
        domainSize_[j] = 0;
        for (std::size_t a = 0; a < saved.size(); ++a) {
          domain_[j][a] = saved[a] && (left[a] != 0) == goesLeft;
          domainSize_[j] += domain_[j][a] ? 1 : 0;
        }
        if (goesLeft)
          grow(begin, cut, depth + 1);
        else
          grow(cut, end, depth + 1);
      }
      domain_[j] = saved;
      domainSize_[j] = savedSize;
      return;
    }
    addLeaf(sum / n);
  }

  // Puts the node's rows going left first, each side in its order (a stable partition, without
  // the buffer std::stable_partition allocates at every node); returns where the right side starts.
  std::size_t partition(std::size_t begin, std::size_t end, std::size_t feature, const std::vector<char>& left) {
    scratch_.clear();
    std::size_t w = begin;
    for (std::size_t i = begin; i < end; ++i) {
      if (left[value(rows_[i], feature)])
        rows_[w++] = rows_[i];
      else
        scratch_.push_back(rows_[i]);
    }
    std::copy(scratch_.begin(), scratch_.end(), rows_.begin() + static_cast<std::ptrdiff_t>(w));
    return w;
  }

  // The best split of the node over every feature, tried in a random order; false when none
  // lowers the squared error (the node's times are all alike, or its rows are one config).
  bool best(std::size_t begin, std::size_t end, double sum, double error, Split* out) {
    if (!(error > 1e-12)) return false;
    std::iota(featureOrder_.begin(), featureOrder_.end(), 0);
    for (std::size_t i = featureOrder_.size(); i > 1; --i)
      std::swap(featureOrder_[i - 1], featureOrder_[below(rng_, i)]);
    out->gain = 1e-12 * error;  // a split must do more than rounding
    bool found = false;
    for (std::size_t j : featureOrder_) found = consider(j, begin, end, sum, out) || found;
    return found;
  }

  bool consider(std::size_t j, std::size_t begin, std::size_t end, double sum, Split* best) {
    const std::size_t k = g_.features[j].size;
    std::fill_n(sums_.begin(), k, 0.0);
    std::fill_n(counts_.begin(), k, 0);
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t v = value(rows_[i], j);
      sums_[v] += g_.y[rows_[i]];
      ++counts_[v];
    }
    std::vector<std::uint32_t>& present = present_;
    present.clear();
    for (std::uint32_t a = 0; a < k; ++a)
      if (counts_[a]) present.push_back(a);
    if (present.size() < 2) return false;
    // Categories in the order of their mean: the best subset split is then a cut of that order
    // (Breiman et al., Classification and Regression Trees, 1984, §9.4).
    if (!g_.features[j].ordered)
      std::stable_sort(present.begin(), present.end(), [&](std::uint32_t a, std::uint32_t b) {
        return sums_[a] / static_cast<double>(counts_[a]) < sums_[b] / static_cast<double>(counts_[b]);
      });
    const double n = static_cast<double>(end - begin);
    double leftSum = 0, leftCount = 0;
    bool found = false;
    for (std::size_t c = 0; c + 1 < present.size(); ++c) {
      leftSum += sums_[present[c]];
      leftCount += static_cast<double>(counts_[present[c]]);
      const double rightSum = sum - leftSum, rightCount = n - leftCount;
      const double gain = leftSum * leftSum / leftCount + rightSum * rightSum / rightCount - sum * sum / n;
      if (gain > best->gain) {
        best->feature = j;
        best->order.assign(present.begin(), present.end());
        best->cut = c;
        best->gain = gain;
        found = true;
      }
    }
    return found;
  }

  // Which of the feature's values go left. An ordered feature cuts halfway between the two
  // values either side of the cut, so the values no row of the node has go to the nearer side;
  // a category no row has goes with the side that has more rows.
  std::vector<char> sides(const Split& s, std::size_t begin, std::size_t end) const {
    const std::size_t k = g_.features[s.feature].size;
    std::vector<char> left(k, 0);
    if (g_.features[s.feature].ordered) {
      const std::uint32_t t = (s.order[s.cut] + s.order[s.cut + 1]) / 2;
      for (std::uint32_t a = 0; a <= t; ++a) left[a] = 1;
      return left;
    }
    std::vector<char> present(k, 0);
    for (std::size_t c = 0; c < s.order.size(); ++c) {
      present[s.order[c]] = 1;
      left[s.order[c]] = c <= s.cut;
    }
    std::size_t leftRows = 0;
    for (std::size_t i = begin; i < end; ++i) leftRows += left[value(rows_[i], s.feature)] ? 1 : 0;
    const bool absentLeft = 2 * leftRows >= end - begin;
    for (std::size_t a = 0; a < k; ++a)
      if (!present[a]) left[a] = absentLeft;
    return left;
  }

  void addLeaf(double v) {
    std::vector<double>& share = share_;
    double weight = 1;
    for (std::size_t j = 0; j < share.size(); ++j) {
      share[j] = static_cast<double>(domainSize_[j]) / static_cast<double>(g_.features[j].size);
      weight *= share[j];
    }
    weighted_ += weight * v;
    weightedSquares_ += weight * v * v;
    // The marginal of feature j at value a averages the tree over every other feature: this leaf
    // adds its value times its share of the other features, at each value of j it covers.
    for (std::size_t j = 0; j < share.size(); ++j) {
      const double others = weight / share[j];
      for (std::size_t a = 0; a < domain_[j].size(); ++a)
        if (domain_[j][a]) marginal_[j][a] += v * others;
    }
  }

  const Grid& g_;
  int maxDepth_;
  std::mt19937_64& rng_;
  std::vector<std::size_t> scratch_;           // the right side's rows while partitioning
  std::vector<std::size_t> rows_;              // the bootstrap sample, partitioned node by node
  std::vector<std::vector<char>> domain_;      // per feature, the values in the current node's box
  std::vector<std::size_t> domainSize_;        // how many
  std::vector<double> sums_;                   // per value, reused from node to node
  std::vector<std::size_t> counts_;            // per value
  std::vector<std::uint32_t> present_;         // the values present in a node, for consider()
  std::vector<std::size_t> featureOrder_;      // the order best() tries the features in
  std::vector<double> share_;                  // per feature, a leaf's share of its values
  double weighted_ = 0, weightedSquares_ = 0;  // the tree's mean and mean square over the grid
  std::vector<std::vector<double>> marginal_;  // per feature and value
};

}  // namespace

std::vector<double> tree_main_effects(const Grid& grid, int max_depth, std::mt19937_64& rng) {
  if (grid.rows() == 0) return {};
  return Tree(grid, max_depth, rng).mainEffects();
}

}  // namespace ktune::fanova
