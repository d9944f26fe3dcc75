// TrialChartView's marks over the points: each problem's winner at the number it was chosen by,
// and each drawn trial's noise as a whisker, so a noisy trial reads as noisy at a glance and a
// winner is never taken for the lowest point.
#include <QCategoryAxis>
#include <QChart>
#include <QPainter>
#include <QScatterSeries>
#include <algorithm>
#include <cmath>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
const QColor kWhisker(0x42, 0x42, 0x42, 130);
const QColor kBandFill(0x75, 0x75, 0x75, 28);
constexpr double kArrowPixels = 9;
constexpr double kMinWhiskerPixels = 4;  // a shorter one hides under its marker
constexpr double kCapPixels = 2.5;
}  // namespace

bool TrialChartView::spreadOf(const Trial& t, double* low, double* high) const {
  if (!drawsSpread() || t.stats.count < 2 || failed(t.status)) return false;
  *low = yMetric_.fromNs(std::max(t.stats.min_ns, t.stats.median_ns - t.stats.std_ns));
  *high = yMetric_.fromNs(std::min(t.stats.max_ns, t.stats.median_ns + t.stats.std_ns));
  return *high > *low && *low > 0;
}

double TrialChartView::winnerValue(const Winner& winner, double searchY) const {
  // A recorded metric was not re-measured: the star marks the winner at its search value.
  return yMetric_.isLatency() ? yMetric_.fromNs(winner.stats.median_ns) : searchY;
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

void TrialChartView::drawLowerBounds(QPainter* painter) {
  // A slow_abort's time is where the measurement stopped: the config is at least that slow.
  painter->setPen(QPen(statusColor(TrialStatus::SlowAbort).darker(120), 1.4));
  for (const Marker& m : drawn_) {
    if (model_->trial(m.row).status != TrialStatus::SlowAbort) continue;
    const QPointF at = chart()->mapToScene(m.pixels), tip = at - QPointF(0, kArrowPixels + 3);
    painter->drawLine(at - QPointF(0, 3), tip);
    painter->drawLine(tip, tip + QPointF(-2.5, 3));
    painter->drawLine(tip, tip + QPointF(2.5, 3));
  }
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
  const auto scene = [&](double x, double y) { return chart()->mapToScene(toPixels(x, y, plot)); };
  painter->save();
  painter->setClipRect(chart()->mapRectToScene(plot));
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(kWhisker, 1.2));
  for (const Marker& m : drawn_) {
    double low, high;
    if (!spreadOf(model_->trial(m.row), &low, &high)) continue;
    // A whisker stops where the failures band starts.
    const QPointF bottom = scene(m.x, low), top = scene(m.x, hasBand_ ? std::min(high, bandLow_) : high);
    if (bottom.y() - top.y() < kMinWhiskerPixels) continue;
    painter->drawLine(bottom, top);
    painter->drawLine(top - QPointF(kCapPixels, 0), top + QPointF(kCapPixels, 0));
    painter->drawLine(bottom - QPointF(kCapPixels, 0), bottom + QPointF(kCapPixels, 0));
  }
  drawLowerBounds(painter);
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
