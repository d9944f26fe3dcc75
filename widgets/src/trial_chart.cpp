#include "ktune/widgets/trial_chart.h"

#include <QChart>
#include <QGraphicsLayout>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPainter>
#include <QScatterSeries>
#include <QSvgGenerator>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
constexpr double kPickPixels = 7;
}

void exportWidget(QWidget* widget, const QString& file) {
  if (file.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(file);
    svg.setSize(widget->size());
    svg.setViewBox(widget->rect());
    svg.setTitle(widget->windowTitle());
    QPainter painter;
    if (!painter.begin(&svg))
      throw InputError("cannot write " + sstr(file) + ": check that its folder exists and is writable");
    widget->render(&painter);
    painter.end();
    return;
  }
  const qreal scale = 2;  // crisp in documents
  QImage image(widget->size() * scale, QImage::Format_ARGB32);
  image.setDevicePixelRatio(scale);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    widget->render(&painter);
  }
  if (!image.save(file))
    throw InputError("cannot write " + sstr(file) + ": use a .png or .svg name in a writable folder");
}

TrialChartView::TrialChartView(TrialsModel* model, QWidget* parent)
    : QChartView(new QChart, parent), model_(model) {
  setRenderHint(QPainter::Antialiasing);
  viewport()->setMouseTracking(true);
  chart()->layout()->setContentsMargins(0, 0, 0, 0);
  chart()->setMargins(QMargins(6, 6, 6, 6));
  chart()->legend()->setAlignment(Qt::AlignBottom);
  chart()->setAnimationOptions(QChart::NoAnimation);
  xAxis_ = new QValueAxis(this);
  xAxis_->setLabelFormat(QStringLiteral("%g"));
  // More ticks let nice numbers hug the data (3 ticks round 517 up to 1000).
  xAxis_->setTickCount(6);
  chart()->addAxis(xAxis_, Qt::AlignBottom);
  auto* y = new QValueAxis(this);
  y->setLabelFormat(QStringLiteral("%g"));
  y->setTickCount(6);
  yAxis_ = y;
  chart()->addAxis(yAxis_, Qt::AlignLeft);
  connect(xAxis_, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
  connect(y, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);

  highlight_ = new QScatterSeries(this);
  highlight_->setMarkerSize(16);
  highlight_->setColor(Qt::transparent);
  highlight_->setBorderColor(QColor(0x21, 0x21, 0x21));
  highlight_->setPen(QPen(QColor(0x21, 0x21, 0x21), 2.5));
  chart()->addSeries(highlight_);
  attach(highlight_);
  chart()->legend()->markers(highlight_).first()->setVisible(false);

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
}

void TrialChartView::attach(QXYSeries* series) {
  series->attachAxis(xAxis_);
  series->attachAxis(yAxis_);
}

void TrialChartView::addExtraSeries(QXYSeries* series, bool inLegend) {
  extraSeries_.append(series);
  chart()->addSeries(series);
  attach(series);
  // Extras draw over the points but under the selection ring.
  chart()->removeSeries(highlight_);
  chart()->addSeries(highlight_);
  attach(highlight_);
  chart()->legend()->markers(highlight_).first()->setVisible(false);
  if (!inLegend) notInLegend_.insert(series);
  applyLegend();
}

void TrialChartView::applyLegend() {
  for (QXYSeries* s : extraSeries_) {
    QLegendMarker* marker = chart()->legend()->markers(s).first();
    const bool show = !notInLegend_.contains(s) && s->count() > 0;
    if (marker->isVisible() != show) marker->setVisible(show);
  }
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
  all << highlight_;
  for (QXYSeries* s : all) s->detachAxis(old);
  chart()->removeAxis(old);
  old->deleteLater();
  if (on) {
    auto* axis = new QLogValueAxis(this);
    axis->setBase(10);
    axis->setLabelFormat(QStringLiteral("%g"));
    axis->setMinorTickCount(-1);
    connect(axis, &QLogValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
    yAxis_ = axis;
  } else {
    auto* axis = new QValueAxis(this);
    axis->setLabelFormat(QStringLiteral("%g"));
    axis->setTickCount(6);
    connect(axis, &QValueAxis::rangeChanged, this, &TrialChartView::onRangeChanged);
    yAxis_ = axis;
  }
  yAxis_->setTitleText(yTitle());
  chart()->addAxis(yAxis_, Qt::AlignLeft);
  for (QXYSeries* s : all) s->attachAxis(yAxis_);
  zoomed_ = false;
  fullRebuild_ = true;
  rebuild();
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

int TrialChartView::drawnPoints() const { return static_cast<int>(drawn_.size()); }

void TrialChartView::syncGroups() {
  const std::vector<Group> wanted = groups();
  while (groupSeries_.size() > static_cast<qsizetype>(wanted.size())) {
    QScatterSeries* s = groupSeries_.takeLast();
    chart()->removeSeries(s);
    delete s;
  }
  while (groupSeries_.size() < static_cast<qsizetype>(wanted.size())) {
    auto* s = new QScatterSeries(this);
    s->setMarkerSize(7);
    s->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    s->setPen(Qt::NoPen);
    groupSeries_.append(s);
    chart()->addSeries(s);
    attach(s);
    // Points stay under the lines and the selection ring.
    QList<QXYSeries*> above(extraSeries_.begin(), extraSeries_.end());
    above << highlight_;
    for (QXYSeries* a : above) {
      chart()->removeSeries(a);
      chart()->addSeries(a);
      attach(a);
    }
  }
  applyLegend();
  for (qsizetype i = 0; i < groupSeries_.size(); ++i) {
    groupSeries_[i]->setName(wanted[static_cast<std::size_t>(i)].name);
    QColor c = wanted[static_cast<std::size_t>(i)].color;
    c.setAlpha(170);
    groupSeries_[i]->setColor(c);
  }
}

void TrialChartView::collect(std::size_t fromRow, std::vector<Point>* out) const {
  const std::vector<Trial>& trials = model_->trials();
  const std::string shape = sstr(shape_);
  for (std::size_t row = fromRow; row < trials.size(); ++row) {
    const Trial& t = trials[row];
    if (!shape.empty() && t.problem_key != shape) continue;
    double x, y;
    int group;
    if (!pointFor(t, &x, &y, &group) || !std::isfinite(x) || !std::isfinite(y)) continue;
    if (log_ && y <= 0) continue;
    out->push_back(Point{x, y, group, static_cast<int>(row)});
  }
}

void TrialChartView::rebuild() {
  dirty_ = false;
  sinceRebuild_.start();
  const std::size_t rows = model_->trials().size();
  // Appended trials only: place the new points into the cells already drawn, unless they fall
  // outside the fitted view or bring a new group, which need the full pass.
  const bool growing = !fullRebuild_ && rows >= builtRows_;
  if (growing && groups().size() == static_cast<std::size_t>(groupSeries_.size())) {
    std::vector<Point> fresh;
    collect(builtRows_, &fresh);
    const bool inView = std::all_of(fresh.begin(), fresh.end(), [&](const Point& p) {
      return p.x >= ranges_[0] && p.x <= ranges_[1] && p.y >= ranges_[2] && p.y <= ranges_[3];
    });
    if (zoomed_ || inView) {
      builtRows_ = rows;
      const std::size_t first = points_.size();
      for (const Point& p : fresh) {
        pointById_.insert(model_->trial(p.row).id, static_cast<int>(points_.size()));
        points_.push_back(p);
      }
      placeMarkers(first, /*replace=*/false);
      rebuildExtras(points_);
      applyLegend();
      updateHighlight();
      return;
    }
  }
  fullRebuild_ = false;
  builtRows_ = rows;
  syncGroups();
  xAxis_->setTitleText(xTitle());
  yAxis_->setTitleText(yTitle());
  points_.clear();
  pointById_.clear();
  points_.reserve(rows);
  collect(0, &points_);
  for (std::size_t i = 0; i < points_.size(); ++i) pointById_.insert(model_->trial(points_[i].row).id, static_cast<int>(i));
  if (!zoomed_) fitAxes(growing);
  decimate();
  rebuildExtras(points_);
  applyLegend();
  updateHighlight();
}

void TrialChartView::fitAxes(bool growing) {
  double x0 = std::numeric_limits<double>::max(), x1 = std::numeric_limits<double>::lowest();
  double y0 = x0, y1 = x1;
  for (const Point& p : points_) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  if (points_.empty()) {
    x0 = 0, x1 = 1, y0 = log_ ? 1 : 0, y1 = 10;
  }
  const double xpad = x1 > x0 ? (x1 - x0) * 0.03 : std::max(1.0, std::abs(x0) * 0.1);
  settingRange_ = true;
  // While trials stream in, room on the right lets the next ones land without a refit.
  const double right = growing ? std::max(xpad, (x1 - x0) * kHeadroom) : xpad;
  xAxis_->setRange(x0 >= 0 ? std::max(0.0, x0 - xpad) : x0 - xpad, x1 + right);
  xAxis_->applyNiceNumbers();
  if (log_) {
    yAxis_->setRange(y0 / 1.3, y1 * 1.3);
  } else {
    const double ypad = y1 > y0 ? (y1 - y0) * 0.06 : std::max(1e-3, std::abs(y0) * 0.1);
    auto* axis = static_cast<QValueAxis*>(yAxis_);
    axis->setRange(y0 >= 0 ? std::max(0.0, y0 - ypad) : y0 - ypad, y1 + ypad);
    axis->applyNiceNumbers();
  }
  settingRange_ = false;
  saveRanges();
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
    axis->applyNiceNumbers();
  }
  settingRange_ = false;
  saveRanges();
  decimate();
}

void TrialChartView::onRangeChanged() {
  // Zooming and panning mark zoomed_ themselves; anything else moving the axes (Qt Charts
  // fitting a series it was handed) gets the fitted or zoomed view back on the next turn.
  if (!settingRange_) decimateTimer_.start(0);
}

void TrialChartView::zoomTo(const QRectF& plotRect) {
  zoomed_ = true;
  chart()->zoomIn(plotRect);
  saveRanges();
}

void TrialChartView::saveRanges() {
  ranges_ = {xAxis_->min(), xAxis_->max(), yMin(), yMax()};
}

double TrialChartView::yMin() const {
  return log_ ? static_cast<QLogValueAxis*>(yAxis_)->min() : static_cast<QValueAxis*>(yAxis_)->min();
}
double TrialChartView::yMax() const {
  return log_ ? static_cast<QLogValueAxis*>(yAxis_)->max() : static_cast<QValueAxis*>(yAxis_)->max();
}

void TrialChartView::restoreRanges() {
  if (xAxis_->min() == ranges_[0] && xAxis_->max() == ranges_[1] && yMin() == ranges_[2] && yMax() == ranges_[3]) return;
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
  const std::size_t cells = static_cast<std::size_t>(cols) * rows * std::max(groupCount, 1);
  if (replace || plot != cellPlot_ || taken_.size() != cells) {
    // A new view: every point competes for the cells again.
    replace = true;
    first = 0;
    taken_.assign(cells, false);
    drawn_.clear();
    cellPlot_ = plot;
  }
  std::vector<QList<QPointF>> lists(static_cast<std::size_t>(groupCount));
  for (std::size_t i = first; i < points_.size(); ++i) {
    const Point& p = points_[i];
    if (p.group < 0 || p.group >= groupCount) continue;
    const QPointF px = toPixels(p.x, p.y, plot);
    const int cx = static_cast<int>(std::floor((px.x() - plot.left()) / kCellPixels));
    const int cy = static_cast<int>(std::floor((px.y() - plot.top()) / kCellPixels));
    if (cx < 0 || cy < 0 || cx >= cols || cy >= rows) continue;  // outside the zoomed view
    const std::size_t cell = (static_cast<std::size_t>(p.group) * rows + cy) * cols + cx;
    if (taken_[cell]) continue;
    taken_[cell] = true;
    lists[static_cast<std::size_t>(p.group)].append(QPointF(p.x, p.y));
    drawn_.push_back(Marker{px, p.row});
  }
  for (int g = 0; g < groupCount; ++g) {
    const QList<QPointF>& list = lists[static_cast<std::size_t>(g)];
    if (replace)
      groupSeries_[g]->replace(list);
    else if (!list.isEmpty())
      groupSeries_[g]->append(list);  // one call for the whole batch
    const auto markers = chart()->legend()->markers(groupSeries_[g]);
    const bool show = groupSeries_[g]->count() > 0;
    if (!markers.isEmpty() && markers.first()->isVisible() != show) markers.first()->setVisible(show);
  }
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

qint64 TrialChartView::trialAt(const QPointF& position) const {
  double best = kPickPixels * kPickPixels;
  int row = -1;
  for (const Marker& m : drawn_) {
    const QPointF d = m.pixels - position;
    const double dist = d.x() * d.x() + d.y() * d.y();
    if (dist < best) {
      best = dist;
      row = m.row;
    }
  }
  return row < 0 ? -1 : model_->trial(row).id;
}

bool TrialChartView::viewPositionOf(qint64 id, QPoint* position) const {
  const int row = model_->rowForId(id);
  for (const Marker& m : drawn_) {
    if (m.row != row) continue;
    *position = mapFromScene(chart()->mapToScene(m.pixels));
    return true;
  }
  return false;
}

QPointF TrialChartView::chartPosition(const QPoint& viewPosition) const {
  return chart()->mapFromScene(mapToScene(viewPosition));
}

void TrialChartView::wheelEvent(QWheelEvent* event) {
  const QRectF plot = chart()->plotArea();
  const QPointF c = chartPosition(event->position().toPoint());
  if (!plot.contains(c) || event->angleDelta().y() == 0) return;
  const double f = event->angleDelta().y() > 0 ? 0.8 : 1.25;
  zoomTo(QRectF(c.x() - (c.x() - plot.left()) * f, c.y() - (c.y() - plot.top()) * f, plot.width() * f, plot.height() * f));
  event->accept();
}

void TrialChartView::mousePressEvent(QMouseEvent* event) {
  pressAt_ = event->position().toPoint();
  if (event->button() == Qt::MiddleButton || (event->button() == Qt::LeftButton && event->modifiers() & Qt::ShiftModifier)) {
    panning_ = true;
    panFrom_ = pressAt_;
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  if (event->button() == Qt::LeftButton) {
    if (!band_) band_ = new QRubberBand(QRubberBand::Rectangle, viewport());
    band_->setGeometry(QRect(pressAt_, QSize()));
    band_->show();
    event->accept();
    return;
  }
  QChartView::mousePressEvent(event);
}

void TrialChartView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (panning_) {
    const QPoint d = pos - panFrom_;
    zoomed_ = true;
    chart()->scroll(-d.x(), d.y());
    saveRanges();
    panFrom_ = pos;
    return;
  }
  if (band_ && band_->isVisible()) {
    band_->setGeometry(QRect(pressAt_, pos).normalized());
    return;
  }
  const qint64 id = trialAt(chartPosition(pos));
  if (id >= 0)
    QToolTip::showText(event->globalPosition().toPoint(), describeTrial(model_->trial(model_->rowForId(id))), this);
  else
    QToolTip::hideText();
  QChartView::mouseMoveEvent(event);
}

void TrialChartView::mouseReleaseEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (panning_) {
    panning_ = false;
    viewport()->unsetCursor();
    return;
  }
  if (band_ && band_->isVisible() && event->button() == Qt::LeftButton) {
    band_->hide();
    const QRect r = QRect(pressAt_, pos).normalized();
    if (r.width() < 4 && r.height() < 4) {
      const qint64 id = trialAt(chartPosition(pos));
      if (id >= 0) {
        setHighlightedTrial(id);
        emit trialClicked(id);
      }
    } else {
      const QRectF chartRect(chartPosition(r.topLeft()), chartPosition(r.bottomRight()));
      zoomTo(chartRect.intersected(chart()->plotArea()));
    }
    return;
  }
  QChartView::mouseReleaseEvent(event);
}

void TrialChartView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    if (band_) band_->hide();
    resetZoom();
    return;
  }
  QChartView::mouseDoubleClickEvent(event);
}

// ---- LatencyOrderChart ----

LatencyOrderChart::LatencyOrderChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {
  chart()->setTitle(tr("Latency of every trial, in run order"));
}

QString LatencyOrderChart::xTitle() const { return tr("trial #"); }
QString LatencyOrderChart::yTitle() const { return tr("median latency (µs)"); }

std::vector<TrialChartView::Group> LatencyOrderChart::groups() const {
  std::vector<Group> g;
  for (TrialStatus s : kAllTrialStatuses) g.push_back(Group{statusLabel(s), statusColor(s)});
  return g;
}

bool LatencyOrderChart::pointFor(const Trial& t, double* x, double* y, int* group) const {
  if (t.stats.count == 0) return false;
  *x = static_cast<double>(t.id);
  *y = t.stats.median_ns / 1e3;
  *group = static_cast<int>(t.status);
  return true;
}

void LatencyOrderChart::rebuildExtras(const std::vector<Point>& points) {
  // Best so far per shape: a step line that only has a vertex where a new best appears.
  std::vector<std::string> keys;
  std::vector<QList<QPointF>> lines;
  std::vector<double> best;
  double lastX = 0;
  for (const Point& p : points) {
    lastX = std::max(lastX, p.x);
    const Trial& t = model()->trial(p.row);
    if (t.status != TrialStatus::Ok) continue;
    auto it = std::find(keys.begin(), keys.end(), t.problem_key);
    std::size_t k = static_cast<std::size_t>(it - keys.begin());
    if (it == keys.end()) {
      keys.push_back(t.problem_key);
      lines.emplace_back();
      best.push_back(std::numeric_limits<double>::max());
    }
    if (p.y < best[k]) {
      if (!lines[k].isEmpty()) lines[k].append(QPointF(p.x, best[k]));
      lines[k].append(QPointF(p.x, p.y));
      best[k] = p.y;
    }
  }
  while (bestLines_.size() < static_cast<qsizetype>(lines.size())) {
    auto* line = new QLineSeries(this);
    line->setPen(QPen(QColor(0x21, 0x21, 0x21), 1.8));
    addExtraSeries(line, bestLines_.isEmpty());
    bestLines_.append(line);
  }
  for (qsizetype i = 0; i < bestLines_.size(); ++i) {
    QList<QPointF> line = i < static_cast<qsizetype>(lines.size()) ? lines[static_cast<std::size_t>(i)] : QList<QPointF>{};
    if (!line.isEmpty()) line.append(QPointF(lastX, line.last().y()));
    bestLines_[i]->replace(line);
    bestLines_[i]->setName(lines.size() == 1 ? tr("best so far") : tr("best so far (per shape)"));
  }
}

// ---- ParameterChart ----

ParameterChart::ParameterChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {
  chart()->setTitle(tr("Latency against a parameter"));
}

void ParameterChart::setParameter(const QString& name) {
  if (name == parameter_) return;
  parameter_ = name;
  parameterStd_ = sstr(name);
  resetZoom();
  markDirty();
}

QString ParameterChart::xTitle() const { return parameter_.isEmpty() ? tr("(choose a parameter)") : parameter_; }
QString ParameterChart::yTitle() const { return tr("median latency (µs)"); }

std::vector<TrialChartView::Group> ParameterChart::groups() const {
  static const QColor palette[] = {QColor(0x15, 0x65, 0xc0), QColor(0xef, 0x6c, 0x00), QColor(0x2e, 0x7d, 0x32),
                                   QColor(0x8e, 0x24, 0xaa), QColor(0xc6, 0x28, 0x28), QColor(0x00, 0x83, 0x8f),
                                   QColor(0x6d, 0x4c, 0x41), QColor(0x75, 0x75, 0x75)};
  std::vector<Group> g;
  const QStringList keys = model()->problemKeys();
  for (qsizetype i = 0; i < keys.size(); ++i) g.push_back(Group{keys[i], palette[i % std::size(palette)]});
  return g;
}

bool ParameterChart::pointFor(const Trial& t, double* x, double* y, int* group) const {
  if (t.status != TrialStatus::Ok || parameterStd_.empty() || !t.config.has(parameterStd_)) return false;
  *x = static_cast<double>(t.config.get(parameterStd_));
  *y = t.stats.median_ns / 1e3;
  *group = static_cast<int>(model()->problemKeys().indexOf(qstr(t.problem_key)));
  return true;
}

// ---- ThroughputChart ----

ThroughputChart::ThroughputChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {
  chart()->setTitle(tr("Achieved throughput against the device's peak"));
  auto* peak = new QLineSeries(this);
  peak->setPen(QPen(QColor(0xc6, 0x28, 0x28), 2, Qt::DashLine));
  auto* roof = new QLineSeries(this);
  roof->setPen(QPen(QColor(0x6a, 0x1b, 0x9a), 1.5, Qt::DotLine));
  peakLine_ = peak;
  roofLine_ = roof;
  addExtraSeries(peakLine_);
  addExtraSeries(roofLine_);
}

void ThroughputChart::setPeaks(double peakGflopsF32, double peakGflopsF16, double bandwidthGbs) {
  peakF32_ = peakGflopsF32;
  peakF16_ = peakGflopsF16;
  bandwidth_ = bandwidthGbs;
  markDirty();
}

void ThroughputChart::setMetric(Metric metric) {
  if (metric == metric_) return;
  metric_ = metric;
  resetZoom();
  markDirty();
}

QString ThroughputChart::xTitle() const { return tr("trial #"); }
QString ThroughputChart::yTitle() const { return metric_ == Metric::Tflops ? tr("TFLOP/s") : tr("GB/s"); }

std::vector<TrialChartView::Group> ThroughputChart::groups() const {
  return {Group{tr("ok"), statusColor(TrialStatus::Ok)}};
}

bool ThroughputChart::pointFor(const Trial& t, double* x, double* y, int* group) const {
  if (t.status != TrialStatus::Ok) return false;
  *x = static_cast<double>(t.id);
  *y = metric_ == Metric::Tflops ? t.tflops : t.gbps;
  *group = 0;
  return *y > 0;
}

double ThroughputChart::peakFor(const Trial& t) const {
  if (metric_ == Metric::Gbps) return bandwidth_;
  const bool half = t.problem_key.find("dtype=f16") != std::string::npos || t.problem_key.find("dtype=bf16") != std::string::npos;
  return (half && peakF16_ > 0 ? peakF16_ : peakF32_) / 1e3;
}

double ThroughputChart::boundFor(const Trial& t) const {
  const double peak = peakFor(t);
  if (metric_ == Metric::Gbps || bandwidth_ <= 0 || t.gbps <= 0) return peak;
  const double intensity = t.tflops * 1e12 / (t.gbps * 1e9);  // FLOP per byte of minimum traffic
  return std::min(peak, intensity * bandwidth_ / 1e3);
}

void ThroughputChart::rebuildExtras(const std::vector<Point>& points) {
  QList<QPointF> peak, roof;
  double lastPeak = -1, lastRoof = -1, lastX = 0;
  for (const Point& p : points) {
    const Trial& t = model()->trial(p.row);
    const double pk = peakFor(t), rf = boundFor(t);
    if (pk > 0 && pk != lastPeak) {
      if (!peak.isEmpty()) peak.append(QPointF(p.x, lastPeak));
      peak.append(QPointF(p.x, pk));
      lastPeak = pk;
    }
    if (rf > 0 && rf != lastRoof) {
      if (!roof.isEmpty()) roof.append(QPointF(p.x, lastRoof));
      roof.append(QPointF(p.x, rf));
      lastRoof = rf;
    }
    lastX = p.x;
  }
  if (!peak.isEmpty()) peak.append(QPointF(lastX, lastPeak));
  if (!roof.isEmpty()) roof.append(QPointF(lastX, lastRoof));
  peakLine_->replace(peak);
  peakLine_->setName(metric_ == Metric::Tflops ? tr("device peak") : tr("memory bandwidth"));
  roofLine_->setName(tr("roofline bound of the shape"));
  if (metric_ == Metric::Gbps) roof.clear();  // the bandwidth line is the whole roof here
  roofLine_->replace(roof);
  // Keep the peak in view: the point of this chart is the distance to it.
  if (!peak.isEmpty()) ensureYIncludes(lastPeak * 1.05);
}

}  // namespace ktune::gui
