#pragma once
// A Gaussian process regression with a Matern 5/2 kernel and one lengthscale per dimension,
// for the model-based strategy: fitted on standardized targets, hyperparameters chosen by the
// marginal likelihood over a small grid (deterministic, no optimizer).
#include <vector>

namespace ktune::detail {

class GaussianProcess {
 public:
  using Point = std::vector<double>;

  // Hyperparameters: a lengthscale per dimension and the noise variance (of standardized y).
  struct Hyper {
    std::vector<double> lengths;
    double noise = 1e-2;
  };
  // Fits with hyperparameters chosen for `x`, `y` (at least one point) by marginal likelihood,
  // or with `given` ones (cheaper: one factorization instead of a search).
  void fit(std::vector<Point> x, std::vector<double> y, const Hyper* given = nullptr);
  Hyper hyper() const { return {lengths_, noise_}; }
  // Adds a point with the hyperparameters kept (a believed value during a batch).
  void add(const Point& x, double y);

  struct Prediction {
    double mean;
    double sd;
  };
  // In the units of y.
  Prediction predict(const Point& x) const;
  // Log marginal likelihood of the fitted model (up to a constant): comparable between models
  // of the same targets.
  double evidence() const { return evidence_; }

 private:
  // Kernel similarity of two points, in [0, 1], with the fitted lengthscales.
  double similarity(const Point& a, const Point& b) const;

  // Cholesky of the kernel matrix and the weights; false when it is not positive definite.
  bool factor();
  double log_likelihood() const;

  std::vector<Point> x_;
  std::vector<double> y_;  // standardized
  double y_mean_ = 0, y_scale_ = 1;
  std::vector<double> lengths_;
  double noise_ = 1e-2;
  std::vector<double> chol_;  // n x n lower triangle, row-major
  std::vector<double> alpha_;
  double evidence_ = 0;
};

}  // namespace ktune::detail
