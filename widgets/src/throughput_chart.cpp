#include "ktune/widgets/throughput_chart.h"

#include <cmath>

#include <QLineSeries>
#include <QPainter>
#include <algorithm>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

ThroughputChart::ThroughputChart(TrialsModel* model, QWidget* parent) : TrialChartView(model, parent) {
  auto* roof = new QLineSeries(this);
  roof->setPen(QPen(QColor(0x6a, 0x1b, 0x9a), 1.8, Qt::DashLine));
  auto* peak = new QLineSeries(this);
  peak->setPen(QPen(QColor(0xc6, 0x28, 0x28), 2));
  auto* clockPeak = new QLineSeries(this);
  clockPeak->setPen(QPen(QColor(0xc6, 0x28, 0x28), 1.4, Qt::DotLine));
  roofLine_ = roof;
  peakLine_ = peak;
  clockPeakLine_ = clockPeak;
  // The peak goes on top: where a shape is compute-bound its roofline is the peak itself.
  addExtraSeries(roofLine_);
  addExtraSeries(clockPeakLine_);
  addExtraSeries(peakLine_);
}

void ThroughputChart::setDevice(const DeviceInfo& device) {
  ceilings_ = DeviceCeilings(device);
  bandwidth_ = ceilings_.memory().value;
  markDirty();
}

void ThroughputChart::setPeaks(double peakGflopsF32, double peakGflopsF16, double bandwidthGbs) {
  DeviceInfo device;
  device.properties = {
      {"peak_gflops_f32", peakGflopsF32}, {"peak_gflops_f16", peakGflopsF16}, {"mem_bandwidth_gbs", bandwidthGbs}};
  setDevice(device);
}

void ThroughputChart::setMetric(Metric metric) {
  if (metric == metric_) return;
  metric_ = metric;
  resetZoom();
  markDirty();
}

QString ThroughputChart::title() const { return tr("Achieved throughput against the device's peak"); }
QString ThroughputChart::xTitle() const { return tr("measured trial #"); }
QString ThroughputChart::yTitle() const { return metric_ == Metric::Tflops ? tr("TFLOP/s") : tr("GB/s"); }

std::vector<TrialChartView::Group> ThroughputChart::groups() const {
  return {Group{tr("ok"), statusColor(TrialStatus::Ok)}};
}

bool ThroughputChart::pointFor(const Trial& t, std::int64_t measured, double* x, double* y, int* group) const {
  if (t.status != TrialStatus::Ok) return false;
  *x = static_cast<double>(measured);  // the latency chart's x, so a trial sits at one x in both
  *y = metric_ == Metric::Tflops ? t.tflops : t.gbps;
  // An imported Kernel Tuner cache knows no FLOP count, but may have recorded its own GFLOP/s.
  if (*y <= 0 && metric_ == Metric::Tflops) {
    const auto it = t.metrics.find("GFLOP/s");
    if (it != t.metrics.end()) *y = it->second / 1e3;
  }
  *group = 0;
  return *y > 0;
}

double ThroughputChart::winnerValue(const Winner& winner, double searchY) const {
  // Throughput is work over time: the number it was chosen by scales its search's.
  const double search = winner.choice.search.median_ns, chosen = winner.stats.median_ns;
  return search > 0 && chosen > 0 ? searchY * search / chosen : searchY;
}

double ThroughputChart::peakFor(const Trial& t) const {
  return metric_ == Metric::Gbps ? bandwidth_ : ceilings_.compute(t.problem_key).value / 1e3;
}

double ThroughputChart::boundFor(const Trial& t) const {
  const double peak = peakFor(t);
  if (metric_ == Metric::Gbps || bandwidth_ <= 0 || t.gbps <= 0) return peak;
  const double intensity = t.tflops * 1e12 / (t.gbps * 1e9);  // FLOP per byte of minimum traffic
  return std::min(peak, intensity * bandwidth_ / 1e3);
}

QList<QPointF> ThroughputChart::peakPoints() const { return peakLine_->points(); }
QList<QPointF> ThroughputChart::roofPoints() const { return roofLine_->points(); }
QList<QPointF> ThroughputChart::clockPeakPoints() const { return clockPeakLine_->points(); }

void ThroughputChart::rebuildExtras(const std::vector<Point>& points) {
  // Step lines over the trials' x: the ceiling of each trial's dtype, and its shape's bound.
  QList<QPointF> peak, roof, clockPeak;
  double lastPeak = -1, lastRoof = -1, lastClockPeak = -1, lastX = 0, highest = 0, top = 0;
  bool memoryBound = false;
  // A trial whose ceiling is not known takes the line to 0 rather than under another's ceiling.
  // The bound of a trial comes from its measured FLOP/s over its GB/s, the same intensity for
  // every trial of a shape up to rounding: a change below 1e-9 is no step (8,922 line points of
  // 100,000 trials were steps of rounding, redrawn every refresh).
  const auto step = [](QList<QPointF>& line, double x, double value, double& last) {
    if (value < 0 || std::abs(value - last) <= 1e-9 * std::abs(last)) return;
    if (!line.isEmpty()) line.append(QPointF(x, last));
    line.append(QPointF(x, value));
    last = value;
  };
  for (const Point& p : points) {
    const Trial& t = model()->trial(p.row);
    const double pk = peakFor(t), rf = boundFor(t);
    step(peak, p.x, pk, lastPeak);
    step(roof, p.x, rf, lastRoof);
    // Only where the trial recorded its clock: the line is absent, not 0, elsewhere.
    if (metric_ == Metric::Tflops)
      if (const double at = peak_at_clock(pk, ceilings_.device(), t.metrics); at > 0)
        step(clockPeak, p.x, at, lastClockPeak);
    memoryBound = memoryBound || rf < pk;
    highest = std::max(highest, pk);
    top = std::max(top, p.y);
    lastX = p.x;
  }
  if (!peak.isEmpty()) peak.append(QPointF(lastX, lastPeak));
  if (!roof.isEmpty()) roof.append(QPointF(lastX, lastRoof));
  if (!clockPeak.isEmpty()) clockPeak.append(QPointF(lastX, lastClockPeak));
  // Compute-bound everywhere: the bound is the peak line, drawn once. In GB/s the bandwidth
  // line is the whole roof.
  if (!memoryBound || metric_ == Metric::Gbps) roof.clear();
  if (highest <= 0) peak.clear();  // no ceiling known at all: no line (gaps_ says why)
  peakLine_->replace(peak);
  peakLine_->setName(metric_ == Metric::Tflops ? tr("device peak %1 TFLOP/s").arg(highest, 0, 'g', 3)
                                               : tr("memory bandwidth %1 GB/s").arg(highest, 0, 'g', 3));
  roofLine_->setName(tr("roofline: min(peak, bandwidth × intensity)"));
  roofLine_->replace(roof);
  clockPeakLine_->setName(tr("peak at the trial's SM clock"));
  clockPeakLine_->replace(clockPeak);
  // Keep the peak in view: the point of this chart is the distance to it.
  if (highest > 0) ensureYIncludes(highest * 1.05);
  gaps_ = qstr(ceilings_.gaps(model()->trials(), sstr(shapeFilter()), metric_ == Metric::Gbps));
  if (!gaps_.isEmpty()) ensureYIncludes(top * 1.25);  // room above the points for the note
}

void ThroughputChart::drawForeground(QPainter* painter, const QRectF& rect) {
  TrialChartView::drawForeground(painter, rect);
  if (gaps_.isEmpty()) return;
  // On a box of its own at the top of the plot: legible over the points it may cover.
  const QRectF plot = chart()->mapRectToScene(chart()->plotArea()).adjusted(12, 6, -12, -6);
  const int flags = Qt::AlignTop | Qt::AlignHCenter | Qt::TextWordWrap;
  const QRectF box = QRectF(painter->fontMetrics().boundingRect(plot.toRect(), flags, gaps_)).adjusted(-6, -3, 6, 3);
  painter->save();
  painter->setPen(Qt::NoPen);
  painter->setBrush(QColor(255, 255, 255, 230));
  painter->drawRoundedRect(box, 3, 3);
  painter->setPen(QColor(0x5f, 0x5f, 0x5f));
  painter->drawText(box, Qt::AlignCenter | Qt::TextWordWrap, gaps_);
  painter->restore();
}

}  // namespace ktune::gui
