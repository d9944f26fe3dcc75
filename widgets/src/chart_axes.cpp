#include "ktune/widgets/chart_axes.h"

#include <QCategoryAxis>
#include <algorithm>
#include <cmath>

namespace ktune::gui {

namespace {
// Beyond this many values, a label per value would overlap: a numeric axis gets round numbers.
constexpr std::size_t kMaxLabelledValues = 16;

bool powerOfTwo(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
}  // namespace

std::vector<AxisTick> niceTicks(double lo, double hi, int target, bool integers) {
  std::vector<AxisTick> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const double rough = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= rough) break;
  }
  if (integers) step = std::max(1.0, std::round(step));
  // Digits after the point that the step needs: 0.25 needs 2, 20 none.
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    const double at = std::abs(v) < step * 1e-9 ? 0.0 : v;
    // Below a ten-thousandth, digits after the point stop being readable: 3e-05, not 0.000030.
    out.push_back(AxisTick{at, decimals > 4 ? QString::number(at, 'g', 3) : QString::number(at, 'f', decimals)});
  }
  return out;
}

std::vector<AxisTick> logTicks(double lo, double hi) {
  std::vector<AxisTick> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const std::vector<double> digits[] = {{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (const std::vector<double>& steps : digits) {
    out.clear();
    for (double decade = std::floor(lo); decade <= std::ceil(hi); ++decade)
      for (double d : steps) {
        const double at = decade + std::log10(d);
        if (at >= lo - 1e-9 && at <= hi + 1e-9)
          out.push_back(AxisTick{at, QString::number(std::pow(10.0, at), 'g', 3)});
      }
    if (out.size() >= 3) return out;
  }
  if (out.size() >= 2) return out;
  // Less than a step of a digit: round numbers between the values, placed by their logarithm.
  out.clear();
  for (const AxisTick& t : niceTicks(std::pow(10.0, lo), std::pow(10.0, hi), 4))
    if (t.at > 0) out.push_back(AxisTick{std::log10(t.at), t.label});
  return out;
}

void setAxisTicks(QCategoryAxis* axis, const std::vector<AxisTick>& ticks) {
  for (const QString& label : axis->categoriesLabels()) axis->remove(label);
  axis->setStartValue(axis->min());
  double last = axis->min();
  for (const AxisTick& t : ticks) {
    // A category ends past the one before it; a label already used would replace that one.
    if (t.at < axis->min() || t.at > axis->max() || (t.at <= last && !axis->categoriesLabels().isEmpty())) continue;
    if (axis->categoriesLabels().contains(t.label)) continue;
    axis->append(t.label, t.at);
    last = t.at;
  }
}

TimeUnit timeUnitFor(double typicalNs) {
  if (typicalNs >= 1e9) return {QStringLiteral("s"), 1e9};
  if (typicalNs >= 1e6) return {QStringLiteral("ms"), 1e6};
  if (typicalNs >= 1e3 || !(typicalNs > 0)) return {QStringLiteral("µs"), 1e3};
  return {QStringLiteral("ns"), 1};
}

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

void ParameterAxis::build(std::vector<ParamValue> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  values_ = std::move(values);
  const bool ints = std::all_of(values_.begin(), values_.end(), [](const ParamValue& v) { return v.is_int(); });
  if (!ints)
    kind_ = Kind::Categories;  // strings, booleans, or a mix: no distance between them means anything
  else if (values_.size() > 1 &&
           std::all_of(values_.begin(), values_.end(), [](const ParamValue& v) { return powerOfTwo(v.as_int()); }))
    kind_ = Kind::Log2;
  else
    kind_ = Kind::Linear;
}

bool ParameterAxis::position(const ParamValue& value, double* x) const {
  const auto it = std::lower_bound(values_.begin(), values_.end(), value);
  if (it == values_.end() || !(*it == value)) return false;
  switch (kind_) {
    case Kind::Categories:
      *x = static_cast<double>(it - values_.begin());
      break;
    case Kind::Log2:
      *x = std::log2(static_cast<double>(value.as_int()));
      break;
    case Kind::Linear:
      *x = static_cast<double>(value.as_int());
      break;
  }
  return true;
}

std::vector<AxisTick> ParameterAxis::ticks(double lo, double hi) const {
  if (kind_ == Kind::Linear && values_.size() > kMaxLabelledValues) return niceTicks(lo, hi, 6, true);
  std::vector<AxisTick> out;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    double x;
    position(values_[i], &x);
    out.push_back(AxisTick{x, labels_[i]});
  }
  return out;
}

}  // namespace ktune::gui
