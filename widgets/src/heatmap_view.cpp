#include "ktune/widgets/heatmap_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ktune/csv.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
// Viridis, sampled: perceptually even and readable in grey, fast = dark.
const QColor kStops[] = {QColor(0x44, 0x01, 0x54), QColor(0x3b, 0x52, 0x8b), QColor(0x21, 0x90, 0x8d),
                         QColor(0x5d, 0xc9, 0x63), QColor(0xfd, 0xe7, 0x25)};
constexpr int kMargin = 8, kLeft = 64, kBottom = 44, kTop = 48, kBar = 70;
const QColor kFlagged(0xe6, 0x51, 0x00);
const QColor kDimWash(255, 255, 255, 185);  // over a cell without a brushed trial

// A trial of shape `key` with a value for both axes, whatever its status.
bool covers(const Trial& t, const std::string& key, const std::string& xn, const std::string& yn) {
  return t.problem_key == key && t.config.has(xn) && t.config.has(yn);
}
}  // namespace

HeatmapView::HeatmapView(TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setAutoFillBackground(true);
  setPalette(QPalette(Qt::white));
  setBackgroundRole(QPalette::Window);
  rebuildTimer_.setSingleShot(true);
  connect(&rebuildTimer_, &QTimer::timeout, this, &HeatmapView::rebuild);
  connect(model_, &QAbstractItemModel::rowsInserted, this, &HeatmapView::markDirty);
  connect(model_, &QAbstractItemModel::modelReset, this, &HeatmapView::markDirty);
  connect(model_, &TrialsModel::winnersChanged, this, &HeatmapView::markDirty);
  connect(model_->brush(), &TrialBrush::changed, this, qOverload<>(&QWidget::update));
}

void HeatmapView::markDirty() {
  dirty_ = true;
  // Same pace as the scatter charts while trials stream in.
  if (!isVisible() || rebuildTimer_.isActive()) return;
  const qint64 since = sinceRebuild_.isValid() ? sinceRebuild_.elapsed() : TrialChartView::kMinRebuildMs;
  rebuildTimer_.start(static_cast<int>(std::max<qint64>(0, TrialChartView::kMinRebuildMs - since)));
}

void HeatmapView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (dirty_) rebuildTimer_.start(0);
}

void HeatmapView::refresh() {
  rebuildTimer_.stop();
  rebuild();
}

void HeatmapView::setParameters(const QString& x, const QString& y) {
  xName_ = x;
  yName_ = y;
  markDirty();
}

void HeatmapView::setShapeFilter(const QString& problemKey) {
  shape_ = problemKey;
  markDirty();
}

QString HeatmapView::shape() const { return shape_.isEmpty() ? model_->problemKeys().value(0) : shape_; }

void HeatmapView::setHighlightedTrial(qint64 id) {
  highlighted_ = id;
  update();
}

void HeatmapView::exportTo(const QString& file) {
  if (dirty_) rebuild();
  if (file.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
    writeExport(file, csv());
    return;
  }
  // The picture names the whole shape and the run: it has no shape picker beside it.
  exporting_ = true;
  try {
    exportWidget(this, file, exportTitle());
  } catch (...) {
    exporting_ = false;
    throw;
  }
  exporting_ = false;
}

QString HeatmapView::titleText(bool whole) const {
  const QString title = tr("Best latency (%1) per %2 × %3 · %4")
                            .arg(unit_.name, xName_, yName_, whole ? shape() : model_->keyLabels().label(shape()));
  const QString run = model_->runName();
  return whole && !run.isEmpty() ? tr("%1 · run %2").arg(title, run) : title;
}

std::string HeatmapView::csv() const {
  std::vector<std::string> header = {sstr(xName_), sstr(yName_), sstr(tr("best (%1)").arg(unit_.name)),
                                     "cell",       "trial",      "crown"};
  for (TrialStatus s : kAllTrialStatuses) header.push_back(to_string(s));
  std::string out = csv::format_record(header);
  for (std::size_t cy = 0; cy < ys_.size(); ++cy)
    for (std::size_t cx = 0; cx < xs_.size(); ++cx) {
      const Cell& c = cells_[cy * xs_.size() + cx];
      const bool crowned = static_cast<int>(cy * xs_.size() + cx) == crownCell_;
      std::vector<std::string> row = {sstr(model_->parameterText(sstr(xName_), xs_[cx])),
                                      sstr(model_->parameterText(sstr(yName_), ys_[cy])),
                                      c.row >= 0 ? sstr(QString::number(c.best_ns / unit_.ns, 'g', 12)) : std::string(),
                                      sstr(textOf(c)),
                                      c.row >= 0 ? std::to_string(model_->trial(c.row).id) : std::string(),
                                      !crowned         ? std::string()
                                      : crownIsWinner_ ? "winner"
                                                       : "search best"};
      for (int n : c.counts) row.push_back(std::to_string(n));
      out += csv::format_record(row);
    }
  return out;
}

void HeatmapView::rebuild() {
  dirty_ = false;
  sinceRebuild_.start();
  xs_.clear();
  ys_.clear();
  cells_.clear();
  const std::string xn = sstr(xName_), yn = sstr(yName_), key = sstr(shape());
  if (!xn.empty() && !yn.empty()) collectCells(key, xn, yn);
  placeCrown(key, xn, yn);
  // The winner's cell shows the number it was chosen by.
  if (crownIsWinner_ && crownCell_ >= 0)
    if (const Winner* w = model_->winner(key))
      cells_[static_cast<std::size_t>(crownCell_)].best_ns = w->stats.median_ns;
  min_ns_ = std::numeric_limits<double>::max();
  max_ns_ = 0;
  std::vector<double> shown;
  for (const Cell& c : cells_) {
    if (c.row < 0) continue;
    min_ns_ = std::min(min_ns_, c.best_ns);
    max_ns_ = std::max(max_ns_, c.best_ns);
    shown.push_back(c.best_ns);
  }
  unit_ = timeUnitFor(medianOf(std::move(shown)));
  update();
}

void HeatmapView::collectCells(const std::string& key, const std::string& xn, const std::string& yn) {
  // Every trial of the shape gives its values a row and a column, so a value whose trials all
  // failed or stopped early stays, saying so.
  const std::vector<Trial>& trials = model_->trials();
  for (const Trial& t : trials) {
    if (!covers(t, key, xn, yn)) continue;
    xs_.push_back(t.config.value(xn));
    ys_.push_back(t.config.value(yn));
  }
  for (auto* v : {&xs_, &ys_}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  cells_.assign(xs_.size() * ys_.size(), Cell{});
  for (std::size_t row = 0; row < trials.size() && !xs_.empty(); ++row) {
    const Trial& t = trials[row];
    if (!covers(t, key, xn, yn)) continue;
    Cell& c = cells_[cellIndex(t, xn, yn)];
    ++c.counts[static_cast<std::size_t>(t.status)];
    if (t.stats.count == 0) continue;
    if (t.status == TrialStatus::Ok && (c.row < 0 || t.stats.median_ns < c.best_ns)) {
      c.best_ns = t.stats.median_ns;
      c.row = static_cast<int>(row);
    } else if (t.status == TrialStatus::SlowAbort && (c.slowRow < 0 || t.stats.median_ns < c.slow_ns)) {
      c.slow_ns = t.stats.median_ns;
      c.slowRow = static_cast<int>(row);
    }
  }
}

QString HeatmapView::timeText(double ns) const {
  const double v = ns / unit_.ns;
  return QString::number(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3);
}

QString HeatmapView::textOf(const Cell& c) const {
  if (c.row >= 0) return timeText(c.best_ns);
  if (c.slowRow >= 0) return QStringLiteral("≥ ") + timeText(c.slow_ns);
  const auto count = [&](TrialStatus s) { return c.counts[static_cast<std::size_t>(s)]; };
  int failures = 0;
  for (TrialStatus s : kAllTrialStatuses)
    if (TrialChartView::failed(s)) failures += count(s);
  if (failures > 0) return tr("failed");
  if (count(TrialStatus::Pruned) > 0) return tr("pruned");
  return tr("not measured");
}

QString HeatmapView::reasonOf(const Cell& c) const {
  QStringList parts;
  for (TrialStatus s : kAllTrialStatuses)
    if (const int n = c.counts[static_cast<std::size_t>(s)])
      parts << QStringLiteral("%1 %2").arg(n).arg(statusLabel(s));
  if (parts.isEmpty()) return tr("not measured: no trial with these values");
  QString text = tr("no ok trial: %1").arg(parts.join(QStringLiteral(", ")));
  if (c.slowRow >= 0)
    text += tr("\nslow_abort stops a config once it cannot beat the best: it is at least %1").arg(formatNs(c.slow_ns));
  return text;
}

const HeatmapView::Cell* HeatmapView::cellOf(const ParamValue& x, const ParamValue& y) const {
  const auto cx = std::find(xs_.begin(), xs_.end(), x);
  const auto cy = std::find(ys_.begin(), ys_.end(), y);
  if (cx == xs_.end() || cy == ys_.end()) return nullptr;
  return &cells_[static_cast<std::size_t>(cy - ys_.begin()) * xs_.size() + static_cast<std::size_t>(cx - xs_.begin())];
}

QString HeatmapView::cellText(const ParamValue& x, const ParamValue& y) const {
  const Cell* c = cellOf(x, y);
  return c ? textOf(*c) : QString();
}

std::vector<bool> HeatmapView::brushedMask() const {
  std::vector<bool> in(cells_.size(), false);
  const std::string xn = sstr(xName_), yn = sstr(yName_), key = sstr(shape());
  for (qint64 id : model_->brush()->ids()) {
    const int row = model_->rowForId(id);
    if (row < 0 || !covers(model_->trial(row), key, xn, yn)) continue;
    const Trial& t = model_->trial(row);
    // Only values the grid has: trials that came after its last rebuild wait for the next.
    if (!std::binary_search(xs_.begin(), xs_.end(), t.config.value(xn)) ||
        !std::binary_search(ys_.begin(), ys_.end(), t.config.value(yn)))
      continue;
    in[cellIndex(t, xn, yn)] = true;
  }
  return in;
}

HeatmapView::BrushCounts HeatmapView::brushCounts() const {
  BrushCounts c;
  if (!model_->brush()->active()) return c;
  for (bool in : brushedMask()) ++(in ? c.highlighted : c.dimmed);
  return c;
}

std::size_t HeatmapView::cellIndex(const Trial& t, const std::string& xn, const std::string& yn) const {
  const auto cx = std::lower_bound(xs_.begin(), xs_.end(), t.config.value(xn)) - xs_.begin();
  const auto cy = std::lower_bound(ys_.begin(), ys_.end(), t.config.value(yn)) - ys_.begin();
  return static_cast<std::size_t>(cy) * xs_.size() + static_cast<std::size_t>(cx);
}

QString HeatmapView::cellName(const Trial& t) const {
  return QStringLiteral("%1=%2, %3=%4")
      .arg(xName_, model_->parameterText(sstr(xName_), t.config.value(sstr(xName_))), yName_,
           model_->parameterText(sstr(yName_), t.config.value(sstr(yName_))));
}

void HeatmapView::placeCrown(const std::string& key, const std::string& xn, const std::string& yn) {
  crownId_ = -1;
  crownCell_ = -1;
  crownIsWinner_ = crownFlagged_ = false;
  crownText_.clear();
  if (const Winner* w = model_->winner(key)) {
    crownIsWinner_ = true;
    crownFlagged_ = w->flagged();
    const int row = model_->winnerRow(key);
    if (row < 0 || !covers(model_->trial(row), key, xn, yn) || xs_.empty()) {
      crownText_ = tr("★ winner %1: %2").arg(model_->configText(w->config), w->numberText());
      return;
    }
    const Trial& t = model_->trial(row);
    crownId_ = t.id;
    crownCell_ = static_cast<int>(cellIndex(t, xn, yn));
    crownText_ =
        tr("★ winner %1: %2").arg(cellName(t), w->numberText()) + (crownFlagged_ ? tr("  ⚠ flagged") : QString());
    return;
  }
  // Before the shape's result: the lowest cell is only the search's best.
  for (std::size_t i = 0; i < cells_.size(); ++i)
    if (cells_[i].row >= 0 &&
        (crownCell_ < 0 || cells_[i].best_ns < cells_[static_cast<std::size_t>(crownCell_)].best_ns))
      crownCell_ = static_cast<int>(i);
  if (crownCell_ < 0) return;
  const Trial& t = model_->trial(cells_[static_cast<std::size_t>(crownCell_)].row);
  crownId_ = t.id;
  crownText_ = tr("☆ search best %1: %2 (no winner yet: the best few are re-measured when the search ends)")
                   .arg(cellName(t), formatNs(t.stats.median_ns));
}

qint64 HeatmapView::bestTrialAt(const ParamValue& x, const ParamValue& y) const {
  const Cell* c = cellOf(x, y);
  return !c || c->row < 0 ? -1 : model_->trial(c->row).id;
}

QRectF HeatmapView::gridRect() const {
  return QRectF(kLeft, kTop, std::max(10, width() - kLeft - kBar - kMargin), std::max(10, height() - kTop - kBottom));
}

bool HeatmapView::cellAt(const QPointF& pos, int* cx, int* cy) const {
  const QRectF g = gridRect();
  if (xs_.empty() || ys_.empty() || !g.contains(pos)) return false;
  *cx = std::clamp(static_cast<int>((pos.x() - g.left()) / g.width() * static_cast<double>(xs_.size())), 0,
                   static_cast<int>(xs_.size()) - 1);
  // Row 0 (smallest y value) at the bottom, as on a chart.
  *cy = std::clamp(static_cast<int>((g.bottom() - pos.y()) / g.height() * static_cast<double>(ys_.size())), 0,
                   static_cast<int>(ys_.size()) - 1);
  return true;
}

QColor HeatmapView::colourFor(double ns) const {
  double f = 0;
  if (max_ns_ > min_ns_) f = (std::log(ns) - std::log(min_ns_)) / (std::log(max_ns_) - std::log(min_ns_));
  f = std::clamp(f, 0.0, 1.0) * (std::size(kStops) - 1);
  const int i = std::min(static_cast<int>(f), static_cast<int>(std::size(kStops)) - 2);
  const double t = f - i;
  const QColor a = kStops[i], b = kStops[i + 1];
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

void HeatmapView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  QFont titleFont = font();
  titleFont.setBold(true);
  p.setFont(titleFont);
  const QString title = titleText(exporting_);
  p.drawText(QRect(0, 4, width(), 20), Qt::AlignCenter,
             QFontMetrics(titleFont).elidedText(title, Qt::ElideMiddle, width() - 8));
  p.setFont(font());
  p.setPen(crownFlagged_ ? kFlagged : crownIsWinner_ ? Qt::black : Qt::darkGray);
  p.drawText(QRect(0, 24, width(), 18), Qt::AlignCenter,
             fontMetrics().elidedText(crownText_, Qt::ElideMiddle, width() - 8));
  const QRectF g = gridRect();
  if (xs_.empty() || ys_.empty()) {
    p.setPen(Qt::gray);
    p.drawText(g, Qt::AlignCenter | Qt::TextWordWrap,
               xName_.isEmpty() || yName_.isEmpty() ? tr("Choose two parameters.")
                                                    : tr("No trials of this shape with both parameters yet."));
    return;
  }
  const double cw = g.width() / static_cast<double>(xs_.size()), ch = g.height() / static_cast<double>(ys_.size());
  QFont small = font();
  small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
  p.setFont(small);
  const QFontMetrics fm(small);
  const std::vector<bool> brushed = brushedMask();
  const bool brushing = model_->brush()->active();
  for (std::size_t cy = 0; cy < ys_.size(); ++cy) {
    for (std::size_t cx = 0; cx < xs_.size(); ++cx) {
      const Cell& c = cells_[cy * xs_.size() + cx];
      const bool dimmed = brushing && !brushed[cy * xs_.size() + cx];
      const QRectF r(g.left() + static_cast<double>(cx) * cw, g.bottom() - static_cast<double>(cy + 1) * ch, cw, ch);
      const QString label = textOf(c);
      const bool fits = fm.horizontalAdvance(label) + 4 < cw && fm.height() < ch;
      if (c.row < 0) {
        paintEmpty(p, r, c);
        if (fits) {
          p.setPen(QColor(0x42, 0x42, 0x42));
          p.drawText(r, Qt::AlignCenter, label);
        }
        if (dimmed) p.fillRect(r, kDimWash);
        continue;
      }
      const QColor colour = colourFor(c.best_ns);
      p.fillRect(r.adjusted(0.5, 0.5, -0.5, -0.5), colour);
      if (fits) {
        p.setPen(colour.lightnessF() > 0.55 ? Qt::black : Qt::white);
        p.drawText(r, Qt::AlignCenter, label);
      }
      // Washed out under the crown and the selection, which still say where they are.
      if (dimmed) p.fillRect(r, kDimWash);
      if (static_cast<int>(cy * xs_.size() + cx) == crownCell_) paintCrown(p, r);
      if (highlighted_ >= 0 && model_->trial(c.row).id == highlighted_) {
        p.setPen(QPen(QColor(0xc6, 0x28, 0x28), 3));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(1.5, 1.5, -1.5, -1.5));
      }
    }
  }
  p.setPen(Qt::black);
  for (std::size_t cx = 0; cx < xs_.size(); ++cx)
    p.drawText(QRectF(g.left() + static_cast<double>(cx) * cw, g.bottom() + 2, cw, 16), Qt::AlignCenter,
               model_->parameterText(sstr(xName_), xs_[cx]));
  for (std::size_t cy = 0; cy < ys_.size(); ++cy)
    p.drawText(QRectF(0, g.bottom() - static_cast<double>(cy + 1) * ch, kLeft - 6, ch),
               Qt::AlignRight | Qt::AlignVCenter, model_->parameterText(sstr(yName_), ys_[cy]));
  p.setFont(font());
  p.drawText(QRectF(g.left(), g.bottom() + 20, g.width(), 20), Qt::AlignCenter, xName_);
  p.save();
  p.translate(12, g.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-g.height() / 2, -8, g.height(), 18), Qt::AlignCenter, yName_);
  p.restore();
  if (max_ns_ <= 0) return;  // no ok cell: no scale
  // Colour bar: fast at the bottom.
  const QRectF bar(g.right() + 12, g.top(), 14, g.height());
  for (int i = 0; i < static_cast<int>(bar.height()); ++i) {
    const double f = 1.0 - i / bar.height();
    p.fillRect(QRectF(bar.left(), bar.top() + i, bar.width(), 1.0),
               colourFor(std::exp(std::log(min_ns_) + f * (std::log(max_ns_) - std::log(min_ns_)))));
  }
  p.setFont(small);
  p.drawText(QRectF(bar.right() + 2, bar.top() - 2, kBar, 14), Qt::AlignLeft,
             timeText(max_ns_) + QLatin1Char(' ') + unit_.name);
  p.drawText(QRectF(bar.right() + 2, bar.bottom() - 12, kBar, 14), Qt::AlignLeft,
             timeText(min_ns_) + QLatin1Char(' ') + unit_.name);
}

void HeatmapView::paintEmpty(QPainter& p, const QRectF& r, const Cell& c) const {
  // Greys and hatching, no hue: on this page hues are the scale's and the statuses'.
  p.fillRect(r.adjusted(0.5, 0.5, -0.5, -0.5), QColor(0xf5, 0xf5, 0xf5));
  const int total = std::accumulate(c.counts.begin(), c.counts.end(), 0);
  if (total == 0) return;  // not measured: plain
  const Qt::BrushStyle hatch = c.slowRow >= 0 ? Qt::BDiagPattern
                               : c.counts[static_cast<std::size_t>(TrialStatus::Pruned)] == total
                                   ? Qt::Dense7Pattern
                                   : Qt::DiagCrossPattern;
  p.fillRect(r.adjusted(0.5, 0.5, -0.5, -0.5), QBrush(QColor(0xbd, 0xbd, 0xbd), hatch));
}

void HeatmapView::paintCrown(QPainter& p, const QRectF& cell) const {
  // A winner gets a solid gold frame and star; the search's best before the result a dashed one.
  const QColor colour = crownFlagged_ ? kFlagged : TrialChartView::winnerColour();
  p.save();
  p.setPen(QPen(colour, 3, crownIsWinner_ ? Qt::SolidLine : Qt::DashLine));
  p.setBrush(Qt::NoBrush);
  p.drawRect(cell.adjusted(1.5, 1.5, -1.5, -1.5));
  QFont star = font();
  star.setBold(true);
  p.setFont(star);
  const QRectF corner(cell.right() - 16, cell.top() + 1, 15, 15);
  p.setPen(colour.darker(130));
  p.drawText(corner, Qt::AlignCenter, crownIsWinner_ ? QStringLiteral("★") : QStringLiteral("☆"));
  p.restore();
}

void HeatmapView::mouseMoveEvent(QMouseEvent* event) {
  int cx, cy;
  if (!cellAt(event->position(), &cx, &cy)) {
    QToolTip::hideText();
    return;
  }
  const Cell& c = cells_[static_cast<std::size_t>(cy) * xs_.size() + static_cast<std::size_t>(cx)];
  if (c.row < 0) {
    QToolTip::showText(event->globalPosition().toPoint(),
                       QStringLiteral("%1=%2, %3=%4: ")
                               .arg(xName_, model_->parameterText(sstr(xName_), xs_[cx]), yName_,
                                    model_->parameterText(sstr(yName_), ys_[cy])) +
                           reasonOf(c),
                       this);
    return;
  }
  const bool crowned =
      static_cast<int>(static_cast<std::size_t>(cy) * xs_.size() + static_cast<std::size_t>(cx)) == crownCell_;
  QToolTip::showText(
      event->globalPosition().toPoint(),
      (crowned ? crownText_ + QStringLiteral("\n\n") : QString()) +
          tr("best search median of %1 trials:\n").arg(std::accumulate(c.counts.begin(), c.counts.end(), 0)) +
          model_->describe(model_->trial(c.row)),
      this);
}

void HeatmapView::mousePressEvent(QMouseEvent* event) {
  int cx, cy;
  if (event->button() != Qt::LeftButton || !cellAt(event->position(), &cx, &cy)) return;
  const Cell& c = cells_[static_cast<std::size_t>(cy) * xs_.size() + static_cast<std::size_t>(cx)];
  if (c.row < 0) return;
  const qint64 id = model_->trial(c.row).id;
  setHighlightedTrial(id);
  emit trialClicked(id);
}

}  // namespace ktune::gui
