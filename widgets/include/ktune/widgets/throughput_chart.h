#pragma once
#include "ktune/ceilings.h"
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

// Achieved TFLOP/s (or GB/s) per measured trial against the device's peak for the trial's
// precision (ktune/ceilings.h: int8 under the int8 peak) and, for memory-bound shapes, their
// roofline bound min(peak, bandwidth x intensity); where trials recorded the SM clock they ran
// at, also the peak at that clock (a GPU at its power cap runs below the clock its peak assumes);
// what it cannot draw, it says on the plot.
class ThroughputChart : public TrialChartView {
  Q_OBJECT
 public:
  enum class Metric { Tflops, Gbps };
  explicit ThroughputChart(TrialsModel* model, QWidget* parent = nullptr);
  void setDevice(const DeviceInfo& device);
  // A device with only these properties (peak_gflops_f32, peak_gflops_f16, mem_bandwidth_gbs).
  void setPeaks(double peakGflopsF32, double peakGflopsF16, double bandwidthGbs);
  // What the chart cannot show, and why (DeviceCeilings::gaps); written on the plot.
  QString gaps() const { return gaps_; }
  void setMetric(Metric metric);
  Metric metric() const { return metric_; }
  // The drawn lines (chart values): the device's ceiling, the roofline where it is lower, and
  // the peak at each trial's SM clock (TFLOP/s, trials that recorded it).
  QList<QPointF> peakPoints() const;
  QList<QPointF> roofPoints() const;
  QList<QPointF> clockPeakPoints() const;

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  QString title() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, std::int64_t measured, double* x, double* y, int* group) const override;
  void rebuildExtras(const std::vector<Point>& points) override;
  bool drawsSpread() const override { return false; }
  double winnerValue(const Winner& winner, double searchY) const override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  double peakFor(const Trial& trial) const;   // TFLOP/s or GB/s ceiling of the compute alone
  double boundFor(const Trial& trial) const;  // the roofline: min(peak, intensity x bandwidth)
  Metric metric_ = Metric::Tflops;
  DeviceCeilings ceilings_;
  double bandwidth_ = 0;
  QString gaps_;
  QXYSeries* peakLine_;
  QXYSeries* roofLine_;
  QXYSeries* clockPeakLine_;
};

}  // namespace ktune::gui
