#include "ktune/widgets/parameter_chart.h"

#include <algorithm>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
constexpr QScatterSeries::MarkerShape kMarkers[] = {
    QScatterSeries::MarkerShapeCircle, QScatterSeries::MarkerShapeRectangle, QScatterSeries::MarkerShapeTriangle,
    QScatterSeries::MarkerShapeRotatedRectangle, QScatterSeries::MarkerShapePentagon};
constexpr int kStatuses = static_cast<int>(std::size(kAllTrialStatuses));

// Trials the chart draws: every one that ran (pruned ones never did).
bool drawn(const Trial& t, const std::string& parameter) {
  return t.status != TrialStatus::Pruned && !parameter.empty() && t.config.has(parameter);
}
}  // namespace

ParameterChart::ParameterChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {}

void ParameterChart::setParameter(const QString& name) {
  if (name == parameter_) return;
  parameter_ = name;
  parameterStd_ = sstr(name);
  resetZoom();
  markDirty();
}

QString ParameterChart::xTitle() const {
  if (parameter_.isEmpty()) return tr("(choose a parameter)");
  switch (axis_.kind()) {
    case ParameterAxis::Kind::Categories:
      return parameter_;
    case ParameterAxis::Kind::Log2:
      return tr("%1 (log2 scale)").arg(parameter_);
    case ParameterAxis::Kind::Linear:
      break;
  }
  return parameter_;
}

QString ParameterChart::title() const { return tr("%1 against a parameter").arg(yMetric().noun()); }

QString ParameterChart::xText(const Trial& t, double) const {
  return model()->parameterText(parameterStd_, t.config.value(parameterStd_));
}

QString ParameterChart::yTitle() const { return yMetric().label(); }

void ParameterChart::prepare(const std::string& shape) {
  stale_ = false;
  std::vector<ParamValue> values;
  std::vector<bool> seen(kStatuses, false);
  for (const Trial& t : model()->trials()) {
    if (!drawn(t, parameterStd_) || (!shape.empty() && t.problem_key != shape)) continue;
    values.push_back(t.config.value(parameterStd_));
    seen[static_cast<std::size_t>(t.status)] = true;
  }
  axis_ =
      ParameterAxis(std::move(values), [&](const ParamValue& v) { return model()->parameterText(parameterStd_, v); });
  statuses_.clear();
  for (TrialStatus s : kAllTrialStatuses)
    if (seen[static_cast<std::size_t>(s)]) statuses_.push_back(s);
  shapes_ = shape.empty() ? model()->problemKeys() : QStringList{qstr(shape)};
}

std::vector<TrialChartView::Group> ParameterChart::groups() const {
  // One series per status and shape, out of the key; the key lists the statuses by colour and,
  // when several shapes are shown, the shapes by marker.
  std::vector<Group> g;
  const auto shapes = static_cast<int>(shapes_.size());
  for (TrialStatus s : kAllTrialStatuses)
    for (int i = 0; i < shapes; ++i)
      g.push_back(Group{statusLabel(s), statusColor(s), kMarkers[i % std::size(kMarkers)], Legend::Never});
  for (TrialStatus s : statuses_) g.push_back(Group{statusLegend(s), statusColor(s), kMarkers[0], Legend::Always});
  // Shapes by what tells them apart (the run's key labels): a key cut at the legend's width would
  // end before the field that differs.
  if (shapes > 1)
    for (int i = 0; i < shapes; ++i)
      g.push_back(Group{model()->keyLabels().label(shapes_[i]), QColor(0x61, 0x61, 0x61),
                        kMarkers[i % std::size(kMarkers)], Legend::Always});
  return g;
}

bool ParameterChart::pointFor(const Trial& t, std::int64_t /*measured*/, double* x, double* y, int* group) const {
  if (!drawn(t, parameterStd_)) return false;
  const auto shape = shapes_.indexOf(qstr(t.problem_key));
  if (shape < 0 || !axis_.position(t.config.value(parameterStd_), x) ||
      std::find(statuses_.begin(), statuses_.end(), t.status) == statuses_.end()) {
    stale_ = true;  // appended since prepare(): a new value, shape or status
    return false;
  }
  if (failed(t.status))
    *y = kFailedBand;
  else if (!yMetric().valueOf(t, y))
    return false;
  *group = static_cast<int>(t.status) * static_cast<int>(shapes_.size()) + static_cast<int>(shape);
  return true;
}

std::vector<AxisTick> ParameterChart::xTicks(double lo, double hi) const { return axis_.ticks(lo, hi); }

void ParameterChart::xRange(double x0, double x1, double* lo, double* hi) const {
  if (axis_.kind() == ParameterAxis::Kind::Linear && axis_.size() > 1) {
    TrialChartView::xRange(x0, x1, lo, hi);
    return;
  }
  // Half a step either side: a category's markers are never cut by the frame.
  const double pad = axis_.kind() == ParameterAxis::Kind::Linear ? std::max(1.0, std::abs(x0) * 0.1) : 0.5;
  *lo = x0 - pad;
  *hi = x1 + pad;
}

}  // namespace ktune::gui
