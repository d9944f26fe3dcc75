// ParallelCoordinates on screen: its painting, brushing by drag, hover and click.
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "ktune/csv.h"
#include "ktune/widgets/parallel_coordinates.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
const QColor kDropped(0xcf, 0xd8, 0xdc);
const QColor kBrush(0xef, 0x6c, 0x00);
const QColor kAxis(0x45, 0x5a, 0x64);
constexpr double kMinBrush = 3;  // pixels: a shorter drag is a click, which clears the brush
}  // namespace

void ParallelCoordinates::paintEvent(QPaintEvent* /*event*/) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  if (lines_.empty()) {
    p.setPen(QColor(0x61, 0x61, 0x61));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               shape_.isEmpty() ? tr("Choose a shape.") : tr("No ok trial of this shape yet: nothing to compare."));
    return;
  }
  paintLines(p);
  paintAxes(p);
}

void ParallelCoordinates::paintLines(QPainter& p) const {
  const QRectF r = plotRect();
  const auto path = [&](const Line& l) {
    QPainterPath out;
    bool open = false;
    for (std::size_t a = 0; a < l.t.size(); ++a) {
      if (std::isnan(l.t[a])) {
        open = false;
        continue;
      }
      const QPointF at(axisX(static_cast<int>(a)), r.bottom() - l.t[a] * r.height());
      if (open)
        out.lineTo(at);
      else
        out.moveTo(at);
      open = true;
    }
    return out;
  };
  p.setBrush(Qt::NoBrush);
  // Dropped lines under kept ones, worse under better, the winner and the hovered line on top.
  for (const Line& l : lines_)
    if (!l.kept) p.strokePath(path(l), QPen(kDropped, 1.2));
  for (std::size_t i = lines_.size(); i-- > 0;)
    if (lines_[i].kept && !lines_[i].winner) p.strokePath(path(lines_[i]), QPen(lineColour(i), 1.8));
  for (const Line& l : lines_)
    if (l.winner) p.strokePath(path(l), QPen(TrialChartView::winnerColour(), l.kept ? 3.2 : 1.6));
  if (hovered_ >= 0)
    p.strokePath(path(lines_[static_cast<std::size_t>(hovered_)]), QPen(QColor(0x21, 0x21, 0x21), 2.6));
}

void ParallelCoordinates::paintAxes(QPainter& p) const {
  const QRectF r = plotRect();
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  QFont bold = font();
  bold.setBold(true);
  const double spacing = axes_.size() > 1 ? axisX(1) - axisX(0) : r.width();
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    const double x = axisX(static_cast<int>(a));
    p.setPen(QPen(kAxis, 1.4));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
    const auto brush = brushes_.constFind(axes_[a].name);
    if (brush != brushes_.constEnd()) {
      QColor fill = kBrush;
      fill.setAlpha(60);
      p.setPen(QPen(kBrush, 1.5));
      p.setBrush(fill);
      p.drawRect(QRectF(QPointF(x - 7, r.bottom() - brush->to * r.height()),
                        QPointF(x + 7, r.bottom() - brush->from * r.height())));
      p.setBrush(Qt::NoBrush);
    }
    p.setFont(small);
    p.setPen(QColor(0x42, 0x42, 0x42));
    for (const AxisTick& t : axes_[a].ticks) {
      const double y = r.bottom() - t.at * r.height();
      p.drawLine(QPointF(x - 3, y), QPointF(x, y));
      // On a light backing, so that the lines crossing there do not hide the value.
      const double w = p.fontMetrics().horizontalAdvance(t.label) + 4;
      p.fillRect(QRectF(x - 4 - w, y - 7, w, 14), QColor(255, 255, 255, 210));
      p.drawText(QRectF(x - 60, y - 8, 56, 16), Qt::AlignRight | Qt::AlignVCenter, t.label);
    }
    p.setFont(bold);
    p.setPen(QColor(0x21, 0x21, 0x21));
    // Centred over its axis, elided to the space between axes, and kept inside the widget.
    const QString name = p.fontMetrics().elidedText(axes_[a].name, Qt::ElideRight, static_cast<int>(spacing + 20));
    const double w = p.fontMetrics().horizontalAdvance(name) + 2;
    const double left = std::clamp(x - w / 2, 2.0, std::max(2.0, width() - w - 2));
    p.drawText(QRectF(left, r.top() - 30, w, 18), Qt::AlignHCenter | Qt::AlignBottom, name);
  }
  p.setFont(font());
}

void ParallelCoordinates::mousePressEvent(QMouseEvent* event) {
  pressAt_ = event->position().toPoint();
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  dragAxis_ = axisNear(event->position());
  if (dragAxis_ >= 0) dragFrom_ = heightAt(event->position());
  event->accept();
}

void ParallelCoordinates::mouseMoveEvent(QMouseEvent* event) {
  if (dragAxis_ >= 0 && (event->buttons() & Qt::LeftButton)) {
    // The brush follows the drag; the selection is told once the drag ends.
    if (std::abs(event->position().y() - pressAt_.y()) >= kMinBrush)
      brushes_.insert(
          axes_[static_cast<std::size_t>(dragAxis_)].name,
          Range{std::min(dragFrom_, heightAt(event->position())), std::max(dragFrom_, heightAt(event->position()))});
    update();
    return;
  }
  const int line = lineNear(event->position());
  if (line != hovered_) {
    hovered_ = line;
    update();
  }
  if (line >= 0) {
    const Trial& t = model_->trial(lines_[static_cast<std::size_t>(line)].row);
    QToolTip::showText(
        event->globalPosition().toPoint(),
        tr("#%1 of the best %2 (rank %3)\n%4").arg(t.id).arg(lines_.size()).arg(line + 1).arg(model_->describe(t)),
        this);
  } else {
    QToolTip::hideText();
  }
}

void ParallelCoordinates::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mouseReleaseEvent(event);
  const bool dragged = std::abs(event->position().y() - pressAt_.y()) >= kMinBrush;
  if (dragAxis_ >= 0) {
    const int axis = dragAxis_;
    dragAxis_ = -1;
    if (dragged)
      setBrush(axis, dragFrom_, heightAt(event->position()));
    else
      clearBrush(axis);
    return;
  }
  const int line = lineNear(event->position());
  if (!dragged && line >= 0) emit trialClicked(model_->trial(lines_[static_cast<std::size_t>(line)].row).id);
}

void ParallelCoordinates::leaveEvent(QEvent* event) {
  hovered_ = -1;
  update();
  QWidget::leaveEvent(event);
}

std::string ParallelCoordinates::csv(const std::string& run) const {
  std::vector<std::string> header{"run", "shape", "rank", "trial"};
  for (const QString& p : parameters_) header.push_back(sstr(p));
  header.insert(header.end(), {"median_ns", "winner", "kept_by_brush"});
  std::string out = csv::format_record(header);
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    const Trial& t = model_->trial(lines_[i].row);
    std::vector<std::string> row{run, t.problem_key, std::to_string(i + 1), std::to_string(t.id)};
    for (const QString& p : parameters_) {
      const std::string name = sstr(p);
      row.push_back(t.config.has(name) ? t.config.value(name).text() : std::string());
    }
    row.insert(row.end(), {sstr(QString::number(t.stats.median_ns, 'g', 10)), lines_[i].winner ? "true" : "false",
                           lines_[i].kept ? "true" : "false"});
    out += csv::format_record(row);
  }
  return out;
}

}  // namespace ktune::gui
