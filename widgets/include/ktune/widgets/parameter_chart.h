#pragma once
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

// Latency against one chosen parameter, one series per shape.
class ParameterChart : public TrialChartView {
  Q_OBJECT
 public:
  explicit ParameterChart(TrialsModel* model, QWidget* parent = nullptr);
  void setParameter(const QString& name);
  QString parameter() const { return parameter_; }

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  QString title() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, std::int64_t measured, double* x, double* y, int* group) const override;

 private:
  QString parameter_;
  std::string parameterStd_;
};

}  // namespace ktune::gui
