#pragma once
#include "ktune/widgets/trial_chart.h"

namespace ktune::gui {

// Latency of every measured trial in run order (the n-th measured trial at x = n; pruned and
// failed configs have no latency), coloured by status, with the search's best-so-far line per
// shape.
class LatencyOrderChart : public TrialChartView {
  Q_OBJECT
 public:
  explicit LatencyOrderChart(TrialsModel* model, QWidget* parent = nullptr);

 protected:
  QString xTitle() const override;
  QString yTitle() const override;
  QString title() const override;
  std::vector<Group> groups() const override;
  bool pointFor(const Trial& trial, std::int64_t measured, double* x, double* y, int* group) const override;
  void rebuildExtras(const std::vector<Point>& points) override;

 private:
  QList<QXYSeries*> bestLines_;
};

}  // namespace ktune::gui
