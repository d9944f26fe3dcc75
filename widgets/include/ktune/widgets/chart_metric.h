#pragma once
// ChartMetric: what the landscape's scatter charts plot on their y axis — the median latency,
// its distance from its shape's best ("× best": vs_best of a trials.csv export, drawn on a log
// axis with a line at 1), or a number a run recorded beside it (Trial::metrics: an imported
// Kernel Tuner cache's GFLOP/s, energy, power), chosen in the Landscape page's "y" combo box.
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "ktune/trial.h"
#include "ktune/widgets/chart_axes.h"

namespace ktune::gui {

class ChartMetric {
 public:
  // The name that picks "× best" (the column's name in trials.csv exports; --y-metric vs_best).
  static QString vsBestName() { return QStringLiteral("vs_best"); }

  ChartMetric() = default;                    // latency
  explicit ChartMetric(const QString& name);  // empty: latency; vsBestName(): × best; else recorded

  bool isLatency() const { return name_.isEmpty(); }
  bool isVsBest() const { return vsBest_; }
  // Latency or × best: a trial's median, whose noise the bars show.
  bool isTime() const { return isLatency() || vsBest_; }
  QString name() const { return name_; }  // empty for latency
  QString label() const;                  // "median latency (µs)", "× best (…)", "GFLOP/s"
  QString noun() const;                   // "Latency", "Distance from best", "GFLOP/s": for titles
  // The trial's value in chart units (the time unit for latency); false when it has none.
  bool valueOf(const Trial& trial, double* y) const;
  // A time of `problemKey`'s in chart units: in the time unit, or over that shape's best. NaN
  // for × best of a shape without an ok trial.
  double fromNs(double ns, const std::string& problemKey) const;
  // Latency's unit (µs until a chart chooses one from its data) and a time in it.
  void setTimeUnit(const TimeUnit& unit) { unit_ = unit; }
  const TimeUnit& timeUnit() const { return unit_; }
  double fromNs(double ns) const { return ns / unit_.ns; }
  // Which way "best so far" runs: throughputs (".../s", "GFLOPS/W") up, times and energy down.
  bool higherIsBetter() const { return higherIsBetter_; }
  // A condition the device was in while a trial was timed (ktune/conditions.h: its SM clock,
  // power), not a figure of merit: it has no best, and a slow_abort's reading is no bound.
  bool isCondition() const { return condition_; }

  // × best divides by each shape's best ok median: learnt from trials[from...] on top of what is
  // known (from 0 after forgetBests()); true when a shape's best was set or lowered, which moves
  // every point of that shape.
  bool learnBests(const std::vector<Trial>& trials, std::size_t from);
  void forgetBests() { best_.clear(); }

  friend bool operator==(const ChartMetric& a, const ChartMetric& b) { return a.name_ == b.name_; }

 private:
  QString name_;
  std::string key_;
  bool vsBest_ = false;
  bool higherIsBetter_ = false;
  bool condition_ = false;
  TimeUnit unit_{QStringLiteral("µs"), 1e3};
  std::map<std::string, double> best_;  // problem key -> its best ok median (ns), for × best
};

}  // namespace ktune::gui
