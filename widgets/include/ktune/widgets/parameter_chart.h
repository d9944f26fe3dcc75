#pragma once
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

// Latency against one chosen parameter. Colour is the trial's status (as on the run-order chart),
// the marker's shape its problem shape; failed trials sit in the band at their value, so a region
// of the space that fails reads as such. The x axis follows the parameter's kind: categories for
// strings and booleans, log2 for powers of two, the values themselves for other integers.
class ParameterChart : public TrialChartView {
  Q_OBJECT
 public:
  explicit ParameterChart(TrialsModel* model, QWidget* parent = nullptr);
  void setParameter(const QString& name);
  QString parameter() const { return parameter_; }
  ParameterAxis::Kind axisKind() const { return axis_.kind(); }

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  QString title() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, std::int64_t measured, double* x, double* y, int* group) const override;
  void prepare(const std::string& shape) override;
  bool needsPrepare() const override { return stale_; }
  std::vector<AxisTick> xTicks(double lo, double hi) const override;
  QString xText(const Trial& trial, double x) const override;  // the parameter's value
  void xRange(double x0, double x1, double* lo, double* hi) const override;

 private:
  QString parameter_;
  std::string parameterStd_;
  ParameterAxis axis_;
  QStringList shapes_;                 // the shapes shown, each with its marker
  std::vector<TrialStatus> statuses_;  // those among the shown trials, for the key
  mutable bool stale_ = false;
};

}  // namespace ktune::gui
