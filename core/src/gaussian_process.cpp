#include "gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ktune::detail {

double GaussianProcess::similarity(const Point& a, const Point& b) const {
  double r2 = 0;
  for (std::size_t d = 0; d < a.size(); ++d) {
    const double z = (a[d] - b[d]) / lengths_[d];
    r2 += z * z;
  }
  const double r = std::sqrt(5.0 * r2);
  return (1 + r + r * r / 3) * std::exp(-r);
}

bool GaussianProcess::factor() {
  const std::size_t n = x_.size();
  chol_.assign(n * n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = similarity(x_[i], x_[j]) + (i == j ? noise_ : 0);
      for (std::size_t k = 0; k < j; ++k) s -= chol_[i * n + k] * chol_[j * n + k];
      if (i == j) {
        if (s <= 0) return false;
        chol_[i * n + i] = std::sqrt(s);
      } else {
        chol_[i * n + j] = s / chol_[j * n + j];
      }
    }
  // alpha = K^-1 y by forward then backward substitution.
  alpha_ = y_;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < i; ++k) alpha_[i] -= chol_[i * n + k] * alpha_[k];
    alpha_[i] /= chol_[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = i + 1; k < n; ++k) alpha_[i] -= chol_[k * n + i] * alpha_[k];
    alpha_[i] /= chol_[i * n + i];
  }
  return true;
}

double GaussianProcess::log_likelihood() const {
  const std::size_t n = x_.size();
  double fit = 0, logdet = 0;
  for (std::size_t i = 0; i < n; ++i) {
    fit += y_[i] * alpha_[i];
    logdet += std::log(chol_[i * n + i]);
  }
  return -0.5 * fit - logdet;
}

void GaussianProcess::fit(std::vector<Point> x, std::vector<double> y, const Hyper* given) {
  x_ = std::move(x);
  const std::size_t n = y.size();
  y_mean_ = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_);
  y_scale_ = n > 1 && var > 0 ? std::sqrt(var / static_cast<double>(n - 1)) : 1.0;
  y_.resize(n);
  for (std::size_t i = 0; i < n; ++i) y_[i] = (y[i] - y_mean_) / y_scale_;

  const std::size_t dims = x_.front().size();
  if (given && given->lengths.size() == dims) {
    lengths_ = given->lengths;
    noise_ = given->noise;
    if (factor()) {
      evidence_ = log_likelihood();
      return;
    }
  }
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> best_lengths(dims, 1.0);
  double best_noise = 1e-2;
  auto consider = [&](std::vector<double> lengths, double noise) {
    lengths_ = std::move(lengths);
    noise_ = noise;
    if (!factor()) return;
    if (const double ll = log_likelihood(); ll > best) {
      best = ll;
      best_lengths = lengths_;
      best_noise = noise_;
    }
  };
  // One shared lengthscale first, then coordinate ascent over each dimension's own and the
  // noise: a parameter that barely matters gets a long lengthscale, one that matters a short one.
  // The noise stays small: the targets are medians of many samples, and a model that calls the
  // differences between configs noise stops telling them apart.
  for (double l : {0.15, 0.3, 0.6, 1.2, 2.4})
    for (double noise : {1e-4, 1e-3, 1e-2}) consider(std::vector<double>(dims, l), noise);
  if (n > dims + 2) {
    for (std::size_t d = 0; d < dims; ++d) {
      const std::vector<double> base = best_lengths;
      for (double scale : {0.5, 2.0, 4.0}) {
        std::vector<double> l = base;
        l[d] *= scale;
        consider(l, best_noise);
      }
    }
    const double base_noise = best_noise;
    for (double noise : {base_noise * 0.1, base_noise * 10})
      if (noise <= 1e-2) consider(best_lengths, noise);
  }
  lengths_ = best_lengths;
  noise_ = best_noise;
  evidence_ = best;
  if (!factor()) {  // every candidate failed: the largest noise always factors
    noise_ = 1.0;
    factor();
  }
}

void GaussianProcess::add(const Point& x, double y) {
  x_.push_back(x);
  y_.push_back((y - y_mean_) / y_scale_);
  if (!factor()) {
    noise_ *= 10;
    factor();
  }
}

GaussianProcess::Prediction GaussianProcess::predict(const Point& x) const {
  const std::size_t n = x_.size();
  std::vector<double> k(n);
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = similarity(x, x_[i]);
    mean += k[i] * alpha_[i];
  }
  // v = L^-1 k; variance = k(x, x) - v.v
  double vv = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) k[i] -= chol_[i * n + j] * k[j];
    k[i] /= chol_[i * n + i];
    vv += k[i] * k[i];
  }
  const double var = std::max(1e-12, 1.0 - vv);
  return {y_mean_ + y_scale_ * mean, y_scale_ * std::sqrt(var)};
}

}  // namespace ktune::detail
