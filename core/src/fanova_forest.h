#pragma once
// The forest behind parameter_importance(): regression trees over a grid of discrete values, and
// the exact fANOVA main effects of each tree. Internal to ktune_core.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace ktune::fanova {

// One parameter of the grid: how many values it has (indices 0..size-1) and whether they have an
// order (a split keeps a run of them) or are categories (a split takes any subset).
struct Feature {
  std::size_t size = 0;
  bool ordered = true;
};

// The rows a forest learns from: row r's value of feature j is x[r * features + j], its target y[r].
struct Grid {
  std::vector<Feature> features;
  std::vector<std::uint32_t> x;
  std::vector<double> y;
  std::size_t rows() const { return y.size(); }
};

// Each feature's main effect as a fraction of one tree's variance over the grid (every value of
// every feature weighted alike); empty when the tree is constant there.
std::vector<double> tree_main_effects(const Grid& grid, int max_depth, std::mt19937_64& rng);

}  // namespace ktune::fanova
