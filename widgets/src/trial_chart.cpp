#include "ktune/widgets/trial_chart.h"

#include <QCategoryAxis>
#include <QChart>
#include <QGraphicsLayout>
#include <QLegendMarker>
#include <QLogValueAxis>
#include <QPainter>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

TrialChartView::TrialChartView(TrialsModel* model, QWidget* parent) : QChartView(new QChart, parent), model_(model) {
  setRenderHint(QPainter::Antialiasing);
  viewport()->setMouseTracking(true);
  chart()->layout()->setContentsMargins(0, 0, 0, 0);
  chart()->setMargins(QMargins(6, 6, 6, 6));
  chart()->legend()->setAlignment(Qt::AlignBottom);
  chart()->setAnimationOptions(QChart::NoAnimation);
  // Category axes with labels at values: the ticks are ours (round numbers, a parameter's values).
  xAxis_ = new QCategoryAxis(this);
  xAxis_->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  chart()->addAxis(xAxis_, Qt::AlignBottom);
  auto* y = new QCategoryAxis(this);
  y->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  yAxis_ = y;
  chart()->addAxis(yAxis_, Qt::AlignLeft);
  connect(xAxis_, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
  connect(y, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);

  winners_ = new QScatterSeries(this);
  winners_->setName(tr("winner (the number it won by)"));
  winners_->setMarkerShape(QScatterSeries::MarkerShapeStar);
  winners_->setMarkerSize(22);
  winners_->setColor(winnerColour());
  winners_->setBorderColor(winnerColour().darker(170));
  highlight_ = new QScatterSeries(this);
  highlight_->setMarkerSize(16);
  highlight_->setColor(Qt::transparent);
  highlight_->setBorderColor(QColor(0x21, 0x21, 0x21));
  highlight_->setPen(QPen(QColor(0x21, 0x21, 0x21), 2.5));
  for (QXYSeries* s : {static_cast<QXYSeries*>(winners_), static_cast<QXYSeries*>(highlight_)}) {
    chart()->addSeries(s);
    attach(s);
  }
  applyLegend();

  rebuildTimer_.setSingleShot(true);
  connect(&rebuildTimer_, &QTimer::timeout, this, &TrialChartView::rebuild);
  decimateTimer_.setSingleShot(true);
  connect(&decimateTimer_, &QTimer::timeout, this, [this] {
    decimate();
    updateHighlight();
  });
  connect(model_, &QAbstractItemModel::rowsInserted, this, [this] { markDirty(/*full=*/false); });
  connect(model_, &QAbstractItemModel::rowsRemoved, this, [this] { markDirty(); });
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    zoomed_ = false;
    markDirty();
  });
  connect(model_, &TrialsModel::winnersChanged, this, [this] {
    updateWinners();
    viewport()->update();
  });
  // The plot area moves without a resize when the legend or the axes' labels change size: the
  // cells and the markers' pixels follow.
  connect(chart(), &QChart::plotAreaChanged, this, [this](const QRectF& plot) {
    markerLayerChanged(plot);
    decimateTimer_.start(0);
  });
  // A brush set or cleared on the Analyse page: the same points, highlighted or dimmed.
  connect(model_->brush(), &TrialBrush::changed, this, [this] { decimateTimer_.start(0); });
  createMarkerLayer();
}

void TrialChartView::attach(QXYSeries* series) {
  series->attachAxis(xAxis_);
  series->attachAxis(yAxis_);
}

void TrialChartView::addExtraSeries(QXYSeries* series, bool inLegend) {
  extraSeries_.append(series);
  chart()->addSeries(series);
  attach(series);
  raiseOverlays();
  if (!inLegend) notInLegend_.insert(series);
  applyLegend();
}

void TrialChartView::raiseOverlays() {
  for (QXYSeries* s : {static_cast<QXYSeries*>(winners_), static_cast<QXYSeries*>(highlight_)}) {
    chart()->removeSeries(s);
    chart()->addSeries(s);
    attach(s);
  }
}

void TrialChartView::applyLegend() {
  for (QXYSeries* s : extraSeries_) {
    QLegendMarker* marker = chart()->legend()->markers(s).first();
    const bool show = !notInLegend_.contains(s) && s->count() > 0;
    // Always set: isVisible() also reads false while the legend itself is not shown yet, and a
    // marker only hidden along with its legend comes back when the legend appears.
    marker->setVisible(show);
  }
  chart()->legend()->markers(winners_).first()->setVisible(winners_->count() > 0);
  chart()->legend()->markers(highlight_).first()->setVisible(false);
}

void TrialChartView::markDirty(bool full) {
  dirty_ = true;
  fullRebuild_ = fullRebuild_ || full;
  // Hidden charts catch up when shown. Visible ones redraw at most every kMinRebuildMs while
  // trials stream in: a rebuild walks every trial, and the table needs the UI thread too.
  if (!isVisible() || rebuildTimer_.isActive()) return;
  const qint64 since = sinceRebuild_.isValid() ? sinceRebuild_.elapsed() : kMinRebuildMs;
  rebuildTimer_.start(static_cast<int>(std::max<qint64>(0, kMinRebuildMs - since)));
}

void TrialChartView::showEvent(QShowEvent* event) {
  QChartView::showEvent(event);
  if (dirty_) rebuildTimer_.start(0);
}

void TrialChartView::resizeEvent(QResizeEvent* event) {
  QChartView::resizeEvent(event);
  decimateTimer_.start(0);
}

void TrialChartView::refresh() {
  rebuildTimer_.stop();
  fullRebuild_ = true;
  rebuild();
}

void TrialChartView::setShapeFilter(const QString& problemKey) {
  if (problemKey == shape_) return;
  shape_ = problemKey;
  zoomed_ = false;
  markDirty();
}

void TrialChartView::setLogScale(bool on) {
  if (on == log_) return;
  log_ = on;
  QAbstractAxis* old = yAxis_;
  QList<QXYSeries*> all(groupSeries_.begin(), groupSeries_.end());
  all += extraSeries_;
  all << winners_ << highlight_;
  for (QXYSeries* s : all) s->detachAxis(old);
  chart()->removeAxis(old);
  old->deleteLater();
  if (on) {
    auto* axis = new QLogValueAxis(this);
    axis->setBase(logBase());
    axis->setLabelFormat(QStringLiteral("%g"));
    axis->setMinorTickCount(-1);
    connect(axis, &QLogValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
    yAxis_ = axis;
  } else {
    auto* axis = new QCategoryAxis(this);
    axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    connect(axis, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
    yAxis_ = axis;
  }
  yAxis_->setTitleText(yTitle());
  chart()->addAxis(yAxis_, Qt::AlignLeft);
  for (QXYSeries* s : all) s->attachAxis(yAxis_);
  zoomed_ = false;
  // The points follow on the next turn, once: switching to × best sets the metric as well, and a
  // rebuild for each would draw the chart twice. The new axis's range change asked for a
  // re-decimation, which the rebuild does.
  dirty_ = true;
  fullRebuild_ = true;
  decimateTimer_.stop();
  if (isVisible()) rebuildTimer_.start(0);
}

void TrialChartView::setYMetric(const ChartMetric& metric) {
  if (metric == yMetric_) return;
  yMetric_ = metric;
  applyLogBase();
  zoomed_ = false;
  markDirty();
}

void TrialChartView::applyLogBase() {
  if (log_) static_cast<QLogValueAxis*>(yAxis_)->setBase(logBase());
}

void TrialChartView::setShowNoise(bool on) {
  if (on == showNoise_) return;
  showNoise_ = on;
  chart()->setTitle(decoratedTitle());
  viewport()->update();
}

QString TrialChartView::decoratedTitle() const {
  return drawsSpread() && showNoise_ ? tr("%1 · bars: median ± std within min–max").arg(title()) : title();
}

bool TrialChartView::learnBests(bool all) {
  if (all) yMetric_.forgetBests();
  return yMetric_.learnBests(model_->trials(), all ? 0 : builtRows_);
}

void TrialChartView::setHighlightedTrial(qint64 id) {
  highlighted_ = id;
  updateHighlight();
}

void TrialChartView::resetZoom() {
  zoomed_ = false;
  fitAxes();
  decimate();
  updateHighlight();
}

QList<QPointF> TrialChartView::dataValues() const {
  QList<QPointF> out;
  out.reserve(static_cast<qsizetype>(points_.size()));
  for (const Point& p : points_) out.append(QPointF(p.x, p.y));
  return out;
}

int TrialChartView::drawnPoints() const { return static_cast<int>(drawn_.size()); }

void TrialChartView::syncGroups() {
  groups_ = groups();
  const std::vector<Group>& wanted = groups_;
  while (groupSeries_.size() > static_cast<qsizetype>(wanted.size())) {
    QScatterSeries* s = groupSeries_.takeLast();
    chart()->removeSeries(s);
    delete s;
  }
  while (groupSeries_.size() < static_cast<qsizetype>(wanted.size())) {
    auto* s = new QScatterSeries(this);
    s->setMarkerSize(kMarkerPixels);  // its legend marker; the points are the marker layer's
    s->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    s->setPen(Qt::NoPen);
    groupSeries_.append(s);
    chart()->addSeries(s);
    attach(s);
    // Points stay under the lines, the winners and the selection ring.
    for (QXYSeries* a : extraSeries_) {
      chart()->removeSeries(a);
      chart()->addSeries(a);
      attach(a);
    }
    raiseOverlays();
  }
  applyLegend();
  sprites_.clear();  // the groups' colours and markers may have changed
  for (qsizetype i = 0; i < groupSeries_.size(); ++i) {
    const Group& g = wanted[static_cast<std::size_t>(i)];
    groupSeries_[i]->setName(g.name);
    groupSeries_[i]->setMarkerShape(g.marker);
    QColor c = g.color;
    c.setAlpha(170);
    groupSeries_[i]->setColor(c);
  }
}

void TrialChartView::collect(std::size_t fromRow, std::vector<Point>* out) {
  const std::vector<Trial>& trials = model_->trials();
  const std::string shape = sstr(shape_);
  for (std::size_t row = fromRow; row < trials.size(); ++row) {
    const Trial& t = trials[row];
    if (!shape.empty() && t.problem_key != shape) continue;
    const std::int64_t measured = t.stats.count > 0 ? measured_++ : -1;
    double x, y;
    int group;
    if (!pointFor(t, measured, &x, &y, &group) || !std::isfinite(x)) continue;
    const bool band = y == kFailedBand;
    if (band) {
      y = bandLines_[static_cast<std::size_t>(t.status)];  // placed again when the axes are fit
    } else if (!std::isfinite(y) || (log_ && y <= 0)) {
      continue;
    }
    out->push_back(Point{x, y, group, static_cast<int>(row), band});
  }
}

void TrialChartView::rebuild() {
  dirty_ = false;
  decimateTimer_.stop();  // this places the markers itself
  sinceRebuild_.start();
  const std::size_t rows = model_->trials().size();
  // Appended trials only: place the new points into the cells already drawn, unless they fall
  // outside the fitted view or bring a new group, which need the full pass.
  const bool growing = !fullRebuild_ && rows >= builtRows_;
  // Under × best, a shape's new best moves every point of that shape: the full pass.
  const bool bestMoved = growing && yMetric_.isVsBest() && learnBests(false);
  if (growing && !bestMoved && groups().size() == static_cast<std::size_t>(groupSeries_.size())) {
    std::vector<Point> fresh;
    collect(builtRows_, &fresh);
    const bool inView = std::all_of(fresh.begin(), fresh.end(), [&](const Point& p) {
      return p.x >= ranges_[0] && p.x <= ranges_[1] && p.y >= ranges_[2] && p.y <= ranges_[3];
    });
    // The first failure brings the band, a new parameter value a new axis: both need the full pass.
    const bool bandKnown = hasBand_ || std::none_of(fresh.begin(), fresh.end(), [](const Point& p) { return p.band; });
    if (!needsPrepare() && bandKnown && (zoomed_ || inView)) {
      builtRows_ = rows;
      const std::size_t first = points_.size();
      for (const Point& p : fresh) {
        pointById_.insert(model_->trial(p.row).id, static_cast<int>(points_.size()));
        points_.push_back(p);
      }
      placeMarkers(first, /*replace=*/false);
      rebuildExtras(points_);
      updateWinners();
      updateHighlight();
      return;
    }
  }
  fullRebuild_ = false;
  builtRows_ = rows;
  measured_ = 0;
  prepare(sstr(shape_));
  if (yMetric_.isLatency() && drawsSpread()) chooseTimeUnit(sstr(shape_));
  if (yMetric_.isVsBest()) learnBests(true);
  syncGroups();
  chart()->setTitle(decoratedTitle());
  xAxis_->setTitleText(xTitle());
  yAxis_->setTitleText(yTitle());
  points_.clear();
  pointById_.clear();
  points_.reserve(rows);
  collect(0, &points_);
  for (std::size_t i = 0; i < points_.size(); ++i)
    pointById_.insert(model_->trial(points_[i].row).id, static_cast<int>(i));
  if (!zoomed_) fitAxes(growing);
  // Extras may widen the axes (a ceiling above the points): before the markers are placed, so
  // they are placed once, for the range they are drawn in.
  rebuildExtras(points_);
  decimate();
  updateWinners();
  updateHighlight();
}

void TrialChartView::xRange(double x0, double x1, double* lo, double* hi) const {
  const double pad = x1 > x0 ? (x1 - x0) * 0.03 : std::max(1.0, std::abs(x0) * 0.1);
  *lo = x0 >= 0 ? std::max(0.0, x0 - pad) : x0 - pad;
  *hi = x1 + pad;
}

void TrialChartView::fitAxes(bool growing) {
  double x0 = std::numeric_limits<double>::max(), x1 = std::numeric_limits<double>::lowest();
  double y0 = x0, y1 = x1;
  hasBand_ = false;
  for (const Point& p : points_) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    hasBand_ = hasBand_ || p.band;
    if (p.band) continue;
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  if (points_.empty()) x0 = 0, x1 = 1;
  if (y0 > y1) y0 = log_ ? 1 : 0, y1 = 10;
  double lo, hi;
  xRange(x0, x1, &lo, &hi);
  settingRange_ = true;
  // While trials stream in, room on the right lets the next ones land without a refit.
  if (growing) hi = std::max(hi, x1 + (x1 - x0) * kHeadroom);
  xAxis_->setRange(lo, hi);
  if (log_) {
    yAxis_->setRange(y0 / 1.3, y1 * 1.3);
    placeBand(y1 * 1.3);
  } else {
    const double ypad = y1 > y0 ? (y1 - y0) * 0.06 : std::max(1e-3, std::abs(y0) * 0.1);
    yAxis_->setRange(y0 >= 0 ? std::max(0.0, y0 - ypad) : y0 - ypad, y1 + ypad);
    placeBand(y1 + ypad);
  }
  settingRange_ = false;
  saveRanges();
  updateTicks();
}

void TrialChartView::placeBand(double dataTop) {
  if (!hasBand_) return;
  // A strip a sixth of the plot high above the highest time, one line in it per failing status,
  // so failures of different kinds at one x do not hide one another.
  const bool lg = log_;
  const double l0 = lg ? std::log10(yMin()) : yMin(), l1 = lg ? std::log10(dataTop) : dataTop, h = (l1 - l0) / 6;
  const auto back = [lg](double v) { return lg ? std::pow(10.0, v) : v; };
  bandLow_ = dataTop;
  yAxis_->setMax(back(l1 + h));
  std::vector<TrialStatus> failing;
  for (TrialStatus s : kAllTrialStatuses)
    if (failed(s)) failing.push_back(s);
  for (std::size_t i = 0; i < failing.size(); ++i)
    bandLines_[static_cast<std::size_t>(failing[i])] =
        back(l1 + h * (0.3 + 0.5 * static_cast<double>(i) / static_cast<double>(failing.size() - 1)));
  for (Point& p : points_)
    if (p.band) p.y = bandLines_[static_cast<std::size_t>(model_->trial(p.row).status)];
}

void TrialChartView::updateTicks() {
  setAxisTicks(xAxis_, xTicks(xAxis_->min(), xAxis_->max()));
  if (log_) return;
  auto* y = static_cast<QCategoryAxis*>(yAxis_);
  // No time ticks in the failures band.
  const double top = hasBand_ && !zoomed_ ? std::min(y->max(), bandLow_) : y->max();
  setAxisTicks(y, niceTicks(y->min(), top, 6));
}

void TrialChartView::chooseTimeUnit(const std::string& shape) {
  std::vector<double> medians;
  const std::vector<Trial>& trials = model_->trials();
  // A strided sample tells the unit as well as every trial.
  const std::size_t stride = std::max<std::size_t>(1, trials.size() / 20000);
  for (std::size_t r = 0; r < trials.size(); r += stride)
    if (trials[r].stats.count > 0 && (shape.empty() || trials[r].problem_key == shape))
      medians.push_back(trials[r].stats.median_ns);
  yMetric_.setTimeUnit(timeUnitFor(medianOf(std::move(medians))));
}

QStringList TrialChartView::xTickLabels() const { return xAxis_->categoriesLabels(); }
QStringList TrialChartView::yTickLabels() const {
  return log_ ? QStringList() : static_cast<QCategoryAxis*>(yAxis_)->categoriesLabels();
}

QString TrialChartView::statusLegend(TrialStatus status) const {
  // A slow_abort's time is a lower bound; what else it recorded (a clock) was read as it ran.
  if (status == TrialStatus::SlowAbort && yMetric_.isTime()) return tr("slow_abort ↑ (stopped early: a lower bound)");
  return statusLabel(status);
}

void TrialChartView::ensureYIncludes(double value) {
  if (zoomed_) return;
  if (log_) {
    auto* axis = static_cast<QLogValueAxis*>(yAxis_);
    if (value <= axis->max()) return;
    settingRange_ = true;
    axis->setMax(value);
  } else {
    auto* axis = static_cast<QValueAxis*>(yAxis_);
    if (value <= axis->max()) return;
    settingRange_ = true;
    axis->setMax(value);
  }
  settingRange_ = false;
  saveRanges();
  updateTicks();
  decimate();
}

void TrialChartView::onRangeChanged() {
  // Zooming and panning mark zoomed_ themselves; anything else moving the axes (Qt Charts
  // fitting a series it was handed) gets the fitted or zoomed view back on the next turn.
  if (!settingRange_) {
    updateTicks();
    decimateTimer_.start(0);
  }
}

void TrialChartView::zoomTo(const QRectF& plotRect) {
  zoomed_ = true;
  chart()->zoomIn(plotRect);
  saveRanges();
}

void TrialChartView::saveRanges() { ranges_ = {xAxis_->min(), xAxis_->max(), yMin(), yMax()}; }

double TrialChartView::yMin() const {
  return log_ ? static_cast<QLogValueAxis*>(yAxis_)->min() : static_cast<QValueAxis*>(yAxis_)->min();
}
double TrialChartView::yMax() const {
  return log_ ? static_cast<QLogValueAxis*>(yAxis_)->max() : static_cast<QValueAxis*>(yAxis_)->max();
}

void TrialChartView::restoreRanges() {
  if (xAxis_->min() == ranges_[0] && xAxis_->max() == ranges_[1] && yMin() == ranges_[2] && yMax() == ranges_[3])
    return;
  settingRange_ = true;
  xAxis_->setRange(ranges_[0], ranges_[1]);
  yAxis_->setRange(ranges_[2], ranges_[3]);
  settingRange_ = false;
}

QPointF TrialChartView::toPixels(double x, double y, const QRectF& plot) const {
  const double xmin = xAxis_->min(), xmax = xAxis_->max();
  double ymin, ymax, yv = y;
  if (log_) {
    auto* axis = static_cast<QLogValueAxis*>(yAxis_);
    ymin = std::log10(axis->min());
    ymax = std::log10(axis->max());
    yv = std::log10(y);
  } else {
    auto* axis = static_cast<QValueAxis*>(yAxis_);
    ymin = axis->min();
    ymax = axis->max();
  }
  return {plot.left() + (x - xmin) / (xmax - xmin) * plot.width(),
          plot.bottom() - (yv - ymin) / (ymax - ymin) * plot.height()};
}

void TrialChartView::decimate() { placeMarkers(0, /*replace=*/true); }

void TrialChartView::placeMarkers(std::size_t first, bool replace) {
  restoreRanges();
  QRectF plot = chart()->plotArea();
  if (plot.width() < 10 || plot.height() < 10) plot = QRectF(0, 0, 800, 500);  // not laid out yet
  const int cols = static_cast<int>(plot.width()) / kCellPixels + 1;
  const int rows = static_cast<int>(plot.height()) / kCellPixels + 1;
  const int groupCount = static_cast<int>(groupSeries_.size());
  const TrialBrush* brush = model_->brush();
  // Under a brush, brushed and dimmed trials compete for cells of their own.
  const int layers = brush->active() ? 2 : 1;
  const std::size_t cells = static_cast<std::size_t>(cols) * rows * std::max(groupCount, 1) * layers;
  if (replace || plot != cellPlot_ || taken_.size() != cells) {
    // A new view: every point competes for the cells again.
    first = 0;
    taken_.assign(cells, false);
    drawn_.clear();
    cellPlot_ = plot;
  }
  drawnPerGroup_.resize(static_cast<std::size_t>(groupCount));
  if (first == 0) std::fill(drawnPerGroup_.begin(), drawnPerGroup_.end(), 0);
  for (std::size_t i = first; i < points_.size(); ++i) {
    const Point& p = points_[i];
    if (p.group < 0 || p.group >= groupCount) continue;
    const QPointF px = toPixels(p.x, p.y, plot);
    const int cx = static_cast<int>(std::floor((px.x() - plot.left()) / kCellPixels));
    const int cy = static_cast<int>(std::floor((px.y() - plot.top()) / kCellPixels));
    if (cx < 0 || cy < 0 || cx >= cols || cy >= rows) continue;  // outside the zoomed view
    const bool dimmed = brush->active() && !brush->contains(model_->trial(p.row).id);
    const std::size_t layer = static_cast<std::size_t>(p.group) * layers + (dimmed ? 1 : 0);
    const std::size_t cell = (layer * rows + cy) * cols + cx;
    if (taken_[cell]) continue;
    taken_[cell] = true;
    ++drawnPerGroup_[static_cast<std::size_t>(p.group)];
    drawn_.push_back(Marker{px, p.row, p.x, p.y, p.group, dimmed});
  }
  for (int g = 0; g < groupCount; ++g) {
    const auto markers = chart()->legend()->markers(groupSeries_[g]);
    const Legend legend = groups_[static_cast<std::size_t>(g)].legend;
    const bool show =
        legend == Legend::Always || (legend == Legend::IfDrawn && drawnPerGroup_[static_cast<std::size_t>(g)] > 0);
    if (!markers.isEmpty()) markers.first()->setVisible(show);  // see applyLegend()
  }
  markerLayerChanged(plot);
  restoreRanges();
}

void TrialChartView::updateHighlight() {
  const auto it = pointById_.constFind(highlighted_);
  if (highlighted_ < 0 || it == pointById_.constEnd()) {
    highlight_->clear();
    return;
  }
  const Point& p = points_[static_cast<std::size_t>(*it)];
  highlight_->replace(QList<QPointF>{QPointF(p.x, p.y)});
}

}  // namespace ktune::gui
