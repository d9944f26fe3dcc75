#include "ktune/widgets/slice_chart.h"

#include <QCategoryAxis>
#include <QChart>
#include <QGraphicsLayout>
#include <QLineSeries>
#include <QMouseEvent>
#include <QPainter>
#include <QScatterSeries>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
const QColor kBox(0x15, 0x65, 0xc0);
const QColor kMarked(0xef, 0x6c, 0x00);
constexpr double kMaxHalfWidth = 11;  // pixels
constexpr double kLabelRoom = 0.16;   // of the y span, above the slowest time, for the ✕ marks

// The failing status with the most trials at a value: its colour marks the value.
TrialStatus commonestFailure(const SliceValue& v) {
  TrialStatus best = TrialStatus::CompileError;
  std::size_t most = 0;
  for (TrialStatus s : kAllTrialStatuses)
    if (v.failed[static_cast<std::size_t>(s)] > most) most = v.failed[static_cast<std::size_t>(s)], best = s;
  return best;
}
}  // namespace

SliceChart::SliceChart(const TrialsModel* model, QWidget* parent) : QChartView(new QChart, parent), model_(model) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(220, 200);
  viewport()->setMouseTracking(true);
  chart()->layout()->setContentsMargins(0, 0, 0, 0);
  chart()->setMargins(QMargins(4, 4, 4, 4));
  chart()->setAnimationOptions(QChart::NoAnimation);
  chart()->legend()->hide();
  QFont titleFont = chart()->titleFont();
  titleFont.setBold(true);
  chart()->setTitleFont(titleFont);
  // Category axes with labels at values: the ticks are ours (a parameter's values, round times).
  xAxis_ = new QCategoryAxis(this);
  yAxis_ = new QCategoryAxis(this);
  for (QCategoryAxis* axis : {xAxis_, yAxis_}) axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  chart()->addAxis(xAxis_, Qt::AlignBottom);
  chart()->addAxis(yAxis_, Qt::AlignLeft);
  bestLine_ = new QLineSeries(this);
  bestLine_->setPen(QPen(kBox.lighter(140), 1, Qt::DashLine));
  best_ = new QScatterSeries(this);
  best_->setMarkerSize(8);
  best_->setColor(kBox.darker(130));
  best_->setPen(Qt::NoPen);
  marked_ = new QScatterSeries(this);
  marked_->setMarkerSize(11);
  marked_->setColor(Qt::transparent);
  marked_->setPen(QPen(kMarked, 2));
  for (QXYSeries* s :
       {static_cast<QXYSeries*>(bestLine_), static_cast<QXYSeries*>(best_), static_cast<QXYSeries*>(marked_)}) {
    chart()->addSeries(s);
    s->attachAxis(xAxis_);
    s->attachAxis(yAxis_);
  }
}

double SliceChart::toY(double ns) const { return log_ ? std::log10(ns / unit_.ns) : ns / unit_.ns; }

void SliceChart::setSlice(ParameterSlice slice, const TimeUnit& unit, bool logY, const QString& title) {
  slice_ = std::move(slice);
  unit_ = unit;
  log_ = logY;
  const std::string& name = slice_.parameter;
  std::vector<ParamValue> values;
  for (const SliceValue& v : slice_.values) values.push_back(v.value);
  axis_ = ParameterAxis(values, [&](const ParamValue& v) { return model_->parameterText(name, v); });
  xs_.clear();
  QList<QPointF> bests;
  for (const SliceValue& v : slice_.values) {
    double x = 0;
    axis_.position(v.value, &x);
    xs_.push_back(x);
    if (v.ok) bests.append(QPointF(x, toY(v.best_ns)));
  }
  best_->replace(bests);
  // A line between the bests shows a trend where the values have an order; categories have none.
  bestLine_->replace(axis_.kind() == ParameterAxis::Kind::Categories ? QList<QPointF>() : bests);
  marked_->clear();
  chart()->setTitle(title);
  xAxis_->setTitleText(axis_.kind() == ParameterAxis::Kind::Log2 ? tr("%1 (log2 scale)").arg(qstr(name)) : qstr(name));
  yAxis_->setTitleText(log_ ? tr("median %1 (log)").arg(unit_.name) : tr("median %1").arg(unit_.name));
  fitAxes();
}

void SliceChart::setMarked(const std::vector<std::pair<ParamValue, double>>& marks) {
  QList<QPointF> points;
  for (const auto& [value, ns] : marks) {
    double x;
    if (ns > 0 && axis_.position(value, &x)) points.append(QPointF(x, toY(ns)));
  }
  marked_->replace(points);
  fitAxes();
}

int SliceChart::markedCount() const { return static_cast<int>(marked_->count()); }

void SliceChart::fitAxes() {
  double x0 = 0, x1 = 1;
  if (!xs_.empty()) {
    x0 = *std::min_element(xs_.begin(), xs_.end());
    x1 = *std::max_element(xs_.begin(), xs_.end());
  }
  // Half a step either side of categories and log2 values; a linear axis of one value gets room.
  double pad = 0.5;
  if (axis_.kind() == ParameterAxis::Kind::Linear) pad = x1 > x0 ? (x1 - x0) * 0.06 : std::max(1.0, std::abs(x0) * 0.1);
  double y0 = std::numeric_limits<double>::max(), y1 = std::numeric_limits<double>::lowest();
  for (const SliceValue& v : slice_.values) {
    if (v.ok) y0 = std::min(y0, toY(v.best_ns)), y1 = std::max(y1, toY(v.max_ns));
    if (v.slow_abort_best_ns > 0)
      y0 = std::min(y0, toY(v.slow_abort_best_ns)), y1 = std::max(y1, toY(v.slow_abort_best_ns));
  }
  for (const QPointF& p : marked_->points()) y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
  if (y0 > y1) y0 = 0, y1 = 1;  // nothing ok: an empty frame under the failure marks
  const double span = std::max(y1 - y0, log_ ? 0.1 : std::max(1e-9, std::abs(y1) * 0.1));
  const double lo = log_ ? y0 - span * 0.06 : std::max(0.0, y0 - span * 0.06);
  const double top = y1 + span * 0.04, hi = top + span * kLabelRoom;
  xAxis_->setRange(x0 - pad, x1 + pad);
  yAxis_->setRange(lo, hi);
  setAxisTicks(xAxis_, axis_.ticks(x0 - pad, x1 + pad));
  setAxisTicks(yAxis_, log_ ? logTicks(lo, top) : niceTicks(lo, top, 5));
  viewport()->update();
}

QStringList SliceChart::xTickLabels() const { return xAxis_->categoriesLabels(); }

QString SliceChart::failureMark(const SliceValue& v) {
  const std::size_t failed = v.failed_total();
  return failed ? QStringLiteral("✕%1").arg(failed) : QString();
}

QString SliceChart::describe(std::size_t i) const {
  const SliceValue& v = slice_.values[i];
  QStringList lines{
      QStringLiteral("%1 = %2").arg(qstr(slice_.parameter), model_->parameterText(slice_.parameter, v.value))};
  if (v.ok)
    lines << tr("%n ok trial(s): best %1, quartiles %2 / %3 / %4, slowest %5", nullptr, static_cast<int>(v.ok))
                 .arg(formatNs(v.best_ns), formatNs(v.q1_ns), formatNs(v.median_ns), formatNs(v.q3_ns),
                      formatNs(v.max_ns));
  else
    lines << tr("no ok trial");
  if (v.slow_abort)
    lines << tr("%n slow_abort (stopped early, at least %1)", nullptr, static_cast<int>(v.slow_abort))
                 .arg(formatNs(v.slow_abort_best_ns));
  if (v.failed_total())
    lines << tr("%n failed: %1", nullptr, static_cast<int>(v.failed_total())).arg(qstr(v.failed_text()));
  return lines.join(QLatin1Char('\n'));
}

QPointF SliceChart::scene(double x, double y) const {
  return chart()->mapToScene(chart()->mapToPosition(QPointF(x, y), best_));
}

void SliceChart::drawBox(QPainter* painter, const SliceValue& v, double x, double halfWidth) const {
  const QPointF best = scene(x, toY(v.best_ns)), slowest = scene(x, toY(v.max_ns));
  const QPointF q1 = scene(x, toY(v.q1_ns)), q3 = scene(x, toY(v.q3_ns)), median = scene(x, toY(v.median_ns));
  painter->setPen(QPen(QColor(0x42, 0x42, 0x42), 1.2));
  painter->drawLine(best, slowest);
  painter->drawLine(slowest - QPointF(halfWidth / 2, 0), slowest + QPointF(halfWidth / 2, 0));
  QColor fill = kBox;
  fill.setAlpha(60);
  painter->setBrush(fill);
  painter->setPen(QPen(kBox, 1.2));
  painter->drawRect(QRectF(QPointF(q3.x() - halfWidth, q3.y()), QPointF(q1.x() + halfWidth, q1.y())));
  painter->setPen(QPen(kBox.darker(150), 2));
  painter->drawLine(median - QPointF(halfWidth, 0), median + QPointF(halfWidth, 0));
}

void SliceChart::drawLowerBound(QPainter* painter, const SliceValue& v, double x) const {
  // The fastest slow_abort trial at this value stopped early: the config is at least this slow.
  const double y = scene(0, toY(v.slow_abort_best_ns)).y();
  painter->setPen(QPen(statusColor(TrialStatus::SlowAbort).darker(120), 1.6));
  painter->drawLine(QPointF(x, y + 4), QPointF(x, y - 8));
  painter->drawLine(QPointF(x, y - 8), QPointF(x - 3, y - 4));
  painter->drawLine(QPointF(x, y - 8), QPointF(x + 3, y - 4));
  painter->drawLine(QPointF(x - 3, y + 4), QPointF(x + 3, y + 4));
}

void SliceChart::drawForeground(QPainter* painter, const QRectF& rect) {
  QChartView::drawForeground(painter, rect);
  const QRectF plot = chart()->mapRectToScene(chart()->plotArea());
  if (plot.width() < 10 || plot.height() < 10 || xs_.empty()) return;
  double spacing = plot.width();
  std::vector<double> px;
  for (double x : xs_) px.push_back(scene(x, yAxis_->min()).x());
  std::vector<double> sorted = px;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) spacing = std::min(spacing, sorted[i] - sorted[i - 1]);
  const double halfWidth = std::clamp(spacing * 0.3, 2.0, kMaxHalfWidth);
  painter->save();
  painter->setClipRect(plot);
  painter->setRenderHint(QPainter::Antialiasing);
  QFont small = painter->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  painter->setFont(small);
  for (std::size_t i = 0; i < slice_.values.size(); ++i) {
    const SliceValue& v = slice_.values[i];
    if (v.ok) {
      drawBox(painter, v, xs_[i], halfWidth);
    } else if (v.failed_total()) {
      // A value where nothing ran well: its whole column says so.
      QColor tint = statusColor(commonestFailure(v));
      tint.setAlpha(28);
      painter->fillRect(QRectF(px[i] - halfWidth, plot.top(), 2 * halfWidth, plot.height()), tint);
    }
    if (v.slow_abort_best_ns > 0) {
      // Beside the box where there is one (inside the plot), on the value where there is none.
      double x = v.ok ? px[i] + halfWidth + 5 : px[i];
      if (x + 4 > plot.right()) x = px[i] - halfWidth - 5;
      drawLowerBound(painter, v, x);
    }
    const QString mark = failureMark(v);
    if (mark.isEmpty()) continue;
    painter->setPen(statusColor(commonestFailure(v)).darker(115));
    painter->drawText(QRectF(px[i] - 30, plot.top() + 1, 60, 16), Qt::AlignHCenter | Qt::AlignTop, mark);
  }
  painter->restore();
}

void SliceChart::mouseMoveEvent(QMouseEvent* event) {
  QChartView::mouseMoveEvent(event);
  const QPointF at = mapToScene(event->position().toPoint());
  std::size_t nearest = xs_.size();
  double closest = 16;  // pixels
  for (std::size_t i = 0; i < xs_.size(); ++i) {
    const double d = std::abs(scene(xs_[i], yAxis_->min()).x() - at.x());
    if (d < closest) closest = d, nearest = i;
  }
  if (nearest < xs_.size() && chart()->mapRectToScene(chart()->plotArea()).contains(at))
    QToolTip::showText(event->globalPosition().toPoint(), describe(nearest), this);
  else
    QToolTip::hideText();
}

}  // namespace ktune::gui
