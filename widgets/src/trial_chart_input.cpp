// TrialChartView's mouse handling: hover tooltips, click-to-select, zoom and pan.
#include <QChart>
#include <QMouseEvent>
#include <QRubberBand>
#include <QToolTip>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
constexpr double kPickPixels = 7;
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
  zoomTo(
      QRectF(c.x() - (c.x() - plot.left()) * f, c.y() - (c.y() - plot.top()) * f, plot.width() * f, plot.height() * f));
  event->accept();
}

void TrialChartView::mousePressEvent(QMouseEvent* event) {
  pressAt_ = event->position().toPoint();
  if (event->button() == Qt::MiddleButton ||
      (event->button() == Qt::LeftButton && event->modifiers() & Qt::ShiftModifier)) {
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
    QToolTip::showText(event->globalPosition().toPoint(), hoverText(model_->trial(model_->rowForId(id))), this);
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

}  // namespace ktune::gui
