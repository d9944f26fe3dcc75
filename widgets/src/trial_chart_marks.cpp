// TrialChartView's marks over the points: each problem's winner at the number it was chosen by,
// each drawn trial's noise as a bar, so a noisy trial reads as noisy at a glance and a winner is
// never taken for the lowest point, and under "× best" the line at 1 that every shape's best
// trial sits on.
#include <QCategoryAxis>
#include <QChart>
#include <QPainter>
#include <QScatterSeries>
#include <algorithm>
#include <cmath>
#include <vector>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
const QColor kWhisker(0x42, 0x42, 0x42, 130);
const QColor kWhiskerDimmed(0x42, 0x42, 0x42, 35);
const QColor kBandFill(0x75, 0x75, 0x75, 28);
constexpr double kArrowPixels = 9;
constexpr double kMinWhiskerPixels = 4;  // a shorter one hides under its marker
constexpr double kCapPixels = 2.5;
}  // namespace

bool TrialChartView::spreadOf(const Trial& t, double* low, double* high) const {
  return showNoise_ && rawSpreadOf(t, low, high);
}

bool TrialChartView::rawSpreadOf(const Trial& t, double* low, double* high) const {
  if (!drawsSpread() || t.stats.count < 2 || failed(t.status)) return false;
  *low = yMetric_.fromNs(std::max(t.stats.min_ns, t.stats.median_ns - t.stats.std_ns), t.problem_key);
  *high = yMetric_.fromNs(std::min(t.stats.max_ns, t.stats.median_ns + t.stats.std_ns), t.problem_key);
  return *high > *low && *low > 0;
}

double TrialChartView::winnerValue(const Winner& winner, double searchY) const {
  if (yMetric_.isTime()) return yMetric_.fromNs(winner.stats.median_ns, winner.problemKey);
  // The device's conditions are read with the number it won by; a metric of the search's own
  // was not re-measured: the star marks the winner at its search value.
  if (const auto it = winner.conditions.find(sstr(yMetric_.name())); it != winner.conditions.end()) return it->second;
  return searchY;
}

QString TrialChartView::hoverText(const Trial& t) const {
  const QString noise = noiseText(t);
  return model_->describe(t) + (noise.isEmpty() ? QString() : QStringLiteral("\n") + noise);
}

QString TrialChartView::noiseText(const Trial& t) const {
  if (!yMetric_.isTime() || t.stats.count == 0) return {};
  QStringList lines;
  const auto number = [this](double v) {
    return yMetric_.isVsBest() ? tr("%1× best").arg(v, 0, 'f', 3)
                               : QStringLiteral("%1 %2").arg(v, 0, 'g', 4).arg(yMetric_.timeUnit().name);
  };
  if (yMetric_.isVsBest()) {
    const double y = yMetric_.fromNs(t.stats.median_ns, t.problem_key);
    if (std::isfinite(y))
      lines << tr("%1: median %2 ÷ its shape's best ok median %3")
                   .arg(number(y), formatNs(t.stats.median_ns), formatNs(t.stats.median_ns / y));
  }
  double low, high;
  if (spreadOf(t, &low, &high))
    lines << tr("bar: median ± std, within min–max: %1 to %2, of %3 samples")
                 .arg(number(low), number(high))
                 .arg(t.stats.count);
  if (t.stats.count >= 2)
    lines << tr("noise: %1 % relative standard error (std ÷ √n ÷ median)").arg(100 * t.stats.rel_error(), 0, 'f', 2);
  return lines.join(QLatin1Char('\n'));
}

void TrialChartView::drawBestLine(QPainter* painter, const QRectF& plot) {
  if (!yMetric_.isVsBest()) return;
  const double y = toPixels(xAxis_->min(), 1.0, plot).y();
  if (y < plot.top() || y > plot.bottom()) return;
  const QPointF left = chart()->mapToScene(QPointF(plot.left(), y)),
                right = chart()->mapToScene(QPointF(plot.right(), y));
  painter->setPen(QPen(winnerColour().darker(150), 1.4, Qt::DashLine));
  painter->drawLine(left, right);
  QFont f = painter->font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  painter->setFont(f);
  // Over the points, on a pale ground: a label the points would otherwise cross.
  const QString text = tr("1× = its shape's best ok median");
  const QFontMetricsF fm(f);
  const double width = fm.horizontalAdvance(text) + 6;
  const QRectF box(right.x() - width - 4, left.y() - fm.height() - 2, width, fm.height());
  painter->fillRect(box, QColor(255, 255, 255, 200));
  painter->drawText(box, Qt::AlignCenter, text);
}

void TrialChartView::updateWinners() {
  QList<QPointF> stars;
  links_.clear();
  double highest = 0;
  for (const auto& [key, winner] : model_->winners()) {
    const int row = model_->winnerRow(key);
    const auto at = row < 0 ? pointById_.constEnd() : pointById_.constFind(model_->trial(row).id);
    if (at == pointById_.constEnd()) continue;  // another shape, or not plotted
    const Point& p = points_[static_cast<std::size_t>(*at)];
    const double y = winnerValue(winner, p.y);
    if (!std::isfinite(y) || (log_ && y <= 0)) continue;
    stars.append(QPointF(p.x, y));
    if (y != p.y) links_.push_back(Link{p.x, p.y, y});
    highest = std::max(highest, y);
  }
  winners_->replace(stars);
  applyLegend();
  // A re-measure far above the search would be off the chart.
  if (highest > 0) ensureYIncludes(highest * 1.05);
}

void TrialChartView::drawLowerBounds(QPainter* painter, const QRectF& plot) {
  // A slow_abort's time is where the measurement stopped: the config is at least that slow.
  // Those of trials a brush leaves out as faint as their markers. Not for other numbers it recorded.
  if (!yMetric_.isTime()) return;
  const QPointF origin = chart()->mapToScene(QPointF(0, 0));
  std::vector<QLineF> arrows[2];  // highlighted, dimmed
  for (const Marker& m : drawn_) {
    if (model_->trial(m.row).status != TrialStatus::SlowAbort) continue;
    const QPointF at = toPixels(m.x, m.y, plot) + origin, tip = at - QPointF(0, kArrowPixels + 3);
    std::vector<QLineF>& to = arrows[m.dimmed ? 1 : 0];
    to.emplace_back(at - QPointF(0, 3), tip);
    to.emplace_back(tip, tip + QPointF(-2.5, 3));
    to.emplace_back(tip, tip + QPointF(2.5, 3));
  }
  const QColor colour = statusColor(TrialStatus::SlowAbort).darker(120);
  painter->setPen(QPen(dimmedColour(colour), 1.4));
  painter->drawLines(arrows[1].data(), static_cast<int>(arrows[1].size()));
  painter->setPen(QPen(colour, 1.4));
  painter->drawLines(arrows[0].data(), static_cast<int>(arrows[0].size()));
}

void TrialChartView::drawBand(QPainter* painter, const QRectF& plot) {
  if (!hasBand_) return;
  const double bottom = std::min(plot.bottom(), toPixels(xAxis_->min(), bandLow_, plot).y());
  if (bottom <= plot.top()) return;  // zoomed below it
  const QRectF band = chart()->mapRectToScene(QRectF(plot.left(), plot.top(), plot.width(), bottom - plot.top()));
  painter->fillRect(band, kBandFill);
  painter->setPen(QPen(QColor(0x75, 0x75, 0x75), 1, Qt::DashLine));
  painter->drawLine(band.bottomLeft(), band.bottomRight());
  QFont f = painter->font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  painter->setFont(f);
  painter->setPen(QColor(0x42, 0x42, 0x42));
  painter->drawText(band.adjusted(4, 1, -4, -1), Qt::AlignLeft | Qt::AlignTop, tr("failed: no time (colour: status)"));
}

QList<QPointF> TrialChartView::winnerPoints() const { return winners_->points(); }

std::vector<TrialChartView::Spread> TrialChartView::drawnSpreads() const {
  std::vector<Spread> out;
  for (const Marker& m : drawn_) {
    double low, high;
    if (spreadOf(model_->trial(m.row), &low, &high)) out.push_back(Spread{m.x, low, high, model_->trial(m.row).id});
  }
  return out;
}

void TrialChartView::drawForeground(QPainter* painter, const QRectF& rect) {
  QChartView::drawForeground(painter, rect);
  const QRectF plot = chart()->plotArea();
  if (plot.width() < 10 || plot.height() < 10) return;
  // The chart item is only moved, never scaled or turned: one offset maps chart to scene.
  const QPointF origin = chart()->mapToScene(QPointF(0, 0));
  const auto scene = [&](double x, double y) { return toPixels(x, y, plot) + origin; };
  painter->save();
  painter->setClipRect(chart()->mapRectToScene(plot));
  // Bars are upright and level lines: crisp without antialiasing, which would cost a redraw of
  // thousands of them several times as much.
  painter->setRenderHint(QPainter::Antialiasing, false);
  // Thousands of bars in one call: a drawLine each costs the redraw of a 100k-trial run tens of ms.
  // The bars of trials a brush leaves out are as faint as their markers.
  std::vector<QLineF> bars[2];  // highlighted, dimmed
  bars[0].reserve(drawn_.size() * 3);
  for (const Marker& m : drawn_) {
    double low, high;
    if (!spreadOf(model_->trial(m.row), &low, &high)) continue;
    // A bar stops where the failures band starts.
    const QPointF bottom = scene(m.x, low), top = scene(m.x, hasBand_ ? std::min(high, bandLow_) : high);
    if (bottom.y() - top.y() < kMinWhiskerPixels) continue;
    std::vector<QLineF>& to = bars[m.dimmed ? 1 : 0];
    to.emplace_back(bottom, top);
    to.emplace_back(top - QPointF(kCapPixels, 0), top + QPointF(kCapPixels, 0));
    to.emplace_back(bottom - QPointF(kCapPixels, 0), bottom + QPointF(kCapPixels, 0));
  }
  painter->setPen(QPen(kWhiskerDimmed, 1));
  painter->drawLines(bars[1].data(), static_cast<int>(bars[1].size()));
  painter->setPen(QPen(kWhisker, 1));
  painter->drawLines(bars[0].data(), static_cast<int>(bars[0].size()));
  painter->setRenderHint(QPainter::Antialiasing);
  drawLowerBounds(painter, plot);
  drawBestLine(painter, plot);
  painter->restore();
  painter->save();
  drawBand(painter, plot);
  painter->setClipRect(chart()->mapRectToScene(plot));
  // From the winner's search point to the number it was chosen by.
  painter->setPen(QPen(winnerColour().darker(150), 1.6, Qt::DashLine));
  for (const Link& l : links_) painter->drawLine(scene(l.x, l.from), scene(l.x, l.to));
  painter->restore();
}

}  // namespace ktune::gui
