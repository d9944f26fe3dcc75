#include "ktune/widgets/parallel_coordinates.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
constexpr double kAxisReach = 10;  // pixels either side of an axis where a drag brushes it
constexpr double kLineReach = 6;   // pixels from a line where a click picks it
const QColor kBest(0x0d, 0x47, 0xa1);
const QColor kWorst(0x90, 0xca, 0xf9);
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Positions lo..hi onto 0..1; one value sits in the middle.
double unitOf(double v, double lo, double hi) { return hi > lo ? (v - lo) / (hi - lo) : 0.5; }
}  // namespace

ParallelCoordinates::ParallelCoordinates(const TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setMinimumSize(360, 220);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  setPalette(pal);
  // A new run's rows are other trials: nothing drawn or brushed may point into them. The brush's
  // end is told once the reset is over: views of the model (the trials table's proxy) must not
  // filter while it is under way.
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    lines_.clear();
    axes_.clear();
    hovered_ = -1;
    brushes_.clear();
    update();
    QMetaObject::invokeMethod(this, &ParallelCoordinates::applyBrushes, Qt::QueuedConnection);
  });
}

void ParallelCoordinates::setShape(const QString& problemKey) {
  if (problemKey == shape_) return;
  shape_ = problemKey;
  brushes_.clear();  // another shape's ranges mean nothing here
}

void ParallelCoordinates::setParameters(const QStringList& parameters) { parameters_ = parameters; }

void ParallelCoordinates::setCount(int n) { count_ = std::max(1, n); }

void ParallelCoordinates::refresh() {
  const std::string key = sstr(shape_);
  const std::vector<Trial>& trials = model_->trials();
  std::vector<int> rows;
  for (std::size_t r = 0; r < trials.size(); ++r)
    if (trials[r].problem_key == key && trials[r].status == TrialStatus::Ok && trials[r].stats.count > 0)
      rows.push_back(static_cast<int>(r));
  const auto faster = [&](int a, int b) {
    const Trial &ta = trials[static_cast<std::size_t>(a)], &tb = trials[static_cast<std::size_t>(b)];
    return ta.stats.median_ns != tb.stats.median_ns ? ta.stats.median_ns < tb.stats.median_ns : ta.id < tb.id;
  };
  const std::size_t n = std::min(rows.size(), static_cast<std::size_t>(count_));
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(n), rows.end(), faster);
  rows.resize(n);
  layoutAxes(rows);
  const int winnerRow = model_->winnerRow(key);
  for (Line& l : lines_) l.winner = l.row == winnerRow;
  hovered_ = -1;
  applyBrushes();
  update();
}

void ParallelCoordinates::layoutAxes(const std::vector<int>& rows) {
  axes_.clear();
  lines_.clear();
  for (int row : rows) lines_.push_back(Line{row, {}, false, true});
  for (const QString& name : parameters_) {
    const std::string p = sstr(name);
    std::vector<ParamValue> values;
    for (int row : rows)
      if (model_->trial(row).config.has(p)) values.push_back(model_->trial(row).config.value(p));
    const ParameterAxis axis(values, [&](const ParamValue& v) { return model_->parameterText(p, v); });
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    for (const ParamValue& v : values) {
      double x;
      axis.position(v, &x);
      lo = std::min(lo, x), hi = std::max(hi, x);
    }
    Axis a{name, {}};
    for (const AxisTick& t : axis.ticks(lo, hi)) a.ticks.push_back(AxisTick{unitOf(t.at, lo, hi), t.label});
    for (Line& l : lines_) {
      const Config& c = model_->trial(l.row).config;
      double x;
      l.t.push_back(c.has(p) && axis.position(c.value(p), &x) ? unitOf(x, lo, hi) : kNaN);
    }
    axes_.push_back(std::move(a));
  }
  // The latency axis, fastest at the bottom, in one unit chosen from the lines' times.
  std::vector<double> ns;
  for (const Line& l : lines_) ns.push_back(model_->trial(l.row).stats.median_ns);
  const TimeUnit unit = timeUnitFor(medianOf(ns));
  const double lo = ns.empty() ? 0 : *std::min_element(ns.begin(), ns.end()) / unit.ns;
  const double hi = ns.empty() ? 1 : *std::max_element(ns.begin(), ns.end()) / unit.ns;
  Axis latency{tr("median (%1)").arg(unit.name), {}};
  for (const AxisTick& t : niceTicks(lo, hi, 5)) latency.ticks.push_back(AxisTick{unitOf(t.at, lo, hi), t.label});
  if (latency.ticks.empty() && !ns.empty()) latency.ticks.push_back(AxisTick{0.5, QString::number(lo, 'g', 4)});
  for (std::size_t i = 0; i < lines_.size(); ++i) lines_[i].t.push_back(unitOf(ns[i] / unit.ns, lo, hi));
  axes_.push_back(std::move(latency));
  // A brush on an axis that is gone goes with it.
  const QStringList names = axisNames();
  for (const QString& name : brushes_.keys())
    if (!names.contains(name)) brushes_.remove(name);
}

QStringList ParallelCoordinates::axisNames() const {
  QStringList out;
  for (const Axis& a : axes_) out << a.name;
  return out;
}

QList<qint64> ParallelCoordinates::shownTrials() const {
  QList<qint64> out;
  for (const Line& l : lines_) out << model_->trial(l.row).id;
  return out;
}

QList<qint64> ParallelCoordinates::selectedTrials() const {
  QList<qint64> out;
  for (const Line& l : lines_)
    if (l.kept) out << model_->trial(l.row).id;
  return out;
}

void ParallelCoordinates::setBrush(int axis, double from, double to) {
  if (axis < 0 || axis >= static_cast<int>(axes_.size())) return;
  brushes_.insert(axes_[static_cast<std::size_t>(axis)].name, Range{std::min(from, to), std::max(from, to)});
  applyBrushes();
  update();
}

void ParallelCoordinates::clearBrush(int axis) {
  if (axis < 0 || axis >= static_cast<int>(axes_.size())) return;
  brushes_.remove(axes_[static_cast<std::size_t>(axis)].name);
  applyBrushes();
  update();
}

void ParallelCoordinates::clearBrushes() {
  brushes_.clear();
  applyBrushes();
  update();
}

void ParallelCoordinates::applyBrushes() {
  for (Line& l : lines_) {
    l.kept = true;
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      const auto it = brushes_.constFind(axes_[a].name);
      // A little slack, so a category drawn exactly at a brush's edge counts as inside it.
      if (it != brushes_.constEnd() && !(l.t[a] >= it->from - 1e-9 && l.t[a] <= it->to + 1e-9)) l.kept = false;
    }
  }
  const QList<qint64> kept = brushing() ? selectedTrials() : QList<qint64>();
  if (kept == lastKept_ && brushing() == lastBrushing_) return;
  lastKept_ = kept;
  lastBrushing_ = brushing();
  emit selectionChanged(kept, brushing());
}

double ParallelCoordinates::positionOf(qint64 id, int axis) const {
  for (const Line& l : lines_)
    if (model_->trial(l.row).id == id && axis >= 0 && axis < static_cast<int>(l.t.size()))
      return l.t[static_cast<std::size_t>(axis)];
  return kNaN;
}

QRectF ParallelCoordinates::plotRect() const {
  // Room for tick labels left of the first axis and names above the axes, the last one whole.
  return QRectF(64, 40, std::max(10, width() - 64 - 48), std::max(10, height() - 40 - 16));
}

double ParallelCoordinates::axisX(int axis) const {
  const QRectF r = plotRect();
  const int n = static_cast<int>(axes_.size());
  return n < 2 ? r.center().x() : r.left() + r.width() * axis / (n - 1);
}

QPoint ParallelCoordinates::pointOn(int axis, double t) const {
  const QRectF r = plotRect();
  return QPointF(axisX(axis), r.bottom() - t * r.height()).toPoint();
}

double ParallelCoordinates::heightAt(const QPointF& pos) const {
  const QRectF r = plotRect();
  return std::clamp((r.bottom() - pos.y()) / r.height(), 0.0, 1.0);
}

int ParallelCoordinates::axisNear(const QPointF& pos) const {
  const QRectF r = plotRect();
  if (pos.y() < r.top() - kAxisReach || pos.y() > r.bottom() + kAxisReach) return -1;
  for (int a = 0; a < static_cast<int>(axes_.size()); ++a)
    if (std::abs(pos.x() - axisX(a)) <= kAxisReach) return a;
  return -1;
}

int ParallelCoordinates::lineNear(const QPointF& pos) const {
  const int n = static_cast<int>(axes_.size());
  if (n < 2 || pos.x() < axisX(0) || pos.x() > axisX(n - 1)) return -1;
  int a = 0;
  while (a + 2 < n && pos.x() > axisX(a + 1)) ++a;
  const double f = (pos.x() - axisX(a)) / (axisX(a + 1) - axisX(a));
  const QRectF r = plotRect();
  int best = -1;
  double closest = kLineReach;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    const double t0 = lines_[i].t[static_cast<std::size_t>(a)], t1 = lines_[i].t[static_cast<std::size_t>(a) + 1];
    if (std::isnan(t0) || std::isnan(t1)) continue;
    const double y = r.bottom() - (t0 + (t1 - t0) * f) * r.height();
    // Kept lines before dropped ones, better before worse: the topmost line drawn wins a tie.
    const double d = std::abs(y - pos.y()) - (lines_[i].kept ? 0.5 : 0);
    if (d < closest) closest = d, best = static_cast<int>(i);
  }
  return best;
}

QColor ParallelCoordinates::lineColour(std::size_t rank) const {
  const double f = lines_.size() > 1 ? static_cast<double>(rank) / static_cast<double>(lines_.size() - 1) : 0;
  const auto mix = [f](int a, int b) { return static_cast<int>(a + (b - a) * f); };
  return QColor(mix(kBest.red(), kWorst.red()), mix(kBest.green(), kWorst.green()), mix(kBest.blue(), kWorst.blue()));
}

}  // namespace ktune::gui
