#pragma once
// ChartMetric: what the landscape's scatter charts plot on their y axis — the median latency,
// or a number a run recorded beside it (Trial::metrics: an imported Kernel Tuner cache's
// GFLOP/s, energy, power), chosen in the Landscape page's "y" combo box.
#include <QString>

#include "ktune/trial.h"
#include "ktune/widgets/chart_axes.h"

namespace ktune::gui {

class ChartMetric {
 public:
  ChartMetric() = default;                        // latency
  explicit ChartMetric(const QString& recorded);  // empty: latency

  bool isLatency() const { return name_.isEmpty(); }
  QString name() const { return name_; }  // the recorded metric's name; empty for latency
  QString label() const;                  // "median latency (µs)", "GFLOP/s"
  // The trial's value in chart units (the time unit for latency); false when it has none.
  bool valueOf(const Trial& trial, double* y) const;
  // Latency's unit (µs until a chart chooses one from its data) and a time in it.
  void setTimeUnit(const TimeUnit& unit) { unit_ = unit; }
  const TimeUnit& timeUnit() const { return unit_; }
  double fromNs(double ns) const { return ns / unit_.ns; }
  // Which way "best so far" runs: throughputs (".../s", "GFLOPS/W") up, times and energy down.
  bool higherIsBetter() const { return higherIsBetter_; }

  friend bool operator==(const ChartMetric& a, const ChartMetric& b) { return a.name_ == b.name_; }

 private:
  QString name_;
  std::string key_;
  bool higherIsBetter_ = false;
  TimeUnit unit_{QStringLiteral("µs"), 1e3};
};

}  // namespace ktune::gui
