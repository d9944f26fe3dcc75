// TrialChartView's markers: painted by one item of the chart's scene rather than by the groups'
// QScatterSeries. A scatter series keeps a QGraphicsItem per point and makes one for each point it
// gains: a view that draws thousands more markers than the last (switching a 100k-trial run to
// "× best" took 4,900 to 14,000) spent 250 ms making them, and every axis change moved each one.
// Here a marker is an entry of drawn_, painted as a sprite in one drawPixmapFragments call per
// group on screen and in PNGs, and as a vector shape in SVGs. Under a brush the markers it leaves
// out are painted first, grey and faint; the counts of each say what a chart shows.
#include <QChart>
#include <QGraphicsItem>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <cmath>

#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trial_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
// Qt Charts stacks its plot area (0), grid (2) and axes (3) under its series (4, the lines, the
// winners' stars and the selection ring): the markers go between.
constexpr double kMarkersZ = 3.5;

QPainterPath markerPath(QScatterSeries::MarkerShape shape, double size) {
  // As Qt Charts draws its scatter markers, centred on the point.
  const double r = size / 2;
  QPainterPath path;
  switch (shape) {
    case QScatterSeries::MarkerShapeRectangle:
      path.addRect(-r, -r, size, size);
      break;
    case QScatterSeries::MarkerShapeRotatedRectangle:
      path.addPolygon(QPolygonF({{-r, 0}, {0, r}, {r, 0}, {0, -r}}));
      break;
    case QScatterSeries::MarkerShapeTriangle:
      path.addPolygon(QPolygonF({{-r, r}, {r, r}, {0, -r}}));
      break;
    case QScatterSeries::MarkerShapePentagon: {
      QPolygonF corners;
      for (int i = 0; i < 5; ++i) {
        const double a = -M_PI / 2 + 2 * M_PI * i / 5;
        corners << QPointF(r * std::cos(a), r * std::sin(a));
      }
      path.addPolygon(corners);
      break;
    }
    default:
      path.addEllipse(QPointF(0, 0), r, r);
  }
  path.closeSubpath();
  return path;
}
}  // namespace

class TrialChartView::MarkerLayer : public QGraphicsItem {
 public:
  MarkerLayer(const TrialChartView* view, QGraphicsItem* parent) : QGraphicsItem(parent), view_(view) {
    setZValue(kMarkersZ);
    setAcceptedMouseButtons(Qt::NoButton);  // the view picks the trial under the mouse itself
  }
  void setArea(const QRectF& plot) {
    const QRectF area = plot.adjusted(-kMarkerPixels, -kMarkerPixels, kMarkerPixels, kMarkerPixels);
    if (area != area_) {
      prepareGeometryChange();
      area_ = area;
    }
    update();
  }
  QRectF boundingRect() const override { return area_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override { view_->paintMarkers(painter); }

 private:
  const TrialChartView* view_;
  QRectF area_;
};

void TrialChartView::createMarkerLayer() { markerLayer_ = new MarkerLayer(this, chart()); }

void TrialChartView::markerLayerChanged(const QRectF& plot) { markerLayer_->setArea(plot); }

QColor TrialChartView::dimmedColour(const QColor& c) {
  // Mostly grey and faint: the status still tells, the brushed trials stand out.
  const auto mix = [](int v) { return static_cast<int>(0.35 * v + 0.65 * 0xbd); };
  return QColor(mix(c.red()), mix(c.green()), mix(c.blue()), 70);
}

TrialChartView::BrushCounts TrialChartView::brushCounts() const {
  BrushCounts c;
  const TrialBrush* brush = model_->brush();
  for (const Point& p : points_)
    ++(brush->active() && !brush->contains(model_->trial(p.row).id) ? c.dimmed : c.highlighted);
  for (const Marker& m : drawn_) ++(m.dimmed ? c.drawnDimmed : c.drawnHighlighted);
  return c;
}

std::vector<TrialChartView::DrawnGroup> TrialChartView::drawnGroups() const {
  std::vector<DrawnGroup> out;
  for (std::size_t g = 0; g < groups_.size() && g < drawnPerGroup_.size(); ++g)
    if (drawnPerGroup_[g] > 0) out.push_back({groups_[g].name, groups_[g].color, groups_[g].marker, drawnPerGroup_[g]});
  return out;
}

void TrialChartView::paintMarkers(QPainter* painter) const {
  if (drawn_.empty()) return;
  const QRectF plot = chart()->plotArea();
  painter->save();
  painter->setClipRect(plot);
  painter->setPen(Qt::NoPen);
  painter->setRenderHint(QPainter::Antialiasing);
  // Sprites where the picture is pixels; shapes where it is vectors (SVG), which a sprite would
  // turn into thousands of embedded images.
  const QPaintEngine* engine = painter->paintEngine();
  const bool raster = engine && engine->type() == QPaintEngine::Raster;
  const qreal ratio = painter->device()->devicePixelRatioF();
  const std::size_t groupCount = groups_.size();
  // Dimmed markers under the highlighted ones; within each, the groups in order, as series stack.
  std::vector<std::vector<QPointF>> byLayer(groupCount * 2);
  for (const Marker& m : drawn_)
    if (static_cast<std::size_t>(m.group) < groupCount)
      byLayer[static_cast<std::size_t>(m.group) + (m.dimmed ? 0 : groupCount)].push_back(toPixels(m.x, m.y, plot));
  std::vector<QPainter::PixmapFragment> fragments;
  for (std::size_t layer = 0; layer < byLayer.size(); ++layer) {
    const std::vector<QPointF>& at = byLayer[layer];
    if (at.empty()) continue;
    const bool dimmed = layer < groupCount;
    const Group& g = groups_[layer % groupCount];
    QColor colour = g.color;
    colour.setAlpha(170);
    if (dimmed) colour = dimmedColour(g.color);
    if (!raster) {
      painter->setBrush(colour);
      const QPainterPath shape = markerPath(g.marker, kMarkerPixels);
      for (const QPointF& p : at) painter->drawPath(shape.translated(p));
      continue;
    }
    const QString key = QStringLiteral("%1/%2/%3").arg(layer % groupCount).arg(dimmed).arg(ratio);
    QPixmap& sprite = sprites_[key];
    const int side = kMarkerPixels + 2;
    if (sprite.isNull()) {
      sprite = QPixmap(QSize(side, side) * ratio);
      sprite.setDevicePixelRatio(ratio);
      sprite.fill(Qt::transparent);
      QPainter sp(&sprite);
      sp.setRenderHint(QPainter::Antialiasing);
      sp.setPen(Qt::NoPen);
      sp.setBrush(colour);
      sp.drawPath(markerPath(g.marker, kMarkerPixels).translated(side / 2.0, side / 2.0));
    }
    fragments.clear();
    fragments.reserve(at.size());
    // A fragment's size is its source rectangle's (device pixels) times its scale.
    const QRectF source(0, 0, side * ratio, side * ratio);
    for (const QPointF& p : at) fragments.push_back(QPainter::PixmapFragment::create(p, source, 1 / ratio, 1 / ratio));
    painter->drawPixmapFragments(fragments.data(), static_cast<int>(fragments.size()), sprite);
  }
  painter->restore();
}

}  // namespace ktune::gui
